"""The watch client's board and drawing, without a terminal or an agent."""

from __future__ import annotations

import io

import pytest
from acp import update_agent_message_text

from acp_adapter.render import CardBoard, render_card
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_progress,
    build_thinking_start,
    build_tool_failed,
    build_tool_start,
)
from acp_adapter.watch import WatchClient

pytestmark = pytest.mark.anyio


def test_board_folds_updates_and_counts_late_ones():
    board = CardBoard()
    board.apply(build_thinking_start("t"), 0.0)
    board.apply(build_thinking_progress("t", 30.0), 30.0)
    assert board.cards["t"].live and board.cards["t"].detail == "Still thinking… 30s"
    assert render_card(board.cards["t"], frame=1, now=31.0).startswith(
        "⠙ 💭 Thinking... — Still thinking… 30s"
    )
    board.apply(build_thinking_complete("t", 31.0), 31.0)
    assert not board.cards["t"].live
    assert render_card(board.cards["t"], frame=0, now=32.0) == "✅ 💭 Thinking... — Thought for 31s"
    board.apply(build_thinking_progress("t", 60.0), 60.0)
    assert board.late_updates == 1
    board.apply(update_agent_message_text("Hello"), 61.0)
    assert board.answer == "Hello"


def test_long_lines_are_cut_to_the_width():
    board = CardBoard()
    board.apply(build_tool_start("c", "Reading " + "x" * 300, "read"), 0.0)
    line = render_card(board.cards["c"], frame=0, now=1.0, width=60)
    assert len(line) == 60 and line.endswith("…")


async def test_plain_output_prints_one_line_per_card_event_and_flags_orphans():
    out = io.StringIO()
    client = WatchClient(out, animate=False, auto_allow=True)
    await client.session_update("s", build_thinking_start("t"))
    await client.session_update("s", build_thinking_progress("t", 1.0))
    await client.session_update("s", build_thinking_complete("t", 1.5))
    await client.session_update("s", build_tool_start("c", "Running make", "execute"))
    await client.session_update("s", build_tool_failed("c", "command timed out after 30s"))
    await client.session_update("s", build_tool_start("o", "Searching for x", "search"))
    await client.session_update("s", update_agent_message_text("done"))
    client.finish("end_turn")
    lines = out.getvalue().splitlines()
    assert lines[0] == "▶ 💭 Thinking... — 0.0s"
    assert lines[1] == "   … Thinking...: Still thinking… 1.0s"
    assert lines[2] == "✅ 💭 Thinking... — Thought for 1.5s"
    assert lines[4] == "❌ 💻 Running make — command timed out after 30s"
    assert "left spinning by the agent: Searching for x" in out.getvalue()
    assert lines[-1] == "— stop reason: end_turn"


def test_terminal_printer_animates_and_keeps_the_status_between_frames():
    import time as _time

    from acp_adapter.heartbeat import HeartbeatScheduler
    from acp_adapter.terminal import TerminalPrinter

    out = io.StringIO()
    printer = TerminalPrinter(out, animate=True, scheduler=HeartbeatScheduler(), frame_interval=0.01)
    printer.spinner_start()
    printer.spinner_heartbeat(30.0, "Retrying in 4s (429)")
    _time.sleep(0.08)
    printer.spinner_stop()
    printer.answer("done\n")
    frames = [f for f in out.getvalue().split("\r\x1b[2K") if f]
    animated = [f for f in frames if "Thinking..." in f]
    assert len({f[0] for f in animated}) >= 3, "the spinner glyph should change between frames"
    assert all("Retrying in 4s (429)" in f for f in animated[1:])
    assert out.getvalue().endswith("\r\x1b[2Kdone\n")
