"""MCP servers for ``acp-progress run``, which has no ACP session to own them.

The servers and their tools live on an event loop of their own, in a thread (an anyio blocking
portal), for the one prompt ``run`` answers; the synchronous agent loop calls their tools from
its thread exactly as a session's worker does, so cards, permission questions, progress and
cancel are those of the ACP path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence

from anyio.from_thread import start_blocking_portal

from acp_adapter.config import McpSettings
from acp_adapter.mcp.config import McpServerSpec
from acp_adapter.mcp.manager import McpManager
from acp_adapter.mcp.tools import McpTool, McpToolFactory


@contextlib.contextmanager
def mcp_tools_for_run(
    specs: Sequence[McpServerSpec], cwd: str, limits: McpSettings | None = None
) -> Iterator[tuple[list[McpTool], list[str]]]:
    """Start ``specs`` (bounded by their start timeout), yield their tools and the lines the user
    must be told (servers that did not start), and stop every server on the way out. ``limits``:
    the ``[mcp]`` settings (read from the settings file and the environment when not given)."""
    if not specs:
        yield [], []
        return

    async def start() -> tuple[McpManager, list[McpTool], list[str]]:
        manager = McpManager(specs, cwd, limits=limits or McpSettings.from_env())
        manager.factory = McpToolFactory(manager, asyncio.get_running_loop())
        manager.start()
        await manager.prepare_turn()
        tools = manager.factory.tools()
        return manager, tools, manager.take_notices()

    with start_blocking_portal(backend="asyncio") as portal:
        manager, tools, notes = portal.call(start)
        try:
            yield tools, notes
        finally:
            portal.call(manager.aclose)
