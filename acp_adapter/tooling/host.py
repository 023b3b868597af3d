"""The editor's own files and terminals, as the tools see them: a :class:`ToolHost`.

Why: a client that advertises ``fs.readTextFile`` has unsaved buffers the disk does not, one that
advertises ``fs.writeTextFile`` wants to apply the agent's edits itself, and one that advertises
``terminal`` wants to show commands running. The tools ask ``ctx.host`` when it offers the
capability and work locally otherwise; the ACP side implements the protocol
(:mod:`acp_adapter.agent.client_fs`). A host's failure is a :class:`~.toolbox.ToolError` with the
client's message: it fails that tool call, never the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from acp_adapter.cancel import CancelToken
from acp_adapter.tooling.calls import ToolCall


@dataclass(frozen=True)
class TerminalRun:
    """How a command run in the client's terminal ended."""

    terminal_id: str
    output: str
    exit_code: int | None
    signal: str | None = None
    truncated: bool = False


class CardTerminal(Protocol):
    """A command's output shown as a terminal on its card, for a client that runs no terminal of
    its own but renders one from the card (each method is called on the tool's worker thread)."""

    #: the id the card's terminal content and ``_meta`` name
    terminal_id: str

    def started(self, cwd: str) -> None:
        """The command started in ``cwd``: the card shows its terminal."""
        ...

    def output(self, data: str) -> None:
        """More of the command's output (only what is new since the last call)."""
        ...

    def exited(self, exit_code: int | None, signal: str | None) -> None:
        """The command ended: its exit status on the card."""
        ...


class ToolHost(Protocol):
    """What the client offers the tools (each method is called on the tool's worker thread)."""

    reads_files: bool
    writes_files: bool
    runs_terminals: bool

    def read_text(self, path: str) -> str:
        """The file's text as the client has it (its unsaved buffer, if any)."""
        ...

    def write_text(self, path: str, content: str) -> None:
        """Have the client write (and show) the file."""
        ...

    def card_terminal(self, call: ToolCall) -> CardTerminal | None:
        """The card of ``call`` as a terminal for a command run here, when the client renders
        one from the card (None: it does not)."""
        ...

    def run_terminal(
        self, call: ToolCall, command: str, cwd: str, timeout: float, cancel: CancelToken
    ) -> TerminalRun:
        """Run ``command`` in a client terminal shown on ``call``'s card; killed on cancel or
        timeout, always released."""
        ...
