"""``acp-progress run`` shows what the agent does besides cards and the answer:
the plan as a checklist, an edit's diff under its card (coloured on a terminal), the reasoning as
the live line's detail, usage as a footer — all through the one sanitizer."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from acp_adapter.frontends._updates import Diff
from acp_adapter.frontends.plain.printer import TerminalPrinter
from tests.helpers.acp_agent import agent_env
from tests.helpers.cli_inside import run_cli_inside


def test_run_prints_the_plan_the_diff_and_the_usage(tmp_path: Path) -> None:
    # the command line in this process, on files for its streams (what it prints is the point)
    (tmp_path / "a.py").write_text("# TODO: one\nx = 1\n")
    env = {**os.environ, **agent_env(ACP_PROGRESS_STATE="off")}
    prompt = 'search for TODO and then edit a.py: replace "x = 1" with "x = 2"'
    proc = run_cli_inside(["run", "--yes", prompt], cwd=tmp_path, env=env)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert (tmp_path / "a.py").read_text() == "# TODO: one\nx = 2\n"
    # the whole checklist first, then each entry as it changes, ending complete
    assert "plan 0/2\n  ○ Search for TODO · medium\n  ○ Edit a.py" in out, out
    assert "  ◐ Search for TODO" in out and "plan 2/2\n  ✓ Edit a.py" in out, out
    # the diff under the edit card, uncoloured on a pipe
    assert "   -x = 1\n   +x = 2\n" in out and "\x1b[" not in out, out
    assert out.index("✔ edit_file") < out.index("   +x = 2")
    assert "📊 tokens " in out.splitlines()[-1], out


class _Handle:
    def cancel(self) -> None:
        pass


class _NoTicks:
    """A scheduler whose ticks never come: frames are drawn only when something changes."""

    def every(self, interval: float, fn: Any) -> _Handle:
        return _Handle()


def test_a_terminal_gets_the_diff_coloured_and_the_data_made_safe() -> None:
    out = io.StringIO()
    printer = TerminalPrinter(out, animate=True, scheduler=_NoTicks())  # type: ignore[arg-type]
    hostile = "x = 1\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\n"
    printer.diff(Diff(path="a.py", old="x = 0\n", new=hostile))
    shown = out.getvalue()
    assert "\x1b[32m   " not in shown  # the colour is inside the indent, around the line
    assert "   \x1b[32m+x = 1" in shown and "   \x1b[31m-x = 0" in shown, shown
    for raw in ("\x1b]52", "\x1b[2J", "\u202e"):
        assert raw not in shown, repr(shown)


def test_the_reasoning_is_the_live_line_s_detail_folded_to_its_newest_line() -> None:
    out = io.StringIO()
    printer = TerminalPrinter(out, animate=True, scheduler=_NoTicks())  # type: ignore[arg-type]
    printer.spinner_start("Thinking...")
    printer.thought("First I read the file.\n")
    printer.thought("Then I change line 2\x1b]0;owned\x07.")
    shown = out.getvalue()
    assert "💭 Then I change line 2" in shown, repr(shown)
    assert "\x1b]0;owned" not in shown
    last_frame = shown.rsplit("\x1b[2K", 1)[-1]  # each frame clears the line first
    assert "Then I change" in last_frame and "First I read" not in last_frame, repr(last_frame)
    # on a pipe the reasoning is not printed: it is not the answer
    pipe = io.StringIO()
    quiet = TerminalPrinter(pipe, animate=False)
    quiet.spinner_start("Thinking...")
    quiet.thought("private musing")
    assert "private musing" not in pipe.getvalue()
