"""``chat`` on a terminal (a real pty): the banner names the agent, ``/bogus`` is answered
locally, and the history is kept in the state directory, 0600."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.helpers.acp_agent import ROOT
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE
from tests.helpers.pty_child import PtyChild

pytestmark = pytest.mark.e2e


def chat(tmp_path: Path) -> PtyChild:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_EMBEDDED_DELAY": "0",
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        "ACP_PROGRESS_STATE_DIR": str(tmp_path / "state"),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
        "LINES": "24",
        # the pty does not answer cursor-position requests (a terminal does): without this, a key
        # typed while the prompt waits 2 s for the answer is taken for it
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    (tmp_path / "work").mkdir()
    # the agent is served inside the chat's process: its own process proves nothing here
    argv = [sys.executable, "-m", CLI_AGENT_INSIDE, "chat"]
    return PtyChild(argv, str(tmp_path / "work"), env)


def until(term: PtyChild, text: bytes, seconds: float = 30) -> bytes:
    start = len(term.output)
    term.read_while(seconds, lambda: text in term.output[start:])
    return term.output[start:]


def test_banner_names_the_agent_bogus_is_local_history_is_private(tmp_path: Path) -> None:
    term = chat(tmp_path)
    try:
        seen = until(term, "›".encode())  # prompt_toolkit draws it apart from its space
        banner = seen.decode(errors="replace")
        assert "chat with acp-progress" in banner, banner  # agentInfo from initialize
        assert sys.executable not in banner, "not the interpreter's path"
        term.type(b"/bogus\r")
        answered = until(term, b"/help lists them", 10).decode(errors="replace")
        assert "unknown command /bogus; /help lists them" in answered
        term.type(b"/quit\r")
        assert term.wait(20) == 0
    finally:
        term.close()
    history = tmp_path / "state" / "chat_history"
    assert "/bogus" in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    # a second chat finds it (prompt_toolkit's FileHistory reads it back)
    from prompt_toolkit.history import FileHistory

    assert "/bogus" in list(FileHistory(str(history)).load_history_strings())
