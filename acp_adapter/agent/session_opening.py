"""Making sessions live: ``session/new``, ``session/load`` (a stored conversation replayed),
``session/resume`` (gone on with, no replay), ``session/fork`` (a copy of a stored one), and a
session freed for idleness — or left by an earlier process — brought back for a prompt.

Every session made live here gets the same parts: its toolbox (the workspace and the additional
directories, checked like ``cwd``), its policy with the stored configuration (mode, model, "always"
answers), its recorder entry, its MCP servers, and the commands update.

A fork is copied inside the session store (:meth:`~acp_adapter.store.SessionStore.fork`): the
conversation never travels through the agent, so forking a long session costs a fraction of
loading it. The fork has the source's title, conversation, model history, mode and model; from then
on the two are independent — a prompt to one is never seen in the other, and deleting one keeps
the other.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

import anyio
from acp import RequestError
from acp.schema import (
    ForkSessionResponse,
    LoadSessionResponse,
    NewSessionResponse,
    ResumeSessionResponse,
    SessionInfoUpdate,
)

from acp_adapter.agent.session import Session, history_from_json, new_session_id
from acp_adapter.agent.session_config import SESSION_CONFIG, SessionConfig, mode_state
from acp_adapter.agent.session_mcp import refuse_unusable
from acp_adapter.agent.session_parts import BUSY, SessionParts
from acp_adapter.agent.turn_outcome import check_same_workspace, iso_now
from acp_adapter.store import StoredSession
from acp_adapter.store.recorder import replay_updates
from acp_adapter.tooling.builtin import default_toolbox

__all__ = ["MAX_ROOTS", "SessionOpening", "check_cwd", "check_roots"]

log = logging.getLogger("acp_progress.server")

#: the most additional directories a session may name
MAX_ROOTS = 32


class SessionOpening:
    """new, load, resume, fork, and the bring-back of a session a prompt names."""

    def __init__(self, parts: SessionParts) -> None:
        self._parts = parts

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, additional_directories: list[str] | None = None
    ) -> NewSessionResponse:
        parts = self._parts
        roots = await _checked_request(cwd, mcp_servers, additional_directories)
        await parts.mcp.load_sdk(bool(mcp_servers))
        session = parts.sessions.create(cwd, parts.outbox())
        config = parts.options.defaults()
        self._make_live(session, cwd, None, config, mcp_servers, (), roots)
        # after the answer (the client learns the session id first)
        asyncio.get_running_loop().call_soon(parts.options.announce, session)
        log.info("new session %s in %s", session.id, cwd)
        return NewSessionResponse(
            session_id=session.id, modes=mode_state(config), config_options=parts.options.listed(config)
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
    ) -> LoadSessionResponse:
        """Replay a stored conversation as ``session/update`` notifications, then answer; later
        prompts go on with its model history, mode and model. Every card arrives in its final state."""
        parts = self._parts
        roots = await _checked_request(cwd, mcp_servers, additional_directories)
        stored, config = await self._stored_for(session_id, cwd)
        if stored is None:  # only the store has what a replay needs
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        await parts.mcp.stop(session_id)  # a live copy's servers: the client passes the servers now
        had = await anyio.to_thread.run_sync(parts.mcp.names_of, session_id)
        await parts.mcp.load_sdk(bool(mcp_servers or had))
        outbox = parts.outbox()
        session = parts.sessions.adopt(session_id, cwd, outbox, history_from_json(stored.history))
        self._make_live(session, cwd, stored.record.title, config, mcp_servers, had, roots, stored)
        for update in replay_updates(session_id, stored.events):
            outbox.submit(session_id, update)
        if stored.record.title:
            info = SessionInfoUpdate(
                session_update="session_info_update",
                title=stored.record.title,
                updated_at=iso_now(stored.record.updated_at),
            )
            outbox.submit(session_id, info)
        parts.options.announce(session)
        try:
            await outbox.flush()
        except asyncio.CancelledError:  # called off mid-replay ($/cancel_request): not left half-loaded
            parts.let_go(session_id)
            parts.mcp.stop_soon(session_id)
            raise
        log.info("loaded session %s (%d stored entries) in %s", session_id, len(stored.events), cwd)
        return LoadSessionResponse(modes=mode_state(config), config_options=parts.options.listed(config))

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
    ) -> ResumeSessionResponse:
        """Go on with a session without a replay (the client still shows it), with its stored
        history, mode and model and the MCP servers the client passes now."""
        parts = self._parts
        roots = await _checked_request(cwd, mcp_servers, additional_directories)
        live = parts.sessions.find(session_id)
        stored, config = await self._stored_for(session_id, cwd)
        if live is not None and live.policy is not None and stored is None:
            config = live.policy.config  # state off: the live copy is all there is
        await parts.mcp.stop(session_id)
        had = await anyio.to_thread.run_sync(parts.mcp.names_of, session_id)
        await parts.mcp.load_sdk(bool(mcp_servers or had))
        history = history_from_json(stored.history) if stored is not None else list(live.history)  # type: ignore[union-attr]
        session = parts.sessions.adopt(session_id, cwd, parts.outbox(), history)
        title = stored.record.title if stored is not None else None
        self._make_live(session, cwd, title, config, mcp_servers, had, roots, stored)
        parts.options.announce(session)
        await parts.outbox().flush()
        log.info("resumed session %s in %s", session_id, cwd)
        return ResumeSessionResponse(modes=mode_state(config), config_options=parts.options.listed(config))

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
    ) -> ForkSessionResponse:
        """Copy session ``session_id`` into a new live session in ``cwd`` (any workspace: a fork
        may go on elsewhere) with the MCP servers passed now. A source whose prompt is running is
        refused, as ``session/load`` refuses it: half a turn is no conversation to go on from."""
        parts = self._parts
        roots = await _checked_request(cwd, mcp_servers, additional_directories)
        live = parts.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session_id, "details": BUSY})
        await parts.writer.flush_async()  # the source's last turn is in the copy
        new_id = new_session_id()
        forked = await anyio.to_thread.run_sync(self._fork_stored, session_id, new_id, cwd)
        if forked is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        stored, config = forked
        await parts.mcp.load_sdk(bool(mcp_servers))
        session = parts.sessions.adopt(new_id, cwd, parts.outbox(), history_from_json(stored.history))
        self._make_live(session, cwd, stored.record.title, config, mcp_servers, (), roots)
        parts.options.announce(session)
        await parts.outbox().flush()
        log.info("forked session %s from %s in %s", new_id, session_id, cwd)
        return ForkSessionResponse(
            session_id=new_id, modes=mode_state(config), config_options=parts.options.listed(config)
        )

    async def session_for_prompt(self, session_id: str) -> Session:
        """The live session, or one freed for idleness (or from an earlier process) brought back
        from the store with its history and configuration, without a replay: the client shows it."""
        parts = self._parts
        try:
            return parts.sessions.get(session_id)
        except RequestError:
            await parts.writer.flush_async()
            stored = await anyio.to_thread.run_sync(self._load_stored, session_id)
            if stored is None:
                raise
            config = await anyio.to_thread.run_sync(parts.options.stored_config, session_id)
            cwd = stored.record.cwd
            had = await anyio.to_thread.run_sync(parts.mcp.names_of, session_id)
            await parts.mcp.load_sdk(bool(had))
            session = parts.sessions.adopt(session_id, cwd, parts.outbox(), history_from_json(stored.history))
            session.toolbox = default_toolbox(cwd)
            session.policy = parts.options.policy_for(session_id, config)
            parts.recorder.open_session(session_id, cwd, stored.record.title)
            parts.mcp.start(
                session, [], had, "it was stopped with the idle session; load the session again to reconnect"
            )
            log.info("session %s brought back from the store for a prompt", session_id)
            return parts.sessions.get(session_id)

    # ------------------------------------------------------------ internals

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
        parts = self._parts
        session.roots = roots
        session.toolbox = default_toolbox(cwd, roots)
        session.policy = parts.options.policy_for(session.id, config)
        used = stored.record.updated_at if stored is not None else None  # opened again is not used
        parts.recorder.open_session(session.id, cwd, title, updated_at=used)
        parts.mcp.start(session, mcp_servers, had)

    async def _stored_for(self, session_id: str, cwd: str) -> tuple[StoredSession | None, SessionConfig]:
        parts = self._parts
        live = parts.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session_id, "details": BUSY})
        await parts.writer.flush_async()
        # reads: a $/cancel_request answers at once, the thread finishes on its own (abandoned)
        stored = await anyio.to_thread.run_sync(self._load_stored, session_id, abandon_on_cancel=True)
        if stored is None and live is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        check_same_workspace(session_id, stored.record.cwd if stored is not None else live.cwd, cwd)  # type: ignore[union-attr]
        config = await anyio.to_thread.run_sync(
            parts.options.stored_config, session_id, abandon_on_cancel=True
        )
        return stored, config

    def _load_stored(self, session_id: str) -> StoredSession | None:
        """The stored session (on a worker thread), its last turn closed with an "(interrupted)"
        note first if the process that began it died before it ended."""
        try:
            self._parts.recorder.close_interrupted(session_id)
        except Exception as exc:  # the conversation still loads, without the note
            log.warning("could not close the interrupted turn of session %s: %s", session_id, exc)
        return self._parts.store.load(session_id)

    def _fork_stored(
        self, source_id: str, new_id: str, cwd: str
    ) -> tuple[StoredSession, SessionConfig] | None:
        """On a worker thread: the source's interrupted turn closed (so the fork shows where it
        broke off), the copy stored with the source's configuration; None when not stored."""
        parts = self._parts
        try:
            parts.recorder.close_interrupted(source_id)
        except Exception as exc:  # the fork is still made, without the note
            log.warning("could not close the interrupted turn of session %s: %s", source_id, exc)
        config = parts.options.stored_config(source_id)
        with parts.store.batch():
            stored = parts.store.fork(source_id, new_id, cwd, time.time())
            if stored is None:
                return None
            parts.store.put(SESSION_CONFIG, new_id, config.to_json())
        return stored, config


async def check_cwd(cwd: str) -> None:
    """A session's workspace: an absolute path to an existing directory."""
    if not os.path.isabs(cwd):
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be an absolute path"})
    if not await anyio.Path(cwd).is_dir():
        raise RequestError.invalid_params({"cwd": cwd, "details": "cwd is not an existing directory"})


async def _checked_request(
    cwd: str, mcp_servers: Any, additional_directories: list[str] | None
) -> tuple[str, ...]:
    """What every request that makes a session live is checked for before anything is done: its
    workspace, its MCP servers (a type the agent cannot use is refused) and its additional
    directories, which it returns resolved."""
    await check_cwd(cwd)
    refuse_unusable(mcp_servers)
    return await check_roots(additional_directories)


async def check_roots(directories: list[str] | None) -> tuple[str, ...]:
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
                {"additionalDirectories": str(directory)[:200], "details": "each must be an absolute path"}
            )
        if not await anyio.Path(directory).is_dir():
            raise RequestError.invalid_params(
                {"additionalDirectories": directory[:200], "details": "not an existing directory"}
            )
        roots.append(str(await anyio.Path(directory).resolve()))
    return tuple(dict.fromkeys(roots))
