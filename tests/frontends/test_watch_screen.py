"""What a person sees on a real terminal (a pty, read back through pyte): the progress bar of
``watch`` and ``run``, the answered permission line never redrawn over, and ``chat``'s prompt line
with its conversation."""

from __future__ import annotations

import sys
import time

import pytest

from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE
from tests.helpers.piped_agent import piped_progress_agent
from tests.helpers.pty_screen import ENV, Screen

pytestmark = pytest.mark.e2e


@pytest.fixture
def screens():
    """Opens the command line on a pty. Its agent runs inside that process
    (:mod:`tests.helpers.cli_agent_inside`) unless ``agent_process``: what the screen shows is the
    point, and a second process per test proves nothing there — but where Ctrl-C is pressed, an
    agent process of its own (out of the terminal's process group, its turn cancelled over the
    pipe: :func:`piped_agent`) is part of what is tested."""
    opened: list[Screen] = []

    def open_screen(args: list[str], cwd: str, *, agent_process: bool = False) -> Screen:
        command = "acp_adapter.cli" if agent_process else CLI_AGENT_INSIDE
        screen = Screen([sys.executable, "-m", command, *args], cwd)
        opened.append(screen)
        return screen

    yield open_screen
    for screen in opened:
        screen.close()


@pytest.fixture
def piped_agent(tmp_path):
    """``--agent`` for a command line run as ``acp_adapter.cli`` where Ctrl-C is pressed: a process
    of its own out of the terminal's process group (its turn cancelled over the pipe), which pipes
    its bytes to this project's agent served in the test's process with the screen's settings (an
    agent's process starting proves nothing about the front-end's Ctrl-C)."""
    env = {**ENV, "ACP_PROGRESS_STATE_DIR": str(tmp_path / ".state")}
    with piped_progress_agent(env) as agent:
        yield ["--agent", agent]


@pytest.mark.parametrize("command", ["watch", "run"])
def test_a_tool_with_a_total_shows_a_progress_bar_with_percentage(screens, tmp_path, command) -> None:
    # 1 s in two steps of 0.5 s: half-way after the first (the bar's half, as long as with more steps)
    args = (
        [command, "wait 1 seconds"] if command == "run" else [command, "--summary", "off", "wait 1 seconds"]
    )
    term = screens(args, str(tmp_path), agent_process=command == "run")  # run: no agent, as it is
    shown = term.pump(20, until="50%")
    bar_line = next((line for line in shown.splitlines() if "50%" in line), "")
    assert "█" * 10 + "░" * 10 in bar_line, shown
    assert "Working on long task" in bar_line and "step 1 of 2" in bar_line
    if command == "watch":
        assert " · 1." in bar_line or " · 0." in bar_line, f"elapsed beside the bar: {bar_line!r}"
    assert term.wait(20) == 0
    final = term.text()
    assert "finished after 1s" in final


def test_the_answered_permission_line_is_never_redrawn_over(screens, tmp_path) -> None:
    (tmp_path / "victim.txt").write_text("x")
    term = screens(
        ["watch", "--summary", "off", "run `rm victim.txt` and then wait 1 seconds"], str(tmp_path)
    )
    question = "🔐 Allow Running rm victim.txt? [y/N]"
    assert question in term.pump(20, until=question)
    term.type(b"y\r")
    assert term.wait(20) == 0, term.text()
    final = term.text()
    assert f"{question} y" in final, final  # the question and the answer typed stay on the screen
    assert "— stop reason: end_turn" in final
    assert not (tmp_path / "victim.txt").exists()


def test_chat_on_a_terminal_keeps_a_conversation_at_a_prompt_line(screens, tmp_path) -> None:
    term = screens(["chat", "--summary", "off"], str(tmp_path))
    term.pump(20, until="Ctrl-D quits")
    assert "\n›" in term.pump(5, until="\n›"), term.text()
    term.type(b"what is 2+2\r")
    term.pump(15, until="2+2 = 4")
    _until_prompt(term)
    term.type(b"what is 3*7\r")
    shown = term.pump(15, until="3*7 = 21")
    assert "2+2 = 4" in shown and "3*7 = 21" in shown, shown
    _until_prompt(term)
    term.type(b"\x04")  # Ctrl-D at the prompt (typed once the prompt is there to read it)
    assert term.wait(10) == 0, term.text()


def _until_prompt(term: Screen, within: float = 15) -> None:
    """Wait until the turn ended and the chat shows its prompt line again (the last line drawn)."""

    def at_prompt() -> bool:
        lines = [line for line in term.text().splitlines() if line.strip()]
        return len(lines) >= 2 and lines[-1].startswith("›") and "stop reason" in lines[-2]

    term.read_while(within, at_prompt)
    assert at_prompt(), term.text()


def test_ctrl_c_at_the_chat_prompt_exits_130(screens, piped_agent, tmp_path) -> None:
    term = screens(["chat", "--summary", "off", *piped_agent], str(tmp_path), agent_process=True)
    term.pump(20, until="Ctrl-D quits")
    term.pump(5, until="\n›")
    term.type(b"\x03")
    assert term.wait(5) == 130
    # exit 130, and not ~30 lines of "Task exception was never retrieved … KeyboardInterrupt"
    # (stderr goes to the same pty)
    raw = term.raw.decode(errors="replace")
    assert "Traceback" not in raw and "KeyboardInterrupt" not in raw and "never retrieved" not in raw, raw


def test_a_markdown_answer_is_rendered_not_printed_raw(screens, tmp_path) -> None:
    """The embedded model answers a command run with Markdown: inline code and a fenced block."""
    term = screens(["watch", "--yes", "--summary", "off", "run `echo hello-md`"], str(tmp_path))
    assert term.wait(30) == 0, term.text()
    shown = term.text()
    assert "I ran echo hello-md. Output:" in shown, shown  # the backticks are styling, not text
    assert "```" not in shown and "`echo" not in shown, shown
    assert any(line.strip() == "hello-md" for line in shown.splitlines()), shown  # the block's body
    assert "— stop reason: end_turn" in shown


def _session_ids(raw: bytes) -> list[str]:
    import re

    return re.findall(r"new session ([0-9a-zA-Z_-]+)", raw.decode(errors="replace"))


def test_chat_new_opens_a_new_session_and_quit_exits_0(screens, tmp_path) -> None:
    term = screens(["chat", "--summary", "off"], str(tmp_path))
    term.pump(20, until="Ctrl-D quits")
    term.pump(5, until="\n›")
    term.type(b"what is 2+2\r")
    term.pump(15, until="stop reason: end_turn")
    term.type(b"/new\r")
    term.pump(15, until="new session ")
    ids = _session_ids(term.raw)
    assert len(ids) == 1, term.text()
    term.type(b"/new\r")
    deadline = time.monotonic() + 10
    while len(_session_ids(term.raw)) < 2 and time.monotonic() < deadline:
        term.pump(0.2)
    second = _session_ids(term.raw)
    assert len(second) == 2 and second[0] != second[1], term.text()  # each /new is a new session
    term.type(b"what is 3*7\r")
    assert "3*7 = 21" in term.pump(15, until="3*7 = 21")  # the new session answers
    term.pump(5, until="stop reason: end_turn\n")
    term.type(b"/quit\r")
    assert term.wait(10) == 0, term.text()
    assert "Traceback" not in term.raw.decode(errors="replace")


def test_ctrl_c_during_a_chat_turn_cancels_it_and_the_next_prompt_works(
    screens, piped_agent, tmp_path
) -> None:
    term = screens(["chat", "--summary", "off", *piped_agent], str(tmp_path), agent_process=True)
    term.pump(20, until="Ctrl-D quits")
    term.pump(5, until="\n›")
    term.type(b"wait 10 seconds\r")
    term.pump(20, until="Working on long task")
    t0 = time.monotonic()
    term.type(b"\x03")  # the terminal is cooked during a turn: the line discipline sends SIGINT
    shown = term.pump(5, until="cancelled")
    assert "cancelled" in shown, shown
    assert time.monotonic() - t0 < 2, "the turn was not cancelled within 2 s"
    term.pump(5, until="\n›")
    term.type(b"what is 2+2\r")
    assert "2+2 = 4" in term.pump(15, until="2+2 = 4"), term.text()  # back at the prompt, and it works
    term.pump(5, until="stop reason: end_turn\n")
    assert term.wait(0.5) is None  # still running: the first Ctrl-C only cancelled the turn
    term.type(b"\x04")
    assert term.wait(10) == 0, term.text()
    raw = term.raw.decode(errors="replace")
    assert "Traceback" not in raw, raw
