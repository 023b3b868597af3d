"""The watch client's board and drawing, without a terminal or an agent."""

from __future__ import annotations

import io

import pytest
from acp import update_agent_message_text
from acp.schema import PromptResponse
from rich.cells import cell_len

from acp_adapter.frontends.watch.render import CardBoard, CardView, card_parts, fit_keeping_clock
from acp_adapter.frontends.watch.watcher import WatchClient
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_progress,
    build_thinking_start,
    build_tool_failed,
    build_tool_start,
)

pytestmark = pytest.mark.anyio


def render_card(card: CardView, *, frame: int, now: float, width: int = 100) -> str:
    """A card's line as the live view draws it: its parts cut to ``width`` cells, the clock kept."""
    head, clock = card_parts(card, now=now, mark=None, frame=frame)
    return fit_keeping_clock(head, clock, width)


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


def test_long_lines_are_cut_to_the_width_in_terminal_cells():
    board = CardBoard()
    board.apply(build_tool_start("c", "Reading " + "x" * 300, "read"), 0.0)
    line = render_card(board.cards["c"], frame=0, now=1.0, width=60)
    # 📖 is two cells wide; the title is cut, the clock stays
    assert cell_len(line) == 60 and "…" in line and line.endswith(" — 1.0s")
    board.apply(build_tool_start("k", "読み込み中 " + "漢字" * 50, "read"), 0.0)
    cjk = render_card(board.cards["k"], frame=0, now=1.0, width=41)
    assert cell_len(cjk) <= 41 and "…" in cjk and cjk.endswith(" — 1.0s")


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
    client.finish(PromptResponse(stop_reason="end_turn"))
    lines = out.getvalue().splitlines()
    assert lines[0] == "▶ 💭 Thinking... — 0.0s"
    assert lines[1] == "   … Thinking...: Still thinking… 1.0s"
    assert lines[2] == "✅ 💭 Thinking... — Thought for 1.5s"
    assert lines[4] == "❌ 💻 Running make — command timed out after 30s"
    assert "left spinning by the agent: Searching for x" in out.getvalue()
    assert lines[-1] == "— stop reason: end_turn"


async def test_terminal_printer_animates_and_keeps_the_status_between_frames():
    from acp_adapter.agent.heartbeat import Heartbeats
    from acp_adapter.clock import ManualClock
    from acp_adapter.frontends._render import SPINNER_FRAMES
    from acp_adapter.frontends.plain.printer import TerminalPrinter

    clock = ManualClock()
    out = io.StringIO()
    printer = TerminalPrinter(out, animate=True, scheduler=Heartbeats(clock), frame_interval=0.01)
    printer.spinner_start()
    printer.spinner_heartbeat(30.0, "Retrying in 4s (429)")
    await clock.advance(0.085)
    printer.spinner_stop()
    await clock.advance(1)  # stopped: no frame after it
    printer.answer("done\n")
    frames = [f for f in out.getvalue().split("\r\x1b[2K") if f]
    animated = [f for f in frames if "Thinking..." in f]
    # the first draw, the heartbeat's redraw, then one frame per 10 ms: rich's dots in order
    assert [f[0] for f in animated] == [SPINNER_FRAMES[0], *SPINNER_FRAMES[:9]]
    assert all("Retrying in 4s (429)" in f for f in animated[1:])
    assert out.getvalue().endswith("\r\x1b[2Kdone\n")


def test_spinner_and_bar_come_from_one_place():
    """The plain printer and watch share rich's spinner and one progress bar."""
    from rich.spinner import Spinner

    from acp_adapter.frontends import _render
    from acp_adapter.frontends.watch import render

    assert tuple(Spinner("dots").frames) == _render.SPINNER_FRAMES
    assert render.progress_bar is _render.progress_bar
    assert _render.progress_bar(3, 10) == "██████░░░░░░░░░░░░░░  30%"
    assert _render.progress_bar(-1, 10).endswith("  0%") and _render.progress_bar(11, 10).endswith("100%")


def test_the_live_line_is_drawn_in_place_and_cropped_by_cells():
    from acp_adapter.frontends._render import clear_line, live_line

    drawn = live_line("⠋ Thinking... 漢字テキスト 🙂🙂🙂🙂🙂🙂", 20)
    assert drawn.startswith("\r\x1b[2K") and drawn.endswith("…")
    assert cell_len(drawn.removeprefix("\r\x1b[2K")) <= 20
    assert live_line("short", 20) == "\r\x1b[2Kshort"
    assert clear_line() == "\r\x1b[2K"


LONG = "An answer line much longer than any terminal: " + "🙂 emoji and 漢字テキスト mixed in " * 6


def _screen(raw: str, width: int, height: int = 200) -> list[str]:
    """What a terminal of ``width`` columns shows after ``raw`` (pyte: a VT100 emulator)."""
    import pyte

    screen = pyte.Screen(width, height)
    stream = pyte.Stream(screen)
    stream.feed(raw.replace("\n", "\r\n"))
    return [line.rstrip() for line in screen.display if line.strip()]


@pytest.mark.parametrize("width", [40, 80, 120])
async def test_live_view_wraps_wide_text_to_the_terminal_and_prints_each_line_once(width):
    from rich.console import Console

    from acp_adapter.frontends.watch.view import LiveView

    raw = io.StringIO()
    console = Console(file=raw, width=width, force_terminal=True, color_system=None, legacy_windows=False)
    view = LiveView(console)
    view.apply(build_thinking_start("t"))
    for i in range(3):
        view.apply(build_thinking_progress("t", float(i), "状態: 最初のトークンを待っています " * 3))
        view.tick()
    mid = _screen(raw.getvalue(), width)
    assert len(mid) == 1 and "Thinking..." in mid[0] and mid[0].endswith("…"), mid
    view.apply(build_thinking_complete("t", 3.0))
    view.apply(build_tool_start("c", "Searching for 漢字 " + "🔎" * 40, "search"))
    view.tick()
    for piece in (LONG[:50], LONG[50:], "\nsecond line\n", "tail"):
        view.apply(update_agent_message_text(piece))
        view.tick()
    view.apply(build_tool_failed("c", "boom"))
    view.finish("end_turn")
    output = raw.getvalue()
    lines = _screen(output, width)
    assert all(cell_len(line) <= width for line in lines)
    shown = "\n".join(lines)
    assert shown.count("Thought for 3.0s") == 1 and shown.count("❌") == 1
    joined = "".join(line.strip() for line in lines).replace(" ", "")
    assert joined.count(LONG.replace(" ", "")) == 1, "the long answer line is shown once, wrapped"
    assert shown.count("second line") == 1 and shown.count("tail") == 1
    assert lines[-1] == "— stop reason: end_turn"
    assert output.rfind("\x1b[?25h") > output.rfind("\x1b[?25l"), "the cursor is shown again"


async def test_plain_view_never_cuts_lines_and_stops_quietly_on_a_closed_pipe():
    from acp_adapter.frontends.watch.view import PlainView

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError

    out = io.StringIO()
    view = PlainView(out)
    view.apply(build_tool_start("c", "Searching for " + "漢" * 200, "search"))
    title = view.board.cards["c"].title
    assert cell_len(title) > 200 and f"▶ 🔎 {title} — 0.0s" in out.getvalue()
    closed = PlainView(Closed())
    closed.apply(build_thinking_start("t"))
    closed.apply(update_agent_message_text("x" * 10))
    closed.finish("end_turn")
    assert closed.output_closed


def test_a_progress_line_on_a_pipe_has_the_bar_the_message_and_the_elapsed_time():
    from acp_adapter.frontends.watch.view import PlainView
    from acp_adapter.tools import build_tool_progress

    out = io.StringIO()
    view = PlainView(out)
    view.apply(build_tool_start("c", "Scanning files", "search"))
    view.apply(build_tool_progress("c", value=3, total=10, message="Scanned 3/10 files"))
    view.apply(build_tool_progress("c", value=5, total=10))
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("   … Scanning files: " + "█" * 6 + "░" * 14 + "  30% Scanned 3/10 files · ")
    assert lines[1].endswith("s") and lines[2].startswith("   … Scanning files: " + "█" * 10)
    assert "  50% " in lines[2] and " · " in lines[2]


@pytest.mark.parametrize("width", [80, 60, 40, 24])
def test_a_narrow_terminal_cuts_the_message_never_the_clock(width: int) -> None:
    """At 80 columns the live line keeps its elapsed time, the one thing that says the tool is
    alive."""
    from rich.cells import cell_len

    from acp_adapter.protocol.cards import Card

    card = Card(
        "c", "Working on long task", "other", "in_progress", "step 3 of 6 " + "x" * 80, 0.0, tool_id="wait"
    )
    card.progress = (3, 6)
    line = render_card(card, frame=0, now=61.5, width=width)
    assert line.endswith(" · 1m 1s") and "…" in line and cell_len(line) <= width
    quiet = Card("q", "Searching for TODO " + "y" * 100, "search", "in_progress", "", 0.0)
    line = render_card(quiet, frame=0, now=2.0, width=width)
    assert line.endswith(" — 2.0s") and cell_len(line) <= width
