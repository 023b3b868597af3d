"""``session/fork``: a new session that starts as a copy of a stored one.

A mixin of :class:`~acp_adapter.server.ProgressAgent`, beside
:class:`~acp_adapter.agent.session_methods.SessionMethods` (whose helpers it uses). The copy is made
inside the session store (:meth:`~acp_adapter.store.SessionStore.fork`): the conversation never
travels through the agent, so forking a long session costs a fraction of loading it. The fork has
the source's title, conversation, model history, mode and model; from then on the two are
independent — a prompt to one is never seen in the other, and deleting one keeps the other.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio
from acp import RequestError
from acp.schema import ForkSessionResponse

from acp_adapter.agent.session import history_from_json, new_session_id
from acp_adapter.agent.session_config import SESSION_CONFIG, mode_state
from acp_adapter.agent.session_mcp import refuse_unusable

if TYPE_CHECKING:
    from acp_adapter.agent.session_config import SessionConfig
    from acp_adapter.agent.session_methods import SessionMethods
    from acp_adapter.store import StoredSession

    _Base = SessionMethods
else:
    _Base = object

__all__ = ["SessionFork"]

log = logging.getLogger("acp_progress.server")


class SessionFork(_Base):
    """The ``session/fork`` method (a mixin of the agent, after :class:`SessionMethods`)."""

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """Copy session ``session_id`` into a new live session in ``cwd`` (any workspace: a fork
        may go on elsewhere) with the MCP servers passed now. A source whose prompt is running is
        refused, as ``session/load`` refuses it: half a turn is no conversation to go on from."""
        await self._check_cwd(cwd)
        refuse_unusable(mcp_servers)
        roots = await self._check_roots(additional_directories)
        live = self.sessions.find(session_id)
        if live is not None and live.cancel is not None:
            raise RequestError.invalid_request(
                {"sessionId": session_id, "details": "a prompt is running in this session; cancel it first"}
            )
        await self._writer.flush_async()  # the source's last turn is in the copy
        new_id = new_session_id()
        forked = await anyio.to_thread.run_sync(self._fork_stored, session_id, new_id, cwd)
        if forked is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": f"unknown session id {session_id}"}
            )
        stored, config = forked
        await self.mcp.load_sdk(bool(mcp_servers))
        session = self.sessions.adopt(new_id, cwd, self.outbox, history_from_json(stored.history))
        self._make_live(session, cwd, stored.record.title, config, mcp_servers, (), roots)
        self.options.announce(session)
        await self.outbox.flush()
        log.info("forked session %s from %s in %s", new_id, session_id, cwd)
        return ForkSessionResponse(
            session_id=new_id,
            modes=mode_state(config),
            config_options=self.options.listed(config),
        )

    def _fork_stored(
        self, source_id: str, new_id: str, cwd: str
    ) -> tuple[StoredSession, SessionConfig] | None:
        """On a worker thread: the source's interrupted turn closed (so the fork shows where it
        broke off), the copy stored with the source's configuration; None when not stored."""
        try:
            self.recorder.close_interrupted(source_id)
        except Exception as exc:  # the fork is still made, without the note
            log.warning("could not close the interrupted turn of session %s: %s", source_id, exc)
        config = self.options.stored_config(source_id)
        with self.store.batch():
            stored = self.store.fork(source_id, new_id, cwd, time.time())
            if stored is None:
                return None
            self.store.put(SESSION_CONFIG, new_id, config.to_json())
        return stored, config
