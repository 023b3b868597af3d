"""Progress summaries in chat bridges: the channel placeholder.

A placeholder message shows the turn's latest summary (``📝 <summary>``), is edited in place as
revisions arrive, and is deleted when the turn ends; the final reply is then posted as a new
message, so the platform notifies the person. Delivery is driven on a fake clock with a recording
sink, the runner with a scripted driver and a :class:`~acp_adapter.summary.ManualClock`, then the
console platform and the strict fake Telegram server end to end with this project's agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import start_tool_call, text_block, update_agent_message, update_tool_call
from acp.schema import PromptResponse

from acp_adapter.cli import bridge as bridge_command
from acp_adapter.cli import main
from acp_adapter.config import Settings
from acp_adapter.frontends.bridges.config import (
    BridgeConfigError,
    BridgeStore,
    ProgressConfig,
    merge_update,
    new_instance,
    resolve_summary_mode,
)
from acp_adapter.frontends.bridges.delivery import PLACEHOLDER_DELAY, RouteDelivery
from acp_adapter.frontends.bridges.events import AnswerText, ErrorNotice, SummaryUpdate, TurnEnd, TurnStart
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.platforms.console import run_console
from acp_adapter.frontends.bridges.queue import RouteQueue
from acp_adapter.frontends.bridges.runner import BridgeRunner
from acp_adapter.summary import ManualClock, SummaryFactory, SummaryRequest
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.bridge_fakes import FakeClock, RecordingSink
from tests.helpers.console_bridge import ScriptedInput, WatchedOutput
from tests.helpers.shared_servers import use_in_process_agents

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


@dataclass
class ChatSink(RecordingSink):
    """A recording sink whose message ids never repeat (a deleted message's id is not reused)."""

    next_id: int = 0

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
        assert self.measure(text) <= self.limit, "delivery posted past the platform limit"
        self.next_id += 1
        self.messages[self.next_id] = text
        self.ops.append(("post", self.next_id, text, self._t()))
        return self.next_id


def make(delay: float = PLACEHOLDER_DELAY, **kw: Any) -> tuple[FakeClock, ChatSink, RouteDelivery]:
    clock = FakeClock()
    sink = ChatSink(clock=clock, **kw)
    config = ProgressConfig(tool_progress="all", typing=True, reactions=True)
    return clock, sink, RouteDelivery(sink, config, clock, placeholder_delay=delay)


async def due(clock: FakeClock, d: RouteDelivery) -> None:
    """What the route worker does between events: run the delivery timers that fell due."""
    deadline = d.next_deadline()
    if deadline is not None and clock.now >= deadline:
        await d.tick()


# ---------------------------------------------------------------- delivery: the placeholder


async def test_placeholder_posted_edited_deleted_then_the_reply_is_a_new_message() -> None:
    clock, sink, d = make()
    await d.handle(TurnStart(7))
    await d.handle(SummaryUpdate("Reading the code.", 1))
    assert sink.ops == []  # a turn answered within the delay never shows a status message
    assert d.next_deadline() == pytest.approx(clock.now + PLACEHOLDER_DELAY)
    await d.handle(SummaryUpdate("Searching for TODO.", 2))  # still waiting: only the latest is kept
    clock.advance(PLACEHOLDER_DELAY)
    await due(clock, d)
    placeholder = d.placeholder
    assert sink.ops == [("post", placeholder, "📝 Searching for TODO.", clock.now)]
    clock.advance(2)
    await d.handle(SummaryUpdate("Fixing the assertion.", 3))
    assert sink.edits() == [("edit", placeholder, "📝 Fixing the assertion.", clock.now)]
    await d.handle(AnswerText(0, "Done: the test passes."))
    await d.handle(TurnEnd("end_turn"))
    kinds = [op[:2] for op in sink.ops]
    assert kinds[-2:] == [("delete", placeholder), ("post", placeholder + 1)]  # delete, then a new post
    assert sink.shown() == ["Done: the test passes."]
    assert d.placeholder is None and d.stats.deletes == 1


async def test_edits_respect_the_window_and_only_the_latest_revision_is_shown() -> None:
    clock, sink, d = make(delay=0)
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("One.", 1))  # delay 0: posted at the first summary
    await d.handle(SummaryUpdate("Two.", 2))  # never edited yet: edits at once
    for i, text in enumerate(("Three.", "Four.", "Five."), start=3):
        clock.advance(0.2)
        await d.handle(SummaryUpdate(text, i))
    await d.handle(SummaryUpdate("Stale.", 4))  # older than what is shown: ignored
    assert [e[2] for e in sink.edits()] == ["📝 Two."]  # inside the 1.5 s window: waiting
    clock.advance(1.0)
    await due(clock, d)
    assert [e[2] for e in sink.edits()] == ["📝 Two.", "📝 Five."]  # one trailing edit, the latest text
    await d.handle(SummaryUpdate("Five.", 6))  # same text again: no edit ("not modified")
    clock.advance(5)
    await due(clock, d)
    assert len(sink.edits()) == 2


async def test_progress_lines_and_the_placeholder_share_one_edit_budget() -> None:
    from acp_adapter.frontends.bridges.events import ProgressEvent, ProgressPayload

    def line(call: str, phase: str) -> ProgressEvent:
        return ProgressEvent(ProgressPayload(call, "search", phase, "Searching for", "x", "🔎", 1))  # type: ignore[arg-type]

    clock, sink, d = make(delay=0)
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("Starting.", 1))
    await d.handle(line("a", "started"))
    await d.handle(line("a", "completed"))  # an edit: the budget for this window is spent
    await d.handle(SummaryUpdate("Searched once.", 2))
    assert len(sink.edits()) == 1
    clock.advance(1.5)
    await due(clock, d)
    assert [e[2] for e in sink.edits()] == ["✅ Searching for x", "📝 Searched once."]


async def test_a_summary_after_the_turn_ended_is_never_shown() -> None:
    clock, sink, d = make(delay=0)
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("Working.", 1))
    await d.handle(TurnEnd("end_turn"))
    await d.handle(SummaryUpdate("Late.", 2))
    clock.advance(10)
    await due(clock, d)
    assert [op[0] for op in sink.ops] == ["post", "delete", "post"]
    assert "📝 Late." not in json.dumps(sink.ops, ensure_ascii=False)
    assert sink.shown() == ["(no answer: end_turn)"]
    # and a pending (not yet posted) placeholder is dropped, not posted late
    clock2, sink2, d2 = make(delay=3)
    await d2.handle(TurnStart(None))
    await d2.handle(SummaryUpdate("Working.", 1))
    await d2.handle(AnswerText(0, "Quick answer."))
    await d2.handle(TurnEnd("end_turn"))
    clock2.advance(10)
    await due(clock2, d2)
    assert sink2.posts() == ["Quick answer."] and d2.next_deadline() is None


async def test_an_error_deletes_the_placeholder_before_the_notice() -> None:
    _clock, sink, d = make(delay=0)
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("Working.", 1))
    await d.handle(ErrorNotice("the agent crashed"))
    await d.handle(TurnEnd("error"))
    assert [op[0] for op in sink.ops] == ["post", "delete", "post"]
    assert sink.shown() == ["❌ the agent crashed"]


async def test_the_placeholder_fits_the_platform_limit_in_its_units() -> None:
    _clock, sink, d = make(delay=0, limit=40)  # the recording sink counts UTF-16 units, as Telegram
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("😀" * 100, 1))
    (post,) = sink.posts()
    assert post.startswith("📝 😀") and post.endswith("…")
    assert sink.measure(post) <= 40
    await d.handle(SummaryUpdate("line one\nline two", 2))
    assert sink.edits()[-1][2] == "📝 line one line two"  # one line


async def test_close_mid_turn_removes_the_placeholder() -> None:
    _clock, sink, d = make(delay=0)
    await d.handle(TurnStart(None))
    await d.handle(SummaryUpdate("Working.", 1))
    await d.close()
    assert [op[0] for op in sink.ops] == ["post", "delete"]


# ---------------------------------------------------------------- the route queue


def drain(q: RouteQueue) -> list[object]:
    out: list[object] = []
    while (item := q.get_nowait()) is not None:
        out.append(item)
    return out


def test_queued_summaries_coalesce_to_the_latest_and_never_across_turns() -> None:
    q = RouteQueue(soft_bound=100)
    q.put(TurnStart(1))
    q.put(SummaryUpdate("a", 1))
    q.put(AnswerText(0, "He"))
    q.put(SummaryUpdate("b", 2))
    q.put(SummaryUpdate("c", 3))
    q.put(AnswerText(0, "Hello"))
    q.put(TurnEnd("end_turn"))
    q.put(TurnStart(2))
    q.put(SummaryUpdate("next turn", 1))  # the old turn's cells are behind a boundary
    q.put(AnswerText(0, "Second"))
    assert drain(q) == [
        TurnStart(1),
        SummaryUpdate("c", 3),
        AnswerText(0, "Hello"),
        TurnEnd("end_turn"),
        TurnStart(2),
        SummaryUpdate("next turn", 1),
        AnswerText(0, "Second"),
    ]
    assert q.metrics.coalesced == 3


def test_a_summary_is_dropped_at_the_soft_bound_and_counted() -> None:
    q = RouteQueue(soft_bound=2)
    q.put(TurnStart(1))
    q.put(AnswerText(0, "x"))
    assert q.put(SummaryUpdate("a", 1)) is False
    assert q.metrics.delivery_dropped_by_reason == {"queue_full_summary": 1}
    assert q.put(TurnEnd("end_turn")) is True  # the end is never dropped


# ---------------------------------------------------------------- the runner, scripted agent


class ScriptedTurn:
    """A :class:`~acp_adapter.client.driver.Turn` stand-in the test feeds update by update."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.response: PromptResponse | None = None
        self.updates: asyncio.Queue[Any] = asyncio.Queue()

    def __aiter__(self) -> ScriptedTurn:
        return self

    async def __anext__(self) -> Any:
        update = await self.updates.get()
        if isinstance(update, PromptResponse):
            self.response = update
            raise StopAsyncIteration
        return update


@dataclass
class ScriptedDriver:
    turns: list[ScriptedTurn] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    exit_code: int | None = None  # alive, as the supervisor checks

    async def new_session(self, cwd: Any = None) -> str:
        return "s1"

    def prompt(self, session_id: str, text: str) -> ScriptedTurn:
        self.prompts.append(text)
        turn = ScriptedTurn(session_id)
        self.turns.append(turn)
        return turn

    async def close(self, grace: float = 2.0) -> None:
        return None


class Writer:
    """A summary generator answering from a list; with ``gate`` it waits for the test."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[SummaryRequest] = []
        self.gate: asyncio.Event | None = None

    async def generate(self, request: SummaryRequest) -> str:
        self.calls.append(request)
        if self.gate is not None:
            await self.gate.wait()
        return self.answers[min(len(self.calls), len(self.answers)) - 1]


@contextlib.asynccontextmanager
async def scripted_runner(
    writer: Writer | None, **kw: Any
) -> AsyncIterator[tuple[BridgeRunner, ScriptedDriver, ChatSink, ManualClock]]:
    clock = ManualClock()
    factory = SummaryFactory(writer, interval=10) if writer is not None else None
    instance = new_instance("s", "console", cwd=str(ROOT), progress={"tool_progress": "all"})
    runner = BridgeRunner(
        instance,
        BridgeOptions(window=0.01, summary=factory, placeholder_delay=0, summary_clock=clock, **kw),
    )
    driver = ScriptedDriver()
    runner.agent.adopt(driver)  # type: ignore[arg-type]
    sink = ChatSink()
    try:
        yield runner, driver, sink, clock
    finally:
        await runner.close()


async def until(predicate: Any, what: str, within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


def think(card: str = "think-1") -> Any:
    return start_tool_call(card, "Thinking...", kind="think", status="in_progress")


async def test_runner_places_edits_and_removes_the_placeholder_around_the_reply() -> None:
    writer = Writer("Thinking about the bug.", "Searching for TODO.", "Writing the answer.")
    async with scripted_runner(writer) as (runner, driver, sink, clock):
        task = asyncio.create_task(runner.handle_message("c", "fix the bug", sink, None))
        await until(lambda: driver.turns, "the prompt")
        turn = driver.turns[0]
        await turn.updates.put(think())
        await until(lambda: any(t.startswith("📝 ") for t in sink.posts()), "the placeholder")
        await turn.updates.put(update_tool_call("think-1", status="completed"))
        await turn.updates.put(
            start_tool_call("c1", "Searching for TODO", kind="search", status="in_progress")
        )
        await clock.advance(10)
        await until(lambda: any(e[2] == "📝 Searching for TODO." for e in sink.edits()), "an edit")
        await turn.updates.put(update_agent_message(text_block("All fixed.")))
        await turn.updates.put(PromptResponse(stop_reason="end_turn"))
        await task
        await until(lambda: "All fixed." in sink.shown(), "the reply")
    assert driver.prompts == ["fix the bug"]  # the transcript boundary: summaries never reach the agent
    (placeholder,) = [op[1] for op in sink.ops if op[0] == "post" and op[2].startswith("📝 ")]
    assert sink.ops[-1][:3] == ("post", sink.next_id, "All fixed.")  # the reply: a new message, last
    assert sink.ops[-2] == ("delete", placeholder)  # right after the placeholder went
    assert not any(t.startswith("📝") for t in sink.shown())
    assert runner.agent_env["ACP_PROGRESS_SUMMARY"] == "off"  # the agent does not summarise twice
    assert writer.calls[0].snapshot.user_text == "fix the bug"


async def test_a_generation_still_running_when_the_turn_ends_is_never_shown() -> None:
    writer = Writer("Too late.")
    writer.gate = asyncio.Event()
    async with scripted_runner(writer) as (runner, driver, sink, clock):
        task = asyncio.create_task(runner.handle_message("c", "hello", sink, None))
        await until(lambda: driver.turns, "the prompt")
        turn = driver.turns[0]
        await turn.updates.put(think())
        await until(lambda: writer.calls, "a generation")
        await turn.updates.put(update_agent_message(text_block("Hi.")))
        await turn.updates.put(PromptResponse(stop_reason="end_turn"))
        await task
        writer.gate.set()  # the generation settles after the turn ended: its result is dropped
        await clock.advance(30)
        await until(lambda: "Hi." in sink.shown(), "the reply")
        route = runner.route("c")
        assert route is not None and len(route.queue) == 0
    assert sink.posts() == ["Hi."] and "delete" not in sink.kinds()


async def test_summaries_off_means_no_placeholder_and_a_broken_factory_costs_only_the_summary() -> None:
    async with scripted_runner(None) as (runner, driver, sink, _clock):
        task = asyncio.create_task(runner.handle_message("c", "hello", sink, None))
        await until(lambda: driver.turns, "the prompt")
        await driver.turns[0].updates.put(think())
        await driver.turns[0].updates.put(update_agent_message(text_block("Hi.")))
        await driver.turns[0].updates.put(PromptResponse(stop_reason="end_turn"))
        await task
        await until(lambda: "Hi." in sink.shown(), "the reply")
    assert sink.posts() == ["Hi."]

    class Broken(SummaryFactory):
        def create(self, **kwargs: Any) -> Any:
            raise RuntimeError(f"no summaries today {SECRET}")

    async with scripted_runner(Writer("x")) as (runner, driver, sink, _clock):
        runner.summary = Broken(Writer("x"))
        task = asyncio.create_task(runner.handle_message("c", "hello", sink, None))
        await until(lambda: driver.turns, "the prompt")
        await driver.turns[0].updates.put(update_agent_message(text_block("Still answered.")))
        await driver.turns[0].updates.put(PromptResponse(stop_reason="end_turn"))
        await task
        await until(lambda: "Still answered." in sink.shown(), "the reply")


# ---------------------------------------------------------------- end to end: console and Telegram


def writer_factory(*answers: str, max_length: int = 180) -> SummaryFactory:
    """Event-driven (interval 0): every tool or reasoning event asks for a new sentence."""
    return SummaryFactory(Writer(*answers), interval=0, max_length=max_length)


async def test_console_end_to_end_with_this_projects_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    use_in_process_agents(monkeypatch)  # its process proves nothing about the placeholder
    instance = new_instance("c", "console", cwd=str(ROOT), progress={"tool_progress": "all"})
    runner = BridgeRunner(
        instance,
        BridgeOptions(
            agent_env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.4"),
            window=0.05,
            summary=SummaryFactory.from_settings(Settings(summary="embedded", summary_interval=0)),
            placeholder_delay=0,
        ),
    )
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("search for TODO")
    inp.end()
    await run_console(instance, inp, out, runner=runner)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    first = next(i for i, line in enumerate(lines) if "] 📝 " in line)
    placeholder = lines[first].split("]")[0].lstrip("[#")
    assert lines[first] == f"[#{placeholder}] 📝 Thinking about the request to search for TODO."
    edits = [line for line in lines if line.startswith(f"[#{placeholder} edited] 📝 ")]
    assert edits, "\n".join(lines)
    deleted = lines.index(f"[#{placeholder} deleted]")
    answer = next(i for i, line in enumerate(lines) if "I searched the workspace" in line)
    assert first < deleted < answer
    assert int(lines[answer].split("]")[0].lstrip("[#")) > int(placeholder)  # a new message
    assert not any("📝" in line for line in lines[deleted:])  # nothing after the end
    assert runner.metrics().delivered == runner.metrics().enqueued


async def test_telegram_end_to_end_placeholder_limit_and_order(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("telegram")
    use_in_process_agents(monkeypatch)  # its process proves nothing about the placeholder
    from acp_adapter.frontends.bridges.platforms.telegram import run_telegram
    from tests.helpers.fake_telegram import FakeTelegram
    from tests.helpers.fake_telegram import until as wait_until
    from tests.helpers.telegram_chat import CHAT, TOKEN

    fake = FakeTelegram(TOKEN).start()
    try:
        instance = new_instance("tg", "telegram", chat_ids=[CHAT], cwd=str(ROOT))
        long = "😀" * 3000  # 6000 UTF-16 units: must be cut to Telegram's 4096
        runner = BridgeRunner(
            instance,
            BridgeOptions(
                agent_env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.5"),
                window=0.2,
                summary=writer_factory("Looking at the request.", long, max_length=5000),
                placeholder_delay=0,
            ),
        )
        stop = asyncio.Event()
        task = asyncio.create_task(
            run_telegram(
                instance, runner=runner, token=TOKEN, api_url=fake.api_url, stop=stop, poll_timeout=1
            )
        )
        await wait_until(lambda: bool(fake.calls_of("getUpdates")), what="polling")
        fake.user_says(CHAT, "search for TODO")
        await wait_until(
            lambda: any("I searched the workspace" in t for t in fake.chat_view(CHAT)), what="answer"
        )
        await wait_until(lambda: bool(fake.calls_of("deleteMessage")), what="placeholder deleted")
        stop.set()
        await asyncio.wait_for(task, 30)
    finally:
        fake.stop()
    sent = fake.calls_of("sendMessage")
    (placeholder_post,) = [c for c in sent if c.params["text"].startswith("📝 ")]
    assert placeholder_post.params["text"] == "📝 Looking at the request."
    (delete,) = fake.calls_of("deleteMessage")
    placeholder_id = int(delete.params["message_id"])
    edits = [c for c in fake.calls_of("editMessageText") if int(c.params["message_id"]) == placeholder_id]
    assert edits and all(c.params["text"].startswith("📝 ") for c in edits)
    cut = [c.params["text"] for c in edits if "😀" in c.params["text"]]
    assert cut, [c.params["text"][:40] for c in edits]
    for text in cut:  # the server enforces 4096 UTF-16 units; every edit was accepted
        assert len(text.encode("utf-16-le")) // 2 <= 4096 and text.endswith("…")
    assert not [c for c in fake.calls if c.method == "editMessageText" and c.status != 200]
    answer = next(c for c in sent if "I searched the workspace" in c.params["text"])
    assert fake.calls.index(delete) < fake.calls.index(answer)  # deleted first, reply posted new
    assert not any(t.startswith("📝") for t in fake.chat_view(CHAT))
    assert "✅ Searching for TODO" in fake.chat_view(CHAT)  # tool progress still shows


# ---------------------------------------------------------------- instance config and commands


def test_instance_summary_is_closed_optional_and_resolved_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACP_PROGRESS_SUMMARY", raising=False)
    plain = new_instance("a", "console")
    assert plain.delivery_defaults.summary is None
    assert plain.model_dump(mode="json")["delivery_defaults"] == {"progress": None}  # unset: not written
    off = new_instance("b", "console", summary="off")
    assert off.model_dump(mode="json")["delivery_defaults"] == {"progress": None, "summary": "off"}
    auto = Settings()
    assert resolve_summary_mode(plain, auto) == "embedded"  # bridges default on
    assert resolve_summary_mode(plain, Settings(summary="off")) == "off"  # ACP_PROGRESS_SUMMARY=off
    assert resolve_summary_mode(off, Settings(summary="embedded")) == "off"  # the instance wins
    assert resolve_summary_mode(off, auto, "embedded") == "embedded"  # bridge run --summary wins
    assert resolve_summary_mode(off, auto, "auto") == "off"
    assert merge_update(off, summary="auto").delivery_defaults.summary is None
    assert merge_update(off, summary="embedded", progress={"typing": False}).delivery_defaults.summary == (
        "embedded"
    )
    with pytest.raises(BridgeConfigError, match=r"delivery_defaults\.summary: Input should be"):
        new_instance("c", "console", summary="loud")
    store = BridgeStore(tmp_path / "bridges.json")
    store.create(off)
    assert store.get("b") == off
    doc = json.loads(store.path.read_text())
    for bad, message in (
        (1, r"instances\.b\.delivery_defaults\.summary: Input should be .* \(got number\)"),
        ({"mode": "off"}, r"delivery_defaults\.summary: Input should be .* \(got object\)"),
    ):
        doc["instances"]["b"]["delivery_defaults"]["summary"] = bad
        store.path.write_text(json.dumps(doc))
        with pytest.raises(BridgeConfigError, match=message):
            store.load()
    doc["instances"]["b"]["delivery_defaults"] = {"summary": "off", "sumary": "off"}
    store.path.write_text(json.dumps(doc))
    with pytest.raises(BridgeConfigError, match=r"delivery_defaults\.sumary: unknown key"):
        store.load()


def test_bridge_commands_set_show_and_clear_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("ACP_PROGRESS_SUMMARY", raising=False)
    assert (
        main(["bridge", "create", "tg", "--platform", "telegram", "--chat-id", "1", "--summary", "off"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert (
        doc["delivery_defaults"] == {"progress": None, "summary": "off"} and doc["effective_summary"] == "off"
    )
    assert main(["bridge", "update", "tg", "--delivery-progress", "all"]) == 0  # other flags keep it
    assert json.loads(capsys.readouterr().out)["delivery_defaults"]["summary"] == "off"
    assert main(["bridge", "update", "tg", "--summary", "auto"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "summary" not in doc["delivery_defaults"] and doc["effective_summary"] == "embedded"
    assert doc["routing"] == {"chat_ids": [1]}
    assert main(["bridge", "list"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("summary=embedded")
    with pytest.raises(SystemExit):
        main(["bridge", "update", "tg", "--summary", "loud"])


@pytest.mark.parametrize(
    ("instance_summary", "flags", "expected"),
    [
        (None, [], (10.0, 180)),
        (None, ["--summary-interval", "0", "--summary-max-length", "60"], (0.0, 60)),
        ("off", [], None),
        ("off", ["--summary", "embedded"], (10.0, 180)),
        (None, ["--summary", "off"], None),
    ],
)
def test_bridge_run_builds_the_summary_from_flags_instance_and_settings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    instance_summary: str | None,
    flags: list[str],
    expected: tuple[float, int] | None,
) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    for name in ("ACP_PROGRESS_SUMMARY", "ACP_PROGRESS_SUMMARY_INTERVAL", "ACP_PROGRESS_SUMMARY_MAX_LENGTH"):
        monkeypatch.delenv(name, raising=False)
    BridgeStore().create(new_instance("demo", "console", cwd=str(ROOT), summary=instance_summary))
    built: list[BridgeRunner] = []

    async def no_console(instance: Any, inp: Any, out: Any, *, runner: BridgeRunner) -> BridgeRunner:
        built.append(runner)
        return runner

    import acp_adapter.frontends.bridges.platforms.console as console

    monkeypatch.setattr(console, "run_console", no_console)
    monkeypatch.setattr(bridge_command.sys, "stdin", io.StringIO(""))
    assert main(["bridge", "run", "demo", *flags]) == 0
    (runner,) = built
    if expected is None:
        assert runner.summary is None
    else:
        assert runner.summary is not None
        assert (runner.summary.interval, runner.summary.max_length) == expected
    assert main(["bridge", "run", "demo", "--summary-interval", "0.001"]) == 2
