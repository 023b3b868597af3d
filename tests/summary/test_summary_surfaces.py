"""Progress summaries on the surfaces: the agent's think card (serve), the relay's injected card,
and watch's status line, plus the pure pieces they are built of. What the agent puts on its think
card (the summary on its heartbeats, none unless turned on, none after a cancel) is decided by the
agent whoever its client is: those serve cases run it in this process
(:mod:`tests.helpers.shared_agent`). The relay runs in this process
(:mod:`tests.helpers.relay_inside`) around the real process of the agent it wraps; watch, the
front-end, runs in this process with the agent served inside it
(:func:`tests.helpers.cli_inside.run_cli_inside`): what watch prints is the point, not its process."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from typing import Any

import pytest
from acp.schema import AgentThoughtChunk, ToolCallProgress

from acp_adapter.tools import build_thinking_progress, build_thinking_start
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.relay_inside import relay_inside
from tests.helpers.shared_agent import progress_agent, served_inprocess

pytestmark = pytest.mark.anyio

SCRIPTED = [sys.executable, str(ROOT / "tests" / "agents" / "scripted_agent.py")]


def _text(update: Any) -> str:
    return " ".join(c.content.text for c in (getattr(update, "content", None) or []))


def _summary_meta(update: Any) -> dict[str, Any] | None:
    meta = (getattr(update, "field_meta", None) or {}).get("acpProgress") or {}
    return meta.get("summary")


def _summarised_beats(card: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for update in card:
        meta = _summary_meta(update)
        if isinstance(update, ToolCallProgress) and update.status == "in_progress" and meta:
            out.append((_text(update), meta))
    return out


def _check_card(client: RecordingClient, card_id: str, card: list[Any]) -> list[dict[str, Any]]:
    """The summary is on the card's heartbeats, with increasing revisions; never in thoughts; nothing
    after the card completed."""
    beats = _summarised_beats(card)
    assert beats, "the think card's heartbeats carry the summary"
    for text, meta in beats:
        assert text.startswith("Still thinking… ") and text.endswith(f" — {meta['summary']}"), text
    revisions = [meta["revision"] for _, meta in beats]
    assert revisions == sorted(revisions) and revisions[-1] > revisions[0], revisions
    assert beats[0][1]["summary"].startswith("Thinking about the request to fix the failing test")
    assert any(meta["summary"].startswith("Still thinking about") for _, meta in beats)
    closing = next(i for i, u in enumerate(card) if u.status in ("completed", "failed"))
    assert closing == len(card) - 1, "no update (summary or other) after the card closed"
    thoughts = " ".join(
        _text_of_chunk(r.update) for r in client.updates if isinstance(r.update, AgentThoughtChunk)
    )
    assert all(meta["summary"] not in thoughts for _, meta in beats), "never in the thought channel"
    return [meta for _, meta in beats]


def _serve_inprocess(env: dict[str, str]) -> Any:
    """The agent ``serve`` would run with ``env`` (the same settings), in this process."""
    from acp_adapter.config import Settings

    return progress_agent(Settings.from_env(env))


def _text_of_chunk(update: AgentThoughtChunk) -> str:
    return getattr(update.content, "text", "") or ""


# ---------------------------------------------------------------- pure pieces


def test_the_heartbeat_builder_carries_the_summary_in_text_and_meta() -> None:
    beat = build_thinking_progress("t", 40, summary="Checking the failing test.", summary_revision=3)
    assert _text(beat) == "Still thinking… 40s — Checking the failing test."
    assert beat.field_meta == {
        "acpProgress": {
            "phase": "thinking",
            "elapsedMs": 40000,
            "summary": {"summary": "Checking the failing test.", "revision": 3},
        }
    }
    plain = build_thinking_progress("t", 40)
    assert "summary" not in plain.field_meta["acpProgress"]


class _Outbox:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    def submit(self, session_id: str, update: Any) -> None:
        self.updates.append(update)


def test_the_turn_state_shows_a_summary_on_the_open_card_and_never_after_the_end() -> None:
    from acp_adapter.agent.turn_state import SessionStream

    outbox = _Outbox()
    stream = SessionStream("s", outbox)  # type: ignore[arg-type]
    assert stream.show_summary("Too early.", 1) is False, "no turn yet"
    stream.begin_turn()
    assert stream.show_summary("Remembered for the next card.", 1)
    card = stream.think_start()
    assert card is not None
    stream.think_heartbeat(status="Waiting for the first token")
    beat = outbox.updates[-1]
    assert _summary_meta(beat) == {"summary": "Remembered for the next card.", "revision": 1}
    assert _text(beat).endswith("— Waiting for the first token — Remembered for the next card.")
    assert stream.show_summary("Reading the test.", 2)  # pushed at once on the open card
    pushed = outbox.updates[-1]
    assert _summary_meta(pushed) == {"summary": "Reading the test.", "revision": 2}
    assert "Waiting for the first token" in _text(pushed), "the last status is kept"
    assert stream.show_summary("Stale.", 1) is False, "an older revision never replaces a newer one"
    stream.think_complete()
    count = len(outbox.updates)
    assert stream.show_summary("After the card.", 3) and len(outbox.updates) == count, (
        "no card open: nothing sent"
    )
    stream.end_turn()
    assert stream.show_summary("After the end.", 4) is False and len(outbox.updates) == count


def test_the_plain_view_prints_one_line_per_new_revision_and_nothing_after_the_end() -> None:
    from acp import update_agent_message_text

    from acp_adapter.frontends.watch.view import PlainView

    out = io.StringIO()
    view = PlainView(out)
    view.apply(build_thinking_start("t"))
    view.show_summary("Thinking about it.", 1)
    view.show_summary("Thinking about it.", 1)  # same revision again: nothing
    view.apply(update_agent_message_text("half a line"))
    view.show_summary("Writing the answer.", 2)  # never inside a line: the half line is held instead
    assert "half a line" not in out.getvalue()
    view.apply(update_agent_message_text(" and the rest\n"))
    view.finish("end_turn")
    view.show_summary("Too late.", 3)
    lines = out.getvalue().splitlines()
    assert lines.count("   … summary: Thinking about it.") == 1
    assert "half a line and the rest" in lines
    assert lines.index("   … summary: Writing the answer.") == lines.index("half a line and the rest") - 1
    assert "Too late." not in out.getvalue()


def test_on_a_pipe_no_summary_lands_between_the_lines_of_an_answer() -> None:
    """The summary generator answers whenever it is done: a new sentence while the answer's lines
    are being written waits until something else (a card, a thought) ends the answer, or is dropped
    with the turn's end; it never splits the answer."""
    from acp import start_tool_call, update_agent_message_text

    from acp_adapter.frontends.watch.view import PlainView

    out = io.StringIO()
    view = PlainView(out)
    view.apply(update_agent_message_text("Let me look.\n"))
    view.apply(start_tool_call("s1", "Searching for TODO", kind="search"))
    view.apply(update_agent_message_text("Found 3:\n- a\n"))
    view.show_summary("Writing the answer.", 1)  # between "- a" and "- b": held
    view.apply(update_agent_message_text("- b\n- c\n"))
    assert "summary" not in out.getvalue()
    view.apply(start_tool_call("s2", "Searching for FIXME", kind="search"))  # the answer's part ended
    view.apply(update_agent_message_text("Also:\n"))
    view.show_summary("Searching again.", 2)
    view.apply(update_agent_message_text("- d\n"))
    view.finish("end_turn")
    lines = out.getvalue().splitlines()
    assert lines.index("- c") < lines.index("   … summary: Writing the answer.") < lines.index("Also:")
    assert lines[lines.index("Also:") + 1] == "- d" and "Searching again." not in out.getvalue()


def test_the_live_view_has_a_status_line_under_the_cards() -> None:
    from rich.console import Console

    from acp_adapter.frontends.watch.view import LiveView

    def region_lines(view: LiveView) -> list[str]:
        probe = Console(file=io.StringIO(), width=80, color_system=None)
        with probe.capture() as capture:
            probe.print(view._region())
        return capture.get().splitlines()

    console = Console(
        file=io.StringIO(), width=80, force_terminal=True, color_system=None, legacy_windows=False
    )
    view = LiveView(console)
    view.apply(build_thinking_start("t"))
    view.show_summary("Checking the failing test.", 1)
    lines = region_lines(view)
    assert "Thinking..." in lines[0] and lines[1].strip() == "↳ Checking the failing test."
    view.show_summary("Reading test_x.py.", 2)
    assert region_lines(view)[1].strip() == "↳ Reading test_x.py."
    view.finish("end_turn")
    assert not any("Reading" in line for line in region_lines(view)), "the status is gone with the turn"


# ---------------------------------------------------------------- serve


async def test_serve_shows_the_summary_on_the_think_cards_heartbeat(tmp_path) -> None:
    client = RecordingClient()
    env = agent_env(
        ACP_PROGRESS_SUMMARY="embedded",
        ACP_PROGRESS_SUMMARY_INTERVAL="0.05",
        ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05",
        ACP_PROGRESS_EMBEDDED_DELAY="0.4",  # eight intervals: the summary is revised on the way
    )
    async with served_inprocess(client, _serve_inprocess(env)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "fix the failing test")
        count = len(client.updates)
        await asyncio.sleep(0.15)  # three intervals: nothing may follow the response
        assert len(client.updates) == count
    assert response.stop_reason == "end_turn"
    ((card_id, card),) = client.think_cards(session.session_id).items()
    assert final_status(card) == "completed"
    _check_card(client, card_id, card)
    assert client.answer(session.session_id), "the answer still arrives"


async def test_serve_has_no_summary_unless_turned_on(tmp_path) -> None:
    client = RecordingClient()
    env = agent_env(ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05", ACP_PROGRESS_EMBEDDED_DELAY="0.2")
    async with served_inprocess(client, _serve_inprocess(env)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await prompt_text(conn, session.session_id, "fix the failing test")
    (card,) = client.think_cards(session.session_id).values()
    assert not _summarised_beats(card)
    assert all(_summary_meta(u) is None for u in card)


async def test_serve_stops_the_summary_when_the_turn_is_cancelled(tmp_path) -> None:
    client = RecordingClient()
    env = agent_env(
        ACP_PROGRESS_SUMMARY="embedded",
        ACP_PROGRESS_SUMMARY_INTERVAL="0.05",
        ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05",
        ACP_PROGRESS_EMBEDDED_DELAY="30",
    )
    async with served_inprocess(client, _serve_inprocess(env)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        task = asyncio.create_task(prompt_text(conn, session.session_id, "fix the failing test"))
        for _ in range(200):
            if any(_summary_meta(r.update) for r in client.updates):
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)  # two intervals with the summary running
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(task, 5)
        count = len(client.updates)
        await asyncio.sleep(0.15)  # three intervals
        assert len(client.updates) == count, "nothing after the prompt response"
    assert response.stop_reason == "cancelled"
    (card,) = client.think_cards(session.session_id).values()
    assert final_status(card) == "failed" and _summarised_beats(card)


# ---------------------------------------------------------------- relay


@pytest.mark.e2e
async def test_the_relays_injected_card_shows_the_summary(tmp_path) -> None:
    client = RecordingClient()
    argv = [
        "-m",
        "acp_adapter.cli",
        "relay",
        "--think-after",
        "0.2",
        "--heartbeat-interval",
        "0.05",
        "--summary",
        "embedded",
        "--summary-interval",
        "0.05",
        "--",
        *SCRIPTED,
        "silent",
        "0.6",  # eight intervals after think_after: the summary is revised on the way
    ]
    async with relay_inside(client, argv=argv, env=agent_env()) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "fix the failing test")
        count = len(client.updates)
        await asyncio.sleep(0.15)  # three intervals
        assert len(client.updates) == count
    assert response.stop_reason == "end_turn"
    cards = {cid: ups for cid, ups in client.think_cards().items() if cid.startswith("relay-think-")}
    ((card_id, card),) = cards.items()
    assert final_status(card) == "completed"
    _check_card(client, card_id, card)
    assert client.answer() == "done after silence", "the agent's own stream is forwarded unchanged"


@pytest.mark.e2e
async def test_the_relay_has_no_summary_by_default(tmp_path) -> None:
    client = RecordingClient()
    argv = ["-m", "acp_adapter.cli", "relay", "--think-after", "0.2", "--heartbeat-interval", "0.05"]
    relayed = [*argv, "--", *SCRIPTED, "silent", "0.4"]
    async with relay_inside(client, argv=relayed, env=agent_env()) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await prompt_text(conn, session.session_id, "fix the failing test")
    assert all(_summary_meta(r.update) is None for r in client.updates)


# ---------------------------------------------------------------- watch


def test_watch_on_a_pipe_prints_the_summary_line(tmp_path) -> None:
    from tests.helpers.cli_inside import run_cli_inside

    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.3")}  # six intervals
    args = ["watch", "--summary-interval", "0.05", "--cwd", str(tmp_path), "fix the failing test"]
    done = run_cli_inside(args, cwd=tmp_path, env=env)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    lines = out.splitlines()
    summaries = [line for line in lines if line.startswith("   … summary: ")]
    assert summaries[0] == "   … summary: Thinking about the request to fix the failing test."
    assert "   … summary: Still thinking about the request to fix the failing test." in summaries
    assert len(summaries) == len(set(summaries)), "one line per new revision"
    assert lines.index(summaries[-1]) < lines.index("— stop reason: end_turn")


def test_watch_summary_off(tmp_path) -> None:
    from tests.helpers.cli_inside import run_cli_inside

    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.2")}
    done = run_cli_inside(
        ["watch", "--summary", "off", "--cwd", str(tmp_path), "hello"], cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "summary:" not in done.stdout
