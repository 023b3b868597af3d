"""The MCP servers of every session the agent serves: started with a session, prepared before each
of its turns, stopped when it closes, is deleted or freed, or the agent exits.

What the agent's ACP methods need of the editor's MCP servers, in one place: ``session/new``,
``session/load`` and ``session/resume`` start a session's servers (:meth:`SessionServers.start`),
a prompt prepares them (:meth:`SessionServers.prepare`: their tools join the built-in ones, failures
are told once in the session), and every way a session ends stops them. The store remembers each
session's server *names* (never commands, env or headers), so a loaded session can say which server
it had that the editor no longer passes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError

from acp_adapter.agent.session import Session
from acp_adapter.mcp.config import (
    MCP_SERVERS,
    McpConfigError,
    server_names,
    servers_from_settings_file,
    session_server_problems,
)
from acp_adapter.mcp.trust import with_settings_trust
from acp_adapter.tooling.builtin import BUILTIN_TOOLS
from acp_adapter.tooling.toolbox import Toolbox

if TYPE_CHECKING:  # the MCP SDK is imported when a session first has a server (cold start)
    from acp_adapter.config import McpSettings
    from acp_adapter.mcp.manager import McpManager
    from acp_adapter.store import BackgroundWriter, SessionStore

log = logging.getLogger("acp_progress.server")


def _import_sdk() -> None:
    import acp_adapter.mcp.manager
    import acp_adapter.mcp.tools  # noqa: F401


def _settings_servers() -> list[Any]:
    """The settings file's ``[mcp_servers]`` (for their ``trusted`` marks); none when it has a
    mistake (said in the log: the servers are then untrusted, never wrongly trusted)."""
    try:
        return list(servers_from_settings_file())
    except McpConfigError as exc:
        log.warning("the settings file's MCP servers are not read (none is trusted): %s", exc)
        return []


#: What a loaded session is told about a server it had that the editor did not pass again.
NOT_PASSED_AGAIN = "the editor did not pass this server again; its tools are not available"


def refuse_unusable(mcp_servers: Any) -> None:
    """Refuse the request when one of its MCP servers cannot be used as given (a transport the
    agent does not speak, a name its tools could not be told apart by): never ignored silently."""
    problems = session_server_problems(list(mcp_servers or []))
    if problems:
        raise RequestError.invalid_params({"mcpServers": "; ".join(problems)[:4000]})


class SessionServers:
    """Every session's :class:`~acp_adapter.mcp.manager.McpManager`, keyed by session id."""

    def __init__(
        self, store: SessionStore, writer: BackgroundWriter, limits: McpSettings | None = None
    ) -> None:
        self.store = store
        self.writer = writer
        #: the ``[mcp]`` settings every session's servers get
        self.limits = limits
        self._managers: dict[str, McpManager] = {}
        #: per session, the task picking up its MCP tasks left running by an earlier process
        self._resuming: dict[str, asyncio.Task[None]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._sdk_loaded = False
        #: () -> (the ACP connection to the editor, its capabilities, the outbox's flush): the
        #: editor the servers' questions go to (set by the agent)
        self.client: Any = None
        #: the settings file's MCP servers (read once, with the SDK): which ones the person trusts
        self._listed: list[Any] = []

    async def load_sdk(self, wanted: bool) -> None:
        """Import the MCP SDK on a worker thread the first time a session has a server: it takes
        seconds on a busy machine, and the event loop keeps serving the other sessions meanwhile
        (an agent none of whose sessions has a server never imports it)."""
        if wanted and not self._sdk_loaded:
            await anyio.to_thread.run_sync(_import_sdk)
            self._listed = await anyio.to_thread.run_sync(_settings_servers)
            self._sdk_loaded = True

    def start(
        self, session: Session, mcp_servers: Any, had: Sequence[str] = (), why: str = NOT_PASSED_AGAIN
    ) -> None:
        """Start the session's MCP servers in parallel; the first prompt waits for them.

        ``had`` is what the store remembered for a loaded session: a server it had and the client
        no longer passes is told once, in the session."""
        specs = with_settings_trust(list(mcp_servers or []), self._listed)
        names = server_names(specs)
        missing = [n for n in had if n not in names]
        if not specs and not missing:
            return
        from acp_adapter.mcp.manager import McpManager
        from acp_adapter.mcp.tools import McpToolFactory

        manager = McpManager(specs, session.cwd, limits=self.limits)
        if self.client is not None:
            from acp_adapter.mcp.elicitation import SessionQuestions

            manager.questions = SessionQuestions(session.id, self.client)
        manager.factory = McpToolFactory(manager, asyncio.get_running_loop())
        for name in missing[:64]:
            manager.notice(name, why)
        manager.start()
        session.mcp = manager
        self._track_tasks(session, manager, stored=bool(had))
        self._managers[session.id] = manager
        if names:
            session_id = session.id
            self.writer.submit(lambda: self.store.put(MCP_SERVERS, session_id, names))
        log.info("session %s: %d MCP server(s): %s", session.id, len(specs), ", ".join(manager.names))

    def _track_tasks(self, session: Session, manager: McpManager, stored: bool) -> None:
        """The session's MCP tasks are written down while they run; a stored session's tasks left
        running by an earlier process are picked up again (their cards shown, results delivered)."""
        from acp_adapter.agent.session_tasks import SessionTaskLog, resume_tasks

        task_log = SessionTaskLog(self.store, self.writer, session.id, loaded=not stored)
        manager.task_log = task_log
        if not stored:
            return
        old = self._resuming.pop(session.id, None)
        if old is not None:
            old.cancel()
        job = asyncio.ensure_future(resume_tasks(session, manager, task_log, self.store, self.writer))
        self._resuming[session.id] = job

        def done(finished: asyncio.Task[None]) -> None:
            if self._resuming.get(session.id) is finished:
                del self._resuming[session.id]
            if not finished.cancelled() and (exc := finished.exception()) is not None:
                log.warning("picking up the MCP tasks of session %s failed: %r", session.id, exc)

        job.add_done_callback(done)

    def _stop_tasks(self, session_id: str) -> None:
        job = self._resuming.pop(session_id, None)
        if job is not None:
            job.cancel()

    def names_of(self, session_id: str) -> list[str]:
        """The MCP server names a stored session had (on a worker thread)."""
        try:
            names = self.store.get(MCP_SERVERS, session_id)
        except Exception as exc:
            log.warning("could not read the MCP servers of session %s: %s", session_id, exc)
            return []
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    async def stop(self, session_id: str) -> None:
        self._stop_tasks(session_id)
        manager = self._managers.pop(session_id, None)
        if manager is not None:
            await manager.aclose()

    def stop_soon(self, session_id: str) -> None:
        """Stop a freed session's servers in the background (called from a synchronous sweep)."""
        self._stop_tasks(session_id)
        manager = self._managers.pop(session_id, None)
        if manager is None:
            return
        task = asyncio.ensure_future(manager.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def stop_all(self, within: float = 8.0) -> None:
        """Stop every session's servers, in parallel and bounded (the agent is exiting)."""
        for session_id in list(self._resuming):
            self._stop_tasks(session_id)
        managers = list(self._managers.values())
        self._managers.clear()
        jobs = [asyncio.ensure_future(m.aclose(within)) for m in managers] + list(self._closing)
        if jobs:
            await asyncio.wait(jobs, timeout=within + 1)

    async def prepare(self, session: Session) -> None:
        """Before a turn: the session's MCP tools join the built-in ones (lists re-read when a
        server said they changed), and failed servers are told once, in the session."""
        manager = session.mcp
        if manager is None:
            return
        try:
            await manager.prepare_turn()
        except Exception as exc:  # the turn goes on with the servers that are ready
            from acp_adapter.mcp.clean import reason_of

            log.warning("preparing the MCP servers of session %s failed: %s", session.id, reason_of(exc))
        session.toolbox = Toolbox([*BUILTIN_TOOLS, *manager.factory.tools()], session.cwd, session.roots)
        notes = manager.take_notices()
        if notes:
            session.stream.send_message_text("\n".join(f"⚠️ {n}" for n in notes) + "\n\n")
