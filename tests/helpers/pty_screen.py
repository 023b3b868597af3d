"""What a person sees on a real terminal: a child on a pty whose every byte is fed to a pyte screen,
with the terminal and quick-progress environment of those tests."""

from __future__ import annotations

import os

import pyte

from tests.helpers.acp_agent import ROOT
from tests.helpers.pty_child import PtyChild

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


class Screen(PtyChild):
    """A child on a pty; every byte it writes is fed to a pyte screen."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        super().__init__(argv, cwd, {**ENV, "ACP_PROGRESS_STATE_DIR": os.path.join(cwd, ".state")})
        self.screen = pyte.Screen(100, 30)
        self.stream = pyte.ByteStream(self.screen)

    @property
    def raw(self) -> bytes:
        return self.output

    def on_output(self, chunk: bytes) -> None:
        self.stream.feed(chunk)

    def pump(self, seconds: float, until: str | None = None) -> str:
        self.read_while(seconds, (lambda: until in self.text()) if until is not None else None)
        return self.text()

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)
