"""``acp-progress run``: one prompt in a plain terminal, with no ACP client at all (the routing
order's last channel). The agent loop is handed in by the command line (``run_agent.AIAgent``):
only the command line imports the top-level script, as for ``serve``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from acp_adapter.cancel import CancelToken
from acp_adapter.frontends.plain.permission import TerminalPermission
from acp_adapter.frontends.plain.printer import TerminalPrinter
from acp_adapter.frontends.plain.tools import PlainToolObserver

if TYPE_CHECKING:
    from acp_adapter.config import Settings

#: Builds the prompt's agent loop from keyword arguments (``run_agent.AIAgent``'s).
LoopFactory = Callable[..., Any]


def run_plain(
    prompt: str,
    cwd: str,
    settings: Settings,
    *,
    agent_loop: LoopFactory,
    yes: bool = False,
    mcp_servers: Sequence[Any] = (),
) -> int:
    """One prompt in a plain terminal: live spinner line, tool progress, tool notes, streamed answer.

    Dangerous tools (``run_command``, an MCP tool not marked read-only) ask on the terminal, are
    denied automatically when there is no terminal to ask, and run unasked only with ``yes``
    (``--yes``). ``mcp_servers`` are started for this prompt and their tools offered beside the
    built-in ones."""
    if not mcp_servers:
        return _run_plain(prompt, cwd, settings, yes, [], agent_loop)
    from acp_adapter.mcp.plain import mcp_tools_for_run

    with mcp_tools_for_run(mcp_servers, cwd) as (tools, notes):
        for note in notes:
            print(f"acp-progress run: {note}", file=sys.stderr)
        return _run_plain(prompt, cwd, settings, yes, tools, agent_loop)


def _run_plain(
    prompt: str, cwd: str, settings: Settings, yes: bool, extra_tools: Sequence[Any], agent_loop: LoopFactory
) -> int:
    from acp_adapter.tooling.builtin import BUILTIN_TOOLS
    from acp_adapter.tooling.toolbox import Toolbox

    printer = TerminalPrinter()
    cancel = CancelToken()
    permission = TerminalPermission(yes=yes, before_ask=printer.prepare_question)
    agent = agent_loop(
        settings=settings,
        toolbox=Toolbox([*BUILTIN_TOOLS, *extra_tools], cwd),
        printer=printer,
        cancel=cancel,
        permission_callback=permission,
        # tool cards on the terminal: a live line with a progress bar, a line per step on a pipe
        tool_observer=PlainToolObserver(printer, permission),
    )
    try:
        result = agent.run_conversation(prompt)
    except KeyboardInterrupt:
        cancel.cancel("interrupted")
        printer.spinner_stop("interrupted")
        return 130
    finally:
        from acp_adapter.tooling.builtin import kill_started_processes

        kill_started_processes()  # background jobs (``sleep 300 &``) do not outlive the run
        close = getattr(agent.model, "close", None)
        if callable(close):
            close()
    printer.finish_answer()
    if result.usage is not None:
        printer.usage(result.usage.total_tokens, result.usage.context_window)
    return 0 if result.error is None else 1
