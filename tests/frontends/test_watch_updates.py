"""``watch`` shows everything an agent sends: the plan as a checklist updated in
place, thoughts dimmed and folded, an edit's diff coloured, a command's terminal output, the usage
footer — on a real terminal (a pty read back through pyte) and on a pipe, against a scripted agent
that sends every kind of update (tests/agents/everything_agent.py; served in this process behind
the pipe process watch spawns, :func:`tests.helpers.piped_agent.piped_agent_thread`). The agent's
text is hostile: escapes in a plan, a thought or a diff are shown, never obeyed."""

from __future__ import annotations

import io
import shlex
import sys
from typing import Any

import pytest
from acp.helpers import (
    plan_entry,
    text_block,
    tool_diff_content,
    update_agent_thought,
    update_plan,
)
from acp.schema import ToolCallProgress, ToolCallStart
from rich.console import Console

from acp_adapter.frontends._updates import DIFF_LINES, Diff
from acp_adapter.frontends.watch.view import LiveView, PlainView
from tests.agents.everything_agent import EverythingAgent
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.piped_agent import piped_agent_thread
from tests.helpers.pty_screen import ENV, Screen


def everything(*, pause: float = 0.0, hostile: bool = False, paused_steps: int | None = None) -> Any:
    """``watch --agent`` for the everything agent (``everything_agent.py [--pause S] [--hostile]
    [--paused-steps N]``) served in this process behind the pipe process watch spawns: what watch
    shows of its updates is the point, not the agent's process."""
    return piped_agent_thread(lambda: EverythingAgent(False, pause, hostile, paused_steps=paused_steps))


def _watch_pipe(tmp_path, *extra: str) -> str:
    # the command line in this process (what it prints is the point); the scripted agent served
    # behind a pipe process the watch spawns
    with everything() as agent:
        done = run_cli_inside(
            ["watch", "--summary", "off", "--agent", shlex.join(agent), *extra, "fix it"],
            cwd=tmp_path,
            env={**ENV, "ACP_PROGRESS_STATE_DIR": str(tmp_path / ".state")},
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.e2e
def test_watch_on_a_pipe_prints_the_plan_thought_diff_terminal_and_usage(tmp_path) -> None:
    out = _watch_pipe(tmp_path)
    lines = out.splitlines()
    # the plan: whole the first time, then only the entries that changed
    assert lines.index("plan 0/3") < lines.index("  ○ Read notes.py · high")
    assert "  ◐ Fix the greeting · medium" in lines and "  ✓ Run the tests · low" in lines
    assert lines.count("  ○ Fix the greeting · medium") == 1, out
    assert "plan 3/3" in lines
    # the thought folded to its last line; the diff as a unified diff under its card
    assert "💭 I will fix it, then run the tests." in lines and "Reading notes.py first." not in out
    edit = lines.index("✅ ✏️ Edit notes.py")
    assert lines[edit + 1 : edit + 3] == ["--- a/notes.py", "+++ b/notes.py"], out
    assert "-    print('helo', name)" in lines and "+    print('hello', name)" in lines
    # the command card's terminal output, the usage footer before the stop reason
    assert "   │ 3 passed" in lines
    assert lines[-2] == "📊 tokens 1,234 / 200,000 (0%) · cost 0.0123 USD", out
    assert lines[-1] == "— stop reason: end_turn"


@pytest.mark.e2e
def test_watch_verbose_prints_the_whole_thought(tmp_path) -> None:
    out = _watch_pipe(tmp_path, "--verbose")
    assert "💭 Reading notes.py first." in out and "💭 The greeting has a typo." in out


@pytest.mark.e2e
def test_watch_on_a_terminal_updates_the_plan_in_place_and_colours_the_diff(tmp_path) -> None:
    # a pause after each of the first five steps (three thoughts, the plan, its first entry
    # started): the frame looked at stays on the screen 0.15 s; the rest of the turn runs at once
    with everything(pause=0.15, paused_steps=5) as agent:
        _watch_the_plan_on_a_terminal(tmp_path, shlex.join(agent))


def _watch_the_plan_on_a_terminal(tmp_path, agent: str) -> None:
    term = Screen(
        [sys.executable, "-m", "acp_adapter.cli", "watch", "--summary", "off", "--agent", agent, "fix"],
        str(tmp_path),
    )
    try:
        shown = term.pump(20, until="◐ Read notes.py")
        assert "plan 0/3" in shown, shown
        assert "○ Fix the greeting" in shown
        assert term.wait(30) == 0, term.text()
        final = term.text()
        # redrawn in place: the final screen holds the checklist once, every entry done
        assert final.count("plan ") == 1 and "plan 3/3" in final, final
        assert "✓ Read notes.py · high" in final and "◐" not in final and "○" not in final
        # the thought, folded (its last line, how many it had); the terminal output
        assert "💭 I will fix it, then run the tests.  (3 lines; --verbose shows them)" in final
        assert "│ 3 passed" in final
        assert "tokens 1,234 / 200,000" in final
        # the diff is coloured: its added lines in green, its removed lines in red
        row = next(i for i, line in enumerate(term.screen.display) if "+    print('hello', name)" in line)
        assert "green" in term.screen.buffer[row][1].fg, term.screen.buffer[row][1]
        row = next(i for i, line in enumerate(term.screen.display) if "-    print('helo', name)" in line)
        assert "red" in term.screen.buffer[row][1].fg
    finally:
        term.close()


# ---------------------------------------------------------------- in-process: hostile text, caps

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202eevil"


def _hostile_updates() -> list[object]:
    return [
        update_agent_thought(text_block(f"thinking {HOSTILE}")),
        update_plan([plan_entry(f"step {HOSTILE}", priority="high", status="in_progress")]),
        ToolCallStart(
            session_update="tool_call", tool_call_id="e", title="Edit", kind="edit", status="in_progress"
        ),
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id="e",
            status="completed",
            content=[tool_diff_content(f"x{HOSTILE}.py", f"new {HOSTILE}\n", "old\n")],
            field_meta={"terminal_output": {"data": f"out {HOSTILE}\n"}},
        ),
    ]


def _assert_inert(written: str) -> None:
    assert "\x1b]0;" not in written and "\x1b[2J" not in written and "\u202e" not in written, repr(written)
    assert "␛]0;pwned␇" in written


def test_plain_view_shows_the_agents_escapes_never_obeys_them() -> None:
    out = io.StringIO()
    view = PlainView(out)
    for update in _hostile_updates():
        view.apply(update)
    view.finish("end_turn")
    _assert_inert(out.getvalue())
    assert "step ␛]0;pwned␇" in out.getvalue() and "+new ␛]0;pwned␇" in out.getvalue()


def test_live_view_shows_the_agents_escapes_never_obeys_them() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system="truecolor")
    view = LiveView(console, verbose=True)
    for update in _hostile_updates():
        view.apply(update)
    view.finish("end_turn")
    written = out.getvalue()
    # rich writes its own SGR colours; no OSC, no clear-screen, no bidi override of the agent's
    assert "\x1b]0;" not in written and "\x1b[2J" not in written and "\u202e" not in written
    assert "pwned" in written


def test_a_long_diff_is_capped_with_how_many_lines_are_left() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    new = "".join(f"LINE {i}\n" for i in range(100))
    out = io.StringIO()
    view = PlainView(out)
    view.apply(ToolCallStart(session_update="tool_call", tool_call_id="e", title="Edit", kind="edit"))
    view.apply(
        ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id="e",
            status="completed",
            content=[tool_diff_content("big.txt", new, old)],
        )
    )
    lines = out.getvalue().splitlines()
    total = len(Diff("big.txt", old, new).unified().splitlines())
    assert f"… {total - DIFF_LINES} more lines" in lines
    assert len([line for line in lines if line.startswith(("+", "-", "@"))]) == DIFF_LINES


@pytest.mark.e2e
def test_a_hostile_agents_plan_thought_diff_output_and_title_are_shown_inert_on_a_terminal(tmp_path) -> None:
    """An agent whose every text ends in ``ESC ] 0;`` (retitle), ``ESC [2J`` (clear) and U+202E,
    on the pipes of the process watch spawns: ``watch --verbose`` on a pty draws all of it, obeys
    none of it."""
    argv = [sys.executable, "-m", "acp_adapter.cli", "watch", "--verbose", "--summary", "off"]
    with everything(hostile=True) as agent:
        term = Screen([*argv, "--agent", shlex.join(agent), "fix"], str(tmp_path))
        try:
            assert term.wait(30) == 0, term.text()
            raw = term.raw.decode(errors="replace")
        finally:
            term.close()
    assert "\x1b]0;pwned" not in raw and "\x1b[2J" not in raw and "\u202e" not in raw
    shown = term.text()
    flat = shown.replace("\n", "")
    for text in ("Read notes.py␛]0;pwned␇␛[2J", "run the tests.␛]0;pwned␇", "3 passed␛]0;pwned␇"):
        assert text in flat, shown  # the plan entry, the thought, the terminal output: shown
    assert term.screen.title == "", term.screen.title  # the window was never retitled


def test_a_long_plan_is_cut_in_the_live_region_around_its_open_entries() -> None:
    from acp_adapter.frontends.watch.extras import plan_renderable

    statuses = ["completed"] * 12 + ["in_progress"] + ["pending"] * 20
    entries = [plan_entry(f"step {i}", status=s) for i, s in enumerate(statuses)]  # type: ignore[arg-type]
    lines = plan_renderable(entries, limit=8).plain.splitlines()
    assert lines[0] == "plan 12/33" and lines[1] == "  … 11 done"
    assert lines[2] == "  ✓ step 11 · medium" and lines[3] == "  ◐ step 12 · medium"
    assert len(lines) == 11 and lines[-1] == "  … 14 more"
    assert len(plan_renderable(entries).plain.splitlines()) == 34  # whole when the turn ends


def test_a_live_thought_is_folded_even_with_verbose_and_whole_once_it_ended() -> None:
    from acp_adapter.frontends.watch.extras import thought_renderable

    thought = "\n".join(f"line {i}" for i in range(10))
    live = thought_renderable(thought, verbose=True, live=True)
    assert live is not None and live.plain.splitlines() == ["💭 line 7", "   line 8", "   line 9"]
    ended = thought_renderable(thought, verbose=True, live=False)
    assert ended is not None and len(ended.plain.splitlines()) == 10
    folded = thought_renderable(thought, verbose=False, live=False)
    assert folded is not None and folded.plain == "💭 line 9  (10 lines; --verbose shows them)"
