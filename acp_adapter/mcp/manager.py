"""The MCP servers of one session, in one anyio task group the session owns.

Servers start in parallel as the session opens; ``session/new`` does not wait for them, the first
prompt does (each bounded by its 10 s start timeout). A server that fails is left out — the
session works without its tools — and the user is told once, in the session. Closing the manager
(session closed, deleted or freed, agent exiting) stops every server and waits, bounded, until
their processes are gone. A server that crashed is started again at most once per turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_adapter.config import McpSettings
from acp_adapter.mcp.clean import reason_of
from acp_adapter.mcp.config import MCP_SERVERS as MCP_SERVERS  # re-exported: where it always was
from acp_adapter.mcp.connection import McpServer, spec_secrets
from acp_adapter.mcp.logs import GUARD, install_guard

log = logging.getLogger("acp_progress.mcp")


class McpManager:
    """Start, keep and stop the MCP servers of one session (all on the agent's event loop)."""

    def __init__(
        self,
        specs: Sequence[Any],
        cwd: str,
        *,
        limits: McpSettings | None = None,
        start_timeout: float | None = None,
    ) -> None:
        self.cwd = cwd
        #: the ``[mcp]`` settings (start and call timeouts, the size limit)
        self.limits = limits if limits is not None else McpSettings()
        self.start_timeout = self.limits.start_timeout if start_timeout is None else start_timeout
        self.servers: list[McpServer] = []
        #: lines the user has not been told yet (told once, at the start of the next turn)
        self._notices: list[str] = []
        self._told: set[tuple[str, str]] = set()
        self._restarted: set[str] = set()  # servers started again during the current turn
        self._skipped = [s for s in specs if not _supported(s)]
        self._specs = [s for s in specs if _supported(s)]
        for spec in self._skipped:
            kind = getattr(spec, "type", None) or type(spec).__name__
            self.notice(getattr(spec, "name", "?"), f"the {kind} transport is not supported")
        self._tg: TaskGroup | None = None
        self._host: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._closed = False
        self._secrets: list[str] = []
        #: builds the toolbox tools of these servers (an ``McpToolFactory``, set by the agent)
        self.factory: Any = None
        #: where the session writes down its running MCP tasks (a ``TaskLog``, set by the agent)
        self.task_log: Any = None
        #: asks the session's person what its servers ask (``SessionQuestions``, set by the agent)
        self.questions: Any = None

    @property
    def names(self) -> list[str]:
        """The server names (what a stored session remembers; never commands, env or headers)."""
        return [str(getattr(s, "name", "")) for s in (*self._specs, *self._skipped)]

    def start(self) -> None:
        """Launch the host task and every server, in parallel; returns at once."""
        if self._host is not None or not self._specs:
            self._ready.set()
            return
        self._secrets = [v for spec in self._specs for v in spec_secrets(spec)]
        install_guard().add_secrets(self._secrets)  # the SDK's own log records never show them
        self._host = asyncio.ensure_future(self._run_host())

    async def _run_host(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for spec in self._specs:
                    server = self._server(spec)
                    server.questions = self.questions
                    self.servers.append(server)
                    tg.start_soon(server.run)
                self._ready.set()
                await self._closing.wait()
                for server in self.servers:
                    tg.start_soon(server.stop)
        except Exception as exc:  # a runner never raises; this is a bug, logged redacted
            log.error("MCP host task failed: %s", reason_of(exc))
        finally:
            self._tg = None
            self._ready.set()

    def notice(self, server: str, reason: str) -> None:
        """Tell the user once that ``server`` is not available, and why."""
        self.note(server, f"is not available: {reason}")

    def note(self, server: str, text: str) -> None:
        """Tell the user once, at the start of the next turn: ``MCP server 'NAME' <text>``."""
        key = (server, text)
        if key not in self._told:
            self._told.add(key)
            self._notices.append(f"MCP server '{server}' {text}")

    def take_notices(self) -> list[str]:
        notes, self._notices = self._notices, []
        return notes

    async def prepare_turn(self) -> None:
        """Before a turn: wait (bounded) for servers still starting, restart budget back to one,
        re-read changed tool lists, and note every server that failed."""
        self._restarted.clear()
        if self._host is None:
            return
        await self._ready.wait()
        if self.servers:
            async with anyio.create_task_group() as tg:
                for server in self.servers:
                    if server.state == "starting":
                        tg.start_soon(server.wait_ready)
        for server in list(self.servers):
            if server.state == "crashed":  # crashed after the last turn: this turn's one restart
                await self.restart(server)
        for server in self.servers:
            if server.state == "ready" and server.tools_stale:
                try:
                    await server.refresh_tools()
                except Exception as exc:
                    log.warning("MCP server %s: re-reading its tools failed: %s", server.name, reason_of(exc))
            if server.state == "failed" and server.error:
                self.notice(server.name, server.error)

    async def restart(self, server: McpServer) -> McpServer | None:
        """Start a crashed server again, at most once per turn; the new one, or None."""
        if self._closed or self._tg is None or server.name in self._restarted:
            return None
        self._restarted.add(server.name)
        await server.stop(within=3.0)
        fresh = self._server(server.spec)
        fresh.questions = self.questions
        self.servers[self.servers.index(server)] = fresh
        self._tg.start_soon(fresh.run)
        log.info("MCP server %s crashed; started again (once this turn)", server.name)
        if await fresh.wait_ready():
            return fresh
        self.notice(fresh.name, fresh.error or "it did not start again")
        return None

    def _server(self, spec: Any) -> McpServer:
        return McpServer(
            spec,
            self.cwd,
            start_timeout=self.start_timeout,
            max_message=self.limits.max_message_bytes,
            stop_grace=self.limits.stop_grace,
        )

    @property
    def call_timeout(self) -> float | None:
        """Seconds one call may take, or None (bounded by cancel only)."""
        return self.limits.call_timeout or None

    def server(self, name: str) -> McpServer | None:
        return next((s for s in self.servers if s.name == name), None)

    async def aclose(self, within: float = 8.0) -> None:
        """Stop every server and wait (bounded) until they are gone. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        host = self._host
        if host is None:
            return
        try:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(host), within)
            if not host.done():
                host.cancel()
        finally:
            GUARD.remove_secrets(self._secrets)


def _supported(spec: Any) -> bool:
    from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

    return isinstance(spec, McpServerStdio | HttpMcpServer | SseMcpServer)
