"""The sessions there are: ``session/list`` (the stored ones), ``session/close`` (a live one freed,
its conversation kept), ``session/delete`` (gone for good), a session freed for idleness let go
of, and the store flush extension method (:data:`~acp_adapter.protocol.meta.STORE_FLUSH_METHOD`)
a reader in another process asks before it reads the store.

Each of them waits for the store a bounded time: another process may hold the database's lock,
and a reader would rather see what is on disk than wait on a database that is away.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anyio
from acp import RequestError
from acp.schema import CloseSessionResponse, DeleteSessionResponse, ListSessionsResponse, SessionInfo

from acp_adapter.agent.session_config import SESSION_CONFIG
from acp_adapter.agent.session_parts import BUSY, SessionParts
from acp_adapter.agent.turn_outcome import iso_now
from acp_adapter.mcp.config import MCP_SERVERS, MCP_TASKS
from acp_adapter.protocol.meta import STORE_FLUSH_METHOD
from acp_adapter.store import MemoryStore, StoreError
from acp_adapter.store.recorder import OPEN_TURNS
from acp_adapter.store.session_holds import SESSION_HOLDERS, this_host

__all__ = ["CLOSE_WAIT_S", "EXT_FLUSH_S", "LIST_FLUSH_S", "SessionRoster"]

log = logging.getLogger("acp_progress.server")

#: the longest ``session/list`` waits for the writer's backlog (a lock held by another process
#: stalls the writer; the list then answers from what is on disk)
LIST_FLUSH_S = 1.0
#: the longest ``session/close`` waits for the session's cancelled turn to end
CLOSE_WAIT_S = 2.0
#: the longest a store flush request waits for the writer (its caller is a reader that would
#: rather show what is on disk than wait on a database that is away)
EXT_FLUSH_S = 5.0


class SessionRoster:
    """list, close, delete, the store flush, and letting go of a session freed for idleness."""

    def __init__(self, parts: SessionParts) -> None:
        self._parts = parts

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None) -> ListSessionsResponse:
        """The stored sessions, newest first, 50 a page (``cursor`` from the previous page).

        Bounded in time: the writer's backlog is waited for at most :data:`LIST_FLUSH_S` (another
        process may hold the database's lock), and the read itself never waits for the writer."""
        store = self._parts.store
        await self._parts.writer.flush_async(LIST_FLUSH_S)
        try:
            page = await anyio.to_thread.run_sync(
                lambda: store.list_sessions(cwd, cursor, 50), abandon_on_cancel=True
            )
        except StoreError as exc:
            if cursor is None:  # nothing of the request was wrong: the store could not answer
                raise RequestError.internal_error({"details": str(exc)}) from None
            raise RequestError.invalid_params({"cursor": cursor, "details": str(exc)}) from None
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r.session_id, cwd=r.cwd, title=r.title, updated_at=iso_now(r.updated_at)
                )
                for r in page.sessions
            ],
            next_cursor=page.next_cursor,
        )

    async def close_session(self, session_id: str) -> CloseSessionResponse:
        """Free a live session: its running turn is cancelled (waited for up to :data:`CLOSE_WAIT_S`),
        its MCP servers are stopped; the stored conversation stays (``session/load`` or
        ``session/resume`` bring it back). Closing a session that is not live changes nothing."""
        parts = self._parts
        live = parts.sessions.find(session_id)
        if live is None:
            return CloseSessionResponse()
        if live.cancel is not None:
            live.cancel.cancel("the session was closed")
            if live.turn_done is not None:
                await asyncio.wait({live.turn_done}, timeout=CLOSE_WAIT_S)
        parts.let_go(session_id)
        await parts.mcp.stop(session_id)
        log.info("closed session %s", session_id)
        return CloseSessionResponse()

    async def delete_session(self, session_id: str) -> DeleteSessionResponse:
        """Remove a session for good: from memory and from the store (its events, history and
        configuration). A session whose prompt is running is refused (cancel it first), as
        ``session/load`` does; an id neither live nor stored succeeds with nothing to do, as
        the protocol asks (deleting is idempotent)."""
        parts = self._parts
        live = parts.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session_id, "details": BUSY})
        await parts.writer.flush_async()  # a turn still on its way to disk must not outlive the delete
        holder = await anyio.to_thread.run_sync(
            parts.recorder.holder_elsewhere, session_id, parts.sessions.idle_timeout
        )
        if holder is not None:  # its turns would have nowhere to go: refused, and said why
            raise RequestError.invalid_request({"sessionId": session_id, "details": _held_by(holder)})
        stored = await anyio.to_thread.run_sync(self._delete_stored, session_id)
        if live is None and not stored:
            log.info("delete of session %s: not known, nothing to do", session_id)
            return DeleteSessionResponse()
        parts.let_go(session_id)
        await parts.mcp.stop(session_id)
        log.info("deleted session %s", session_id)
        return DeleteSessionResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """ACP extension methods (``_…``): :data:`STORE_FLUSH_METHOD` answers once every store
        write queued so far landed (``{"flushed": true}``), or after :data:`EXT_FLUSH_S`
        (``false``). Why: a turn is written off the event loop, and its answer waits for that
        write only a bounded time and not at all when it was cancelled; a reader of the store in
        another process asks first, so it sees every turn this agent answered."""
        if method != STORE_FLUSH_METHOD:
            raise RequestError.method_not_found(f"_{method}")
        return {"flushed": await self._parts.writer.flush_async(EXT_FLUSH_S)}

    def forget_freed(self, session_id: str) -> None:
        """A session freed for idleness: the recorder lets go of it, its MCP servers stop; with
        state off (the in-memory store) it is gone altogether, so memory stays bounded."""
        parts = self._parts
        parts.forget(session_id)
        parts.mcp.stop_soon(session_id)
        if isinstance(parts.store, MemoryStore):
            store = parts.store
            parts.writer.submit(lambda: store.delete(session_id))

    def _delete_stored(self, session_id: str) -> bool:
        store = self._parts.store
        with store.batch():
            store.remove(SESSION_HOLDERS, session_id)
            store.remove(OPEN_TURNS, session_id)
            store.remove(MCP_SERVERS, session_id)
            store.remove(MCP_TASKS, session_id)
            store.remove(SESSION_CONFIG, session_id)
            return store.delete(session_id)


def _held_by(holder: dict[str, Any]) -> str:
    """Why a delete is refused: the session is open in another process (named, so it can be found)."""
    pid, host = holder.get("pid"), holder.get("host")
    where = f"process {pid}" + (f" on {host}" if isinstance(host, str) and host != this_host() else "")
    return (
        f"this session is open in another acp-progress {where}; close it there (or let it be freed "
        "when idle) before deleting it"
    )
