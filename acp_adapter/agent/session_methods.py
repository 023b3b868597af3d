"""The session-level ACP methods of the agent: new, load, resume, list, close, delete, the mode
and config-option switches (answered by the agent's
:class:`~acp_adapter.agent.session_options.SessionOptions`), and the store flush extension method
(:data:`~acp_adapter.protocol.meta.STORE_FLUSH_METHOD`).

A mixin of :class:`~acp_adapter.server.ProgressAgent` (which keeps initialize and prompt; the
turns run in :class:`~acp_adapter.agent.prompt_turns.PromptTurns`): every method here works on the
agent's live sessions, its session store and its outbox, so each session a method makes live gets
the same parts — toolbox, recorder, MCP servers, its stored configuration (mode, model, "always"
answers) and the commands update.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError
from acp.schema import (
    CloseSessionResponse,
    DeleteSessionResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SessionInfo,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from acp_adapter.agent.session import Session, history_from_json
from acp_adapter.agent.session_config import (
    SESSION_CONFIG,
    SessionConfig,
    mode_state,
)
from acp_adapter.agent.session_mcp import refuse_unusable
from acp_adapter.agent.turn_outcome import check_same_workspace, iso_now
from acp_adapter.mcp.config import MCP_SERVERS, MCP_TASKS
from acp_adapter.protocol.meta import STORE_FLUSH_METHOD
from acp_adapter.store import StoredSession, StoreError
from acp_adapter.store.recorder import OPEN_TURNS, SESSION_HOLDERS, replay_updates, this_host
from acp_adapter.tooling.builtin import default_toolbox

if TYPE_CHECKING:
    from acp_adapter.agent.outbox import UpdateOutbox
    from acp_adapter.agent.session import LiveSessions
    from acp_adapter.agent.session_mcp import SessionServers
    from acp_adapter.agent.session_options import SessionOptions
    from acp_adapter.store import BackgroundWriter, SessionStore
    from acp_adapter.store.recorder import ConversationRecorder

__all__ = ["SessionMethods"]

log = logging.getLogger("acp_progress.server")

#: the longest ``session/list`` waits for the writer's backlog (a lock held by another process
#: stalls the writer; the list then answers from what is on disk)
LIST_FLUSH_S = 1.0
#: the longest ``session/close`` waits for the session's cancelled turn to end
CLOSE_WAIT_S = 2.0
#: the longest a store flush request waits for the writer (its caller is a reader that would
#: rather show what is on disk than wait on a database that is away)
EXT_FLUSH_S = 5.0

#: the most additional directories a session may name
MAX_ROOTS = 32

_BUSY = "a prompt is running in this session; cancel it first"


class SessionMethods:
    """ACP session methods (a mixin: the agent supplies the attributes declared here)."""

    if TYPE_CHECKING:
        sessions: LiveSessions
        store: SessionStore
        _writer: BackgroundWriter
        recorder: ConversationRecorder
        mcp: SessionServers
        _outbox: UpdateOutbox | None
        options: SessionOptions

        @property
        def outbox(self) -> UpdateOutbox: ...

    # ------------------------------------------------------------ configuration (delegated)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """The older ``session/set_mode``: the same switch as the ``mode`` config option."""
        await self.options.set_option(await self._session_for_prompt(session_id), "mode", mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: ``mode`` or ``model``; the answer holds every option."""
        session = await self._session_for_prompt(session_id)
        await self.options.set_option(session, config_id, value)
        return SetSessionConfigOptionResponse(
            config_options=self.options.listed(self.options.config_of(session))
        )

    # ------------------------------------------------------------ making sessions live

    def _make_live(
        self,
        session: Session,
        cwd: str,
        title: str | None,
        config: SessionConfig,
        mcp_servers: Any,
        had: Any,
        roots: tuple[str, ...] = (),
        stored: StoredSession | None = None,
    ) -> None:
        session.roots = roots
        session.toolbox = default_toolbox(cwd, roots)
        session.policy = self.options.policy_for(session.id, config)
        used = stored.record.updated_at if stored is not None else None  # opened again is not used
        self.recorder.open_session(session.id, cwd, title, updated_at=used)
        self.mcp.start(session, mcp_servers, had)

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        await self._check_cwd(cwd)
        refuse_unusable(mcp_servers)
        roots = await self._check_roots(additional_directories)
        await self.mcp.load_sdk(bool(mcp_servers))
        session = self.sessions.create(cwd, self.outbox)
        config = self.options.defaults()
        self._make_live(session, cwd, None, config, mcp_servers, (), roots)
        # after the answer (the client learns the session id first)
        asyncio.get_running_loop().call_soon(self.options.announce, session)
        log.info("new session %s in %s", session.id, cwd)
        return NewSessionResponse(
            session_id=session.id,
            modes=mode_state(config),
            config_options=self.options.listed(config),
        )

    async def _stored_for(self, session_id: str, cwd: str) -> tuple[StoredSession | None, SessionConfig]:
        live = self.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session_id, "details": _BUSY})
        await self._writer.flush_async()
        # reads: a $/cancel_request answers at once, the thread finishes on its own (abandoned)
        stored = await anyio.to_thread.run_sync(self._load_stored, session_id, abandon_on_cancel=True)
        if stored is None and live is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        check_same_workspace(session_id, stored.record.cwd if stored is not None else live.cwd, cwd)  # type: ignore[union-attr]
        config = await anyio.to_thread.run_sync(
            self.options.stored_config, session_id, abandon_on_cancel=True
        )
        return stored, config

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Replay a stored conversation as ``session/update`` notifications, then answer; later
        prompts go on with its model history, mode and model. Every card arrives in its final state."""
        await self._check_cwd(cwd)
        refuse_unusable(mcp_servers)
        roots = await self._check_roots(additional_directories)
        stored, config = await self._stored_for(session_id, cwd)
        if stored is None:  # only the store has what a replay needs
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        await self.mcp.stop(session_id)  # a live copy's servers: the client passes the servers now
        had = await anyio.to_thread.run_sync(self.mcp.names_of, session_id)
        await self.mcp.load_sdk(bool(mcp_servers or had))
        session = self.sessions.adopt(session_id, cwd, self.outbox, history_from_json(stored.history))
        self._make_live(session, cwd, stored.record.title, config, mcp_servers, had, roots, stored)
        for update in replay_updates(session_id, stored.events):
            self.outbox.submit(session_id, update)
        if stored.record.title:
            info = SessionInfoUpdate(
                session_update="session_info_update",
                title=stored.record.title,
                updated_at=iso_now(stored.record.updated_at),
            )
            self.outbox.submit(session_id, info)
        self.options.announce(session)
        try:
            await self.outbox.flush()
        except asyncio.CancelledError:  # called off mid-replay ($/cancel_request): not left half-loaded
            self._forget_live(session_id)
            self.mcp.stop_soon(session_id)
            raise
        log.info("loaded session %s (%d stored entries) in %s", session_id, len(stored.events), cwd)
        return LoadSessionResponse(modes=mode_state(config), config_options=self.options.listed(config))

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """Go on with a session without a replay (the client still shows it), with its stored
        history, mode and model and the MCP servers the client passes now."""
        await self._check_cwd(cwd)
        refuse_unusable(mcp_servers)
        roots = await self._check_roots(additional_directories)
        live = self.sessions.find(session_id)
        stored, config = await self._stored_for(session_id, cwd)
        if live is not None and live.policy is not None and stored is None:
            config = live.policy.config  # state off: the live copy is all there is
        await self.mcp.stop(session_id)
        had = await anyio.to_thread.run_sync(self.mcp.names_of, session_id)
        await self.mcp.load_sdk(bool(mcp_servers or had))
        history = history_from_json(stored.history) if stored is not None else list(live.history)  # type: ignore[union-attr]
        session = self.sessions.adopt(session_id, cwd, self.outbox, history)
        self._make_live(
            session,
            cwd,
            stored.record.title if stored is not None else None,
            config,
            mcp_servers,
            had,
            roots,
            stored,
        )
        self.options.announce(session)
        await self.outbox.flush()
        log.info("resumed session %s in %s", session_id, cwd)
        return ResumeSessionResponse(modes=mode_state(config), config_options=self.options.listed(config))

    async def _session_for_prompt(self, session_id: str) -> Session:
        """The live session, or one freed for idleness (or from an earlier process) brought back
        from the store with its history and configuration, without a replay: the client shows it."""
        try:
            return self.sessions.get(session_id)
        except RequestError:
            await self._writer.flush_async()
            stored = await anyio.to_thread.run_sync(self._load_stored, session_id)
            if stored is None:
                raise
            config = await anyio.to_thread.run_sync(self.options.stored_config, session_id)
            cwd = stored.record.cwd
            had = await anyio.to_thread.run_sync(self.mcp.names_of, session_id)
            await self.mcp.load_sdk(bool(had))
            session = self.sessions.adopt(session_id, cwd, self.outbox, history_from_json(stored.history))
            session.toolbox = default_toolbox(cwd)
            session.policy = self.options.policy_for(session_id, config)
            self.recorder.open_session(session_id, cwd, stored.record.title)
            self.mcp.start(
                session, [], had, "it was stopped with the idle session; load the session again to reconnect"
            )
            log.info("session %s brought back from the store for a prompt", session_id)
            return self.sessions.get(session_id)

    # ------------------------------------------------------------ list, close, delete

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The stored sessions, newest first, 50 a page (``cursor`` from the previous page).

        Bounded in time: the writer's backlog is waited for at most :data:`LIST_FLUSH_S` (another
        process may hold the database's lock), and the read itself never waits for the writer."""
        await self._writer.flush_async(LIST_FLUSH_S)
        try:
            page = await anyio.to_thread.run_sync(
                lambda: self.store.list_sessions(cwd, cursor, 50), abandon_on_cancel=True
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

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Free a live session: its running turn is cancelled (waited for up to :data:`CLOSE_WAIT_S`),
        its MCP servers are stopped; the stored conversation stays (``session/load`` or
        ``session/resume`` bring it back). Closing a session that is not live changes nothing."""
        live = self.sessions.find(session_id)
        if live is None:
            return CloseSessionResponse()
        if live.cancel is not None:
            live.cancel.cancel("the session was closed")
            if live.turn_done is not None:
                await asyncio.wait({live.turn_done}, timeout=CLOSE_WAIT_S)
        self._forget_live(session_id)
        await self.mcp.stop(session_id)
        log.info("closed session %s", session_id)
        return CloseSessionResponse()

    def _forget_live(self, session_id: str) -> None:
        self.sessions.close(session_id)
        self.recorder.forget(session_id)
        if self._outbox is not None:
            self._outbox.forget_observers(session_id)

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        """Remove a session for good: from memory and from the store (its events, history and
        configuration). A session whose prompt is running is refused (cancel it first), as
        ``session/load`` does; an id neither live nor stored succeeds with nothing to do, as
        the protocol asks (deleting is idempotent)."""
        live = self.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session_id, "details": _BUSY})
        await self._writer.flush_async()  # a turn still on its way to disk must not outlive the delete
        holder = await anyio.to_thread.run_sync(
            self.recorder.holder_elsewhere, session_id, self.sessions.idle_timeout
        )
        if holder is not None:  # its turns would have nowhere to go: refused, and said why
            raise RequestError.invalid_request({"sessionId": session_id, "details": _held_by(holder)})
        stored = await anyio.to_thread.run_sync(self._delete_stored, session_id)
        if live is None and not stored:
            log.info("delete of session %s: not known, nothing to do", session_id)
            return DeleteSessionResponse()
        self._forget_live(session_id)
        await self.mcp.stop(session_id)
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
        return {"flushed": await self._writer.flush_async(EXT_FLUSH_S)}

    def _delete_stored(self, session_id: str) -> bool:
        with self.store.batch():
            self.store.remove(SESSION_HOLDERS, session_id)
            self.store.remove(OPEN_TURNS, session_id)
            self.store.remove(MCP_SERVERS, session_id)
            self.store.remove(MCP_TASKS, session_id)
            self.store.remove(SESSION_CONFIG, session_id)
            return self.store.delete(session_id)

    def _load_stored(self, session_id: str) -> StoredSession | None:
        """The stored session (on a worker thread), its last turn closed with an "(interrupted)"
        note first if the process that began it died before it ended."""
        try:
            self.recorder.close_interrupted(session_id)
        except Exception as exc:  # the conversation still loads, without the note
            log.warning("could not close the interrupted turn of session %s: %s", session_id, exc)
        return self.store.load(session_id)

    async def _check_roots(self, directories: list[str] | None) -> tuple[str, ...]:
        """The session's additional directories, checked like ``cwd`` (absolute, existing
        directories; at most :data:`MAX_ROOTS`): the tools may read and search there too."""
        if not directories:
            return ()
        if len(directories) > MAX_ROOTS:
            raise RequestError.invalid_params(
                {"additionalDirectories": f"{len(directories)} given", "details": f"at most {MAX_ROOTS}"}
            )
        roots: list[str] = []
        for directory in directories:
            if not isinstance(directory, str) or not os.path.isabs(directory):
                raise RequestError.invalid_params(
                    {
                        "additionalDirectories": str(directory)[:200],
                        "details": "each must be an absolute path",
                    }
                )
            if not await anyio.Path(directory).is_dir():
                raise RequestError.invalid_params(
                    {"additionalDirectories": directory[:200], "details": "not an existing directory"}
                )
            roots.append(str(await anyio.Path(directory).resolve()))
        return tuple(dict.fromkeys(roots))

    async def _check_cwd(self, cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be an absolute path"})
        if not await anyio.Path(cwd).is_dir():
            raise RequestError.invalid_params({"cwd": cwd, "details": "cwd is not an existing directory"})


def _held_by(holder: dict[str, Any]) -> str:
    """Why a delete is refused: the session is open in another process (named, so it can be found)."""
    pid, host = holder.get("pid"), holder.get("host")
    where = f"process {pid}" + (f" on {host}" if isinstance(host, str) and host != this_host() else "")
    return (
        f"this session is open in another acp-progress {where}; close it there (or let it be freed "
        "when idle) before deleting it"
    )
