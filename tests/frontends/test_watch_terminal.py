"""``watch`` on a real terminal (a pty): the permission question pauses the animation, stays
visible and echoes what is typed; Ctrl-C at the question cancels the turn and exits at once with
the terminal restored. Also ``run … | head`` stays quiet."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time

import pytest

from tests.helpers.acp_agent import ROOT
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE
from tests.helpers.piped_agent import piped_progress_agent
from tests.helpers.pty_child import PtyChild

pytestmark = pytest.mark.e2e

ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "ACP_PROGRESS_EMBEDDED_DELAY": "0.3",
    "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
    "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.1",
    "TERM": "xterm-256color",
    "COLUMNS": "80",
    "LINES": "24",
}
PROMPT = "run `rm victim.txt`"
QUESTION = "Allow Running rm victim.txt? [y/N] "


class Terminal(PtyChild):
    """A child process on the slave side of a pty; the test reads and types on the master."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        super().__init__(argv, cwd, ENV)

    def read_for(self, seconds: float, until: bytes | None = None) -> bytes:
        start = len(self.output)
        self.read_while(seconds, (lambda: until in self.output[start:]) if until is not None else None)
        return self.output[start:]


@pytest.fixture(params=["acp_adapter.cli"], ids=["agent-process"])
def watch_terminal(request, tmp_path):
    """``watch PROMPT`` on a pty; ``acp_adapter.cli`` spawns its agent (a process of its own out of
    the terminal's process group, which pipes its bytes to this project's agent served in the
    test's process: the agent's process starting proves nothing about watch's Ctrl-C), and a test
    that only looks at the screen asks for
    :data:`~tests.helpers.cli_agent_inside.CLI_AGENT_INSIDE` (the agent inside the command line's
    process: its own process proves nothing there)."""
    (tmp_path / "victim.txt").write_text("precious\n")
    with contextlib.ExitStack() as stack:
        agent: list[str] = []
        if request.param == "acp_adapter.cli":
            agent = ["--agent", stack.enter_context(piped_progress_agent(ENV))]
        term = Terminal([sys.executable, "-m", request.param, "watch", *agent, PROMPT], str(tmp_path))
        yield term, tmp_path
        term.close()


@pytest.mark.parametrize("watch_terminal", [CLI_AGENT_INSIDE], ids=["agent-inside"], indirect=True)
def test_the_question_pauses_the_animation_stays_visible_and_echoes_keys(watch_terminal):
    term, ws = watch_terminal
    before = term.read_for(30, until=QUESTION.encode())
    assert QUESTION.encode() in before, before[-500:]
    assert "⠋".encode() in before or "⠙".encode() in before, "cards animate before the question"
    quiet = term.read_for(0.6)
    assert quiet == b"", f"nothing is drawn while the question waits: {quiet!r}"
    assert (ws / "victim.txt").exists()
    term.type(b"y")
    echoed = term.read_for(2, until=b"y")
    assert echoed == b"y", "the terminal echoes the typed key"
    term.type(b"\r")
    assert term.wait(30) == 0
    assert not (ws / "victim.txt").exists()
    text = term.output.decode(errors="replace")
    assert "— stop reason: end_turn" in text
    assert text.rfind("\x1b[?25h") > text.rfind("\x1b[?25l"), "the cursor is shown at the end"


def test_ctrl_c_at_the_question_cancels_the_turn_and_exits_in_one_press(watch_terminal):
    term, ws = watch_terminal
    assert QUESTION.encode() in term.read_for(30, until=QUESTION.encode())
    pressed = time.monotonic()
    term.type(b"\x03")
    code = term.wait(5)
    assert code == 130, term.output[-400:]
    assert time.monotonic() - pressed < 3
    assert (ws / "victim.txt").exists(), "the command did not run"
    text = term.output.decode(errors="replace")
    assert "cancelled" in text
    assert text.rfind("\x1b[?25h") > text.rfind("\x1b[?25l"), "the cursor is restored"


@pytest.mark.parametrize("command", ["run", "watch"])
def test_piping_into_head_exits_quietly(tmp_path, command):
    """The command line's stdout going away is the point: watch's agent is a process that pipes its
    bytes to this project's agent served in the test's process (run's agent is inside it)."""
    env = {**ENV, "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0.01"}
    with contextlib.ExitStack() as stack:
        agent = ""
        if command == "watch":
            agent = f"--agent {shlex.quote(stack.enter_context(piped_progress_agent(env)))} "
        proc = subprocess.run(
            f"{sys.executable} -m acp_adapter.cli {command} --yes {agent}'search for TODO and list files'"
            " | head -n 1",
            shell=True,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
        )
    assert proc.returncode == 0
    assert len(proc.stdout.splitlines()) == 1
    assert proc.stderr == "", proc.stderr
