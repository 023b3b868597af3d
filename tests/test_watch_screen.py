"""What a person sees on a real terminal (a pty, read back through pyte): the progress bar of
``watch`` and ``run``, the answered permission line never redrawn over, and ``chat``'s prompt line
with its conversation."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

import pyte
import pytest

from .conftest import ROOT

ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "ACP_PROGRESS_EMBEDDED_DELAY": "0.1",
    "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
    "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.1",
    "TERM": "xterm-256color",
    "COLUMNS": "100",
    "LINES": "30",
    "PROMPT_TOOLKIT_NO_CPR": "1",  # pyte does not answer cursor-position requests (a terminal does)
}


class Screen:
    """A child on a pty; every byte it writes is fed to a pyte screen."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(cwd)
            os.execvpe(argv[0], argv, {**ENV, "ACP_PROGRESS_STATE_DIR": os.path.join(cwd, ".state")})
        self.screen = pyte.Screen(100, 30)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""

    def pump(self, seconds: float, until: str | None = None) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.02)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.raw += chunk
                self.stream.feed(chunk)
            if until is not None and until in self.text():
                break
        return self.text()

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pump(0.1)
                return os.waitstatus_to_exitcode(status)
        return None

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


@pytest.fixture
def screens():
    opened: list[Screen] = []

    def open_screen(args: list[str], cwd: str) -> Screen:
        screen = Screen([sys.executable, "-m", "acp_adapter.cli", *args], cwd)
        opened.append(screen)
        return screen

    yield open_screen
    for screen in opened:
        screen.close()


@pytest.mark.parametrize("command", ["watch", "run"])
def test_a_tool_with_a_total_shows_a_progress_bar_with_percentage(screens, tmp_path, command) -> None:
    args = (
        [command, "wait 2 seconds"] if command == "run" else [command, "--summary", "off", "wait 2 seconds"]
    )
    term = screens(args, str(tmp_path))
    shown = term.pump(20, until="50%")
    bar_line = next((line for line in shown.splitlines() if "50%" in line), "")
    assert "█" * 10 + "░" * 10 in bar_line, shown
    assert "Working on long task" in bar_line and "step 2 of 4" in bar_line
    if command == "watch":
        assert " · 1." in bar_line or " · 0." in bar_line, f"elapsed beside the bar: {bar_line!r}"
    assert term.wait(20) == 0
    final = term.text()
    assert "finished after 2s" in final


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
    term.pump(5, until="stop reason: end_turn")
    term.type(b"what is 3*7\r")
    shown = term.pump(15, until="3*7 = 21")
    assert "2+2 = 4" in shown and "3*7 = 21" in shown, shown
    term.pump(5, until="stop reason: end_turn\n")
    term.type(b"\x04")  # Ctrl-D at the prompt
    assert term.wait(10) == 0


def test_ctrl_c_at_the_chat_prompt_exits_130(screens, tmp_path) -> None:
    term = screens(["chat", "--summary", "off"], str(tmp_path))
    term.pump(20, until="Ctrl-D quits")
    term.pump(5, until="\n›")
    term.type(b"\x03")
    assert term.wait(5) == 130
