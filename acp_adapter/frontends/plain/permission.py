"""Permission for dangerous tools in the plain terminal mode (``acp-progress run``, ``run_agent.py``).

With no ACP client there is nobody to send ``session/request_permission`` to, so the terminal
itself is the client: on a terminal the user is asked ``Allow rm victim.txt? [y/N]`` (anything but
``y``/``yes`` is a no, and so are end of input and Ctrl-C); with no terminal to ask (a pipe, cron,
CI) the request is denied automatically; ``--yes`` allows every request without asking.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import terminal_safe
from acp_adapter.text import flatten
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.toolbox import PermissionDecision, Tool


def permission_question(call: ToolCall) -> str:
    """``Allow rm victim.txt? [y/N] `` — what the tool would do, whole (never cut: nobody can
    approve what they cannot see; the terminal wraps a long one), redacted and terminal-safe. A
    command of several lines is shown as its lines, indented, under the question."""
    command = call.arguments.get("command")
    if call.concern is not None:  # a tool that never asks, asking once: say why
        return terminal_safe(redact_text(f"Allow {flatten(call.name, 200)}? {call.concern.reason} [y/N] "))
    if not (isinstance(command, str) and command.strip()):
        return terminal_safe(redact_text(f"Allow {flatten(call.name, 200)}? [y/N] "))
    shown = terminal_safe(redact_text(command.strip()))
    if "\n" in shown:
        lines = "".join(f"\n    {line}" for line in shown.splitlines())
        return f"Allow this command?{lines}\n[y/N] "
    return f"Allow {shown}? [y/N] "


def parse_answer(line: str) -> bool:
    """Only an explicit yes allows; the default (empty line) is no."""
    return line.strip().lower() in {"y", "yes"}


class TerminalPermission:
    """The plain mode's permission policy (a ``toolbox.PermissionPolicy``)."""

    def __init__(
        self,
        *,
        yes: bool = False,
        stdin: TextIO | None = None,
        out: TextIO | None = None,
        before_ask: Callable[[], None] | None = None,
    ) -> None:
        self.yes = yes
        self._stdin = stdin
        self._out = out
        self._before_ask = before_ask

    @property
    def stdin(self) -> TextIO:
        return self._stdin if self._stdin is not None else sys.stdin

    @property
    def out(self) -> TextIO:
        return self._out if self._out is not None else sys.stdout

    def can_ask(self) -> bool:
        """A person can answer only when input comes from a terminal."""
        isatty = getattr(self.stdin, "isatty", None)
        try:
            return bool(isatty and isatty())
        except (OSError, ValueError):
            return False

    def __call__(self, call: ToolCall, tool: Tool) -> PermissionDecision:
        if self.yes:
            return PermissionDecision(True, automatic=True)
        if not self.can_ask():
            return PermissionDecision(False, automatic=True)
        if self._before_ask is not None:
            self._before_ask()
        self.out.write(permission_question(call))
        self.out.flush()
        try:
            line = self.stdin.readline()
        except (OSError, ValueError):
            self.out.write("\n")
            return PermissionDecision(False)
        if not line:  # end of input: nobody answered
            self.out.write("\n")
            return PermissionDecision(False, automatic=True)
        return PermissionDecision(parse_answer(line))
