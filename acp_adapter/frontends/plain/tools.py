"""Tool cards for the plain terminal (``acp-progress run``): the same lifecycle an ACP client sees,
drawn by :class:`~acp_adapter.frontends.plain.printer.TerminalPrinter`.

Without it ``run 'wait 6 seconds'`` showed nothing for six seconds while the tool reported twelve
steps: progress only reached an ACP client. This observer gives every tool a live line on a
terminal (spinner, title, progress bar with percentage, the tool's message, elapsed time) and a
line per step on a pipe, then ``✔``/``✖`` with the result. Permission questions go to the plain
mode's policy (:mod:`.plain_permission`).
"""

from __future__ import annotations

from typing import Any

from acp_adapter.frontends._updates import Diff
from acp_adapter.frontends.plain.printer import TerminalPrinter
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.display import FileDiff
from acp_adapter.tooling.presentation import PresentationRegistry, render_label, render_title
from acp_adapter.tooling.toolbox import PermissionDecision, PermissionPolicy, Tool, ToolOutcome


class PlainToolObserver:
    """A ``toolbox.ToolObserver`` that draws on the plain terminal."""

    def __init__(
        self,
        printer: TerminalPrinter,
        permission: PermissionPolicy,
        registry: PresentationRegistry | None = None,
    ) -> None:
        self.printer = printer
        self.permission = permission
        self.registry = registry or PresentationRegistry()

    def _title(self, call: ToolCall, tool: Tool | None) -> str:
        meta: Any = tool.extension if tool is not None and tool.extension else None
        presentation = self.registry.lookup(call.name, None, meta)
        label, preview = render_label(call.name, call.arguments, presentation)
        return render_title(label, preview)

    def tool_started(self, call: ToolCall, tool: Tool | None) -> None:
        self.printer.tool_start(self._title(call, tool))

    def tool_progress(
        self, call: ToolCall, value: float | None, total: float | None, message: str | None
    ) -> None:
        self.printer.tool_progress(value, total, message)

    def tool_finished(self, call: ToolCall, outcome: ToolOutcome) -> None:
        self.printer.spinner_stop()
        mark = "✔" if outcome.ok else "✖"
        detail = outcome.summary if outcome.ok else outcome.error or "failed"
        self.printer.note(f"{mark} {call.name} {detail}")
        for shown in outcome.display:
            if isinstance(shown, FileDiff):
                self.printer.diff(Diff(path=shown.path, old=shown.old_text or "", new=shown.new_text))

    def request_permission(self, call: ToolCall, tool: Tool) -> PermissionDecision | bool:
        return self.permission(call, tool)
