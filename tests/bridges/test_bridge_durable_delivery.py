"""Delivery with the durable outbox, silent progress, the placeholder's timing and ordering
(fake clock, recording sink, the in-memory store's key-value API)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_adapter.cli import main
from acp_adapter.frontends.bridges.answers import flush_outbox
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.delivery import RouteDelivery
from acp_adapter.frontends.bridges.events import (
    AnswerText,
    ProgressEvent,
    ProgressPayload,
    SummaryUpdate,
    TurnEnd,
    TurnStart,
    TypingEvent,
)
from acp_adapter.frontends.bridges.sink import SendOutcomeUnknown
from acp_adapter.frontends.bridges.state import BridgeState, unsure_note
from acp_adapter.store import MemoryStore
from tests.helpers.bridge_fakes import FakeClock, RecordingSink

pytestmark = pytest.mark.anyio
CONFIG = ProgressConfig(tool_progress="all", grouping="accumulate", typing=True, reactions=False)


def p(call: str, phase: str = "started") -> ProgressEvent:
    return ProgressEvent(ProgressPayload(call, "wait", phase, "Working on", call, "⏳", 0))  # type: ignore[arg-type]


class TimeoutSink(RecordingSink):
    """Every answer post (``exactly_once``) times out ``timeouts`` times, then goes through."""

    timeouts: int = 1

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
        mid = await super().post(text, silent=silent, exactly_once=exactly_once)
        if exactly_once and self.timeouts > 0:
            self.timeouts -= 1
            raise SendOutcomeUnknown("sendMessage timed out")  # it did reach the chat
        return mid


async def test_progress_and_placeholder_are_silent_the_answer_notifies_after_the_last_edit() -> None:
    clock = FakeClock()
    sink = RecordingSink(clock=clock)
    d = RouteDelivery(sink, CONFIG, clock, window=1.5, placeholder_delay=0.0)
    await d.handle(TurnStart(None))
    await d.handle(p("a"))
    await d.handle(SummaryUpdate("Working on a.", 1))
    await d.handle(p("b"))
    await d.handle(p("a", "completed"))  # inside the edit window: a pending edit
    await d.handle(p("b", "completed"))
    await d.handle(AnswerText(0, "done"))
    await d.handle(TurnEnd("end_turn"))
    assert sink.silent == ["⏳ Working on a", "📝 Working on a."]
    assert sink.posts()[-1] == "done" and "done" not in sink.silent
    kinds = [op[0] for op in sink.ops if op[0] in ("edit", "post")]
    last_edit = max(i for i, k in enumerate(kinds) if k == "edit")
    assert kinds.index("post", last_edit) == len(kinds) - 1, sink.ops  # the answer after the ✅ edit
    assert sink.shown()[0] == "✅ Working on a\n✅ Working on b"


async def test_the_placeholder_never_appears_after_the_last_tool_finished() -> None:
    """Not posted 3 s into the turn when its tool has finished (only to be deleted 0.4 s later)."""
    clock = FakeClock()
    sink = RecordingSink(clock=clock)
    d = RouteDelivery(sink, CONFIG, clock, placeholder_delay=3.0)
    await d.handle(TurnStart(None))
    await d.handle(TypingEvent(True))
    await d.handle(p("a"))
    await d.handle(SummaryUpdate("Working on a.", 1))
    clock.advance(1.0)
    await d.handle(p("a", "completed"))
    await d.handle(TypingEvent(False))  # nothing runs any more; the answer is being written
    clock.advance(5.0)
    await d.tick()
    assert d.next_deadline() is None or d.next_deadline() > clock.now  # nothing due
    await d.handle(AnswerText(0, "done"))
    await d.handle(TurnEnd("end_turn"))
    assert not any(t.startswith("📝") for t in sink.posts()), sink.ops
    assert ("delete",) not in [op[:1] for op in sink.ops]


async def test_outbox_stores_before_sending_and_an_unknown_outcome_is_marked_not_duplicated() -> None:
    state = BridgeState(MemoryStore(), "t")
    sink = TimeoutSink()
    clock = FakeClock()
    d = RouteDelivery(sink, CONFIG, clock, state=state, chat=7)
    await d.handle(TurnStart(None))
    await d.handle(AnswerText(0, "the answer"))
    await d.handle(TurnEnd("end_turn"))
    # the chunk is never sent twice: one notice quoting it says its delivery could not be confirmed
    assert sink.posts() == ["the answer", unsure_note("the answer")]
    assert "“the answer”" in unsure_note("the answer") and len(unsure_note("x" * 500)) < 200
    assert state.outbox() == []  # acknowledged once confirmed


async def test_after_a_crash_pending_chunks_go_out_and_in_flight_ones_are_marked_not_resent() -> None:
    store = MemoryStore()
    before = BridgeState(store, "t")
    sent = before.outbox_add(7, "shown?")
    before.outbox_mark(sent, "sending")  # the bridge died during this send
    before.outbox_add(7, "never sent")
    before.outbox_add(8, "another chat")
    after = BridgeState(store, "t")  # the restart
    sink = RecordingSink()
    assert await flush_outbox(sink, after, 7) == 1  # the one never sent; the other gets a notice
    assert sink.posts() == [unsure_note("shown?"), "never sent"]
    assert [e.text for e in after.outbox()] == ["another chat"]


async def test_an_answer_the_platform_refused_stays_stored_for_the_next_start() -> None:
    class Refusing(RecordingSink):
        async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
            raise RuntimeError("Bad Gateway")

    state = BridgeState(MemoryStore(), "t")
    d = RouteDelivery(Refusing(), CONFIG, FakeClock(), state=state, chat=7)
    await d.handle(TurnStart(None))
    await d.handle(AnswerText(0, "keep me"))
    await d.handle(TurnEnd("end_turn"))
    [entry] = state.outbox(7)
    assert (entry.text, entry.state, entry.attempts) == ("keep me", "failed", 1)


def test_create_a_telegram_bridge_without_chat_id_fails_at_create(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    assert main(["bridge", "create", "tg", "--platform", "telegram"]) == 2
    assert "needs --chat-id" in capsys.readouterr().err
    assert not (tmp_path / "bridges.json").exists()


def test_a_setup_error_prints_no_metrics_line(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("telegram")
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    assert main(["bridge", "create", "tg", "--platform", "telegram", "--chat-id", "1"]) == 0
    capsys.readouterr()
    assert main(["bridge", "run", "tg"]) == 2
    err = capsys.readouterr().err
    assert "TELEGRAM_BOT_TOKEN" in err and "delivery metrics" not in err, err
