"""The session requests a front-end makes of its agent, and what the agent said about its sessions.

Why a module of its own: opening, loading, listing and deleting sessions, choosing a mode or a
model, and asking for the session store's flush are requests with their own rules — the agent's
``initialize`` answer says which it offers, each refusal gets one message naming the request, a
``session/list`` whose cursors never end is cut short and said so — apart from starting the agent
and from a prompt's turn. :attr:`SessionRequests.facts` keeps each open session's commands,
modes, options, title and usage as the agent reports them.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from acp import RequestError
from acp.helpers import SessionUpdate
from acp.schema import (
    CurrentModeUpdate,
    HttpMcpServer,
    InitializeResponse,
    McpServerStdio,
    SessionCapabilities,
    SessionInfo,
    SseMcpServer,
)

from acp_adapter.client.agent_errors import AgentError, describe_error
from acp_adapter.client.agent_link import AgentLink
from acp_adapter.client.session_state import SessionFacts
from acp_adapter.client.turn_router import TurnRouter
from acp_adapter.protocol.meta import STORE_FLUSH_METHOD, meta_of
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.client")

McpServer = McpServerStdio | HttpMcpServer | SseMcpServer


class SessionRequests:
    """The session requests of one agent :class:`~.agent_link.AgentLink`; ``initialized`` gives
    the agent's ``initialize`` answer (None before it started), which says what it offers."""

    def __init__(
        self,
        link: AgentLink,
        turns: TurnRouter,
        initialized: Callable[[], InitializeResponse | None],
        mcp_servers: Sequence[McpServer] = (),
    ) -> None:
        self._link = link
        self._turns = turns
        self._initialized = initialized
        #: the MCP servers sent in every ``session/new`` and ``session/load`` (``--mcp-config``,
        #: the settings file's ``[mcp_servers]``): the agent starts them, whichever agent it is
        self.mcp_servers: list[McpServer] = list(mcp_servers)
        #: what each open session's agent said about it (commands, modes, options, title, usage)
        self.facts: dict[str, SessionFacts] = {}
        #: the last :meth:`list_sessions` stopped before the agent's last page (its cursors loop)
        self.list_incomplete = False

    def observe(self, session_id: str, update: SessionUpdate) -> None:
        """An update from the agent: what it says about an open session is kept."""
        facts = self.facts.get(session_id)
        if facts is not None:
            facts.observe(update)

    # ------------------------------------------------------------ what the agent offers

    def _session_capabilities(self) -> SessionCapabilities | None:
        init = self._initialized()
        return init.agent_capabilities.session_capabilities if init and init.agent_capabilities else None

    @property
    def can_load(self) -> bool:
        """The agent said ``loadSession: true`` in ``initialize``."""
        init = self._initialized()
        return bool(init is not None and init.agent_capabilities and init.agent_capabilities.load_session)

    @property
    def can_list(self) -> bool:
        """The agent offers ``session/list`` (``sessionCapabilities.list``)."""
        caps = self._session_capabilities()
        return caps is not None and caps.list is not None

    @property
    def can_delete(self) -> bool:
        """The agent offers ``session/delete`` (``sessionCapabilities.delete``)."""
        caps = self._session_capabilities()
        return caps is not None and caps.delete is not None

    @property
    def flushes_store(self) -> bool:
        """The agent answers :data:`~acp_adapter.protocol.meta.STORE_FLUSH_METHOD` (this package's
        agent says so in ``initialize``: ``_meta.acpProgress.storeFlush``)."""
        meta = meta_of(self._initialized())
        return meta is not None and meta.store_flush is True

    # ------------------------------------------------------------ requests

    async def new_session(self, cwd: str, **kwargs: Any) -> str:
        """Open a session in workspace ``cwd`` (absolute, as ACP requires)."""
        try:
            workspace = os.path.abspath(cwd)  # noqa: ASYNC240 - string work, no I/O
            response = await self._link.ask(
                self._link.connection.new_session(cwd=workspace, mcp_servers=list(self.mcp_servers), **kwargs)
            )
        except RequestError as exc:
            raise AgentError(f"the agent refused to open a session: {describe_error(exc)}") from None
        except ConnectionError as exc:
            raise await self._link.crash_error(exc) from None
        session_id = str(response.session_id)
        self.facts[session_id] = SessionFacts.from_response(response)
        return session_id

    async def load_session(
        self, session_id: str, cwd: str, on_replay: Callable[[SessionUpdate], None] | None = None
    ) -> None:
        """Open a stored session (``session/load``); the agent replays its conversation first, each
        update to ``on_replay`` (dropped when None: a chat that already shows it)."""
        if not self.can_load:
            raise AgentError(
                "the agent cannot load sessions (it answered initialize with loadSession: false)"
            )
        with self._turns.replaying(session_id, on_replay or (lambda _update: None)):
            self.facts[session_id] = SessionFacts()
            try:
                workspace = os.path.abspath(cwd)  # noqa: ASYNC240 - string work, no I/O
                response = await self._link.ask(
                    self._link.connection.load_session(
                        cwd=workspace, session_id=session_id, mcp_servers=list(self.mcp_servers)
                    )
                )
                loaded = SessionFacts.from_response(response)
                facts = self.facts[session_id]
                facts.modes = loaded.modes or facts.modes
                facts.config_options = loaded.config_options or facts.config_options
                await asyncio.sleep(0)  # notifications read before the answer finish their handlers first
            except RequestError as exc:
                said = describe_error(exc)
                raise AgentError(f"the agent could not load session {session_id}: {said}") from None
            except ConnectionError as exc:
                raise await self._link.crash_error(exc) from None

    async def list_sessions(self, cwd: str | None = None, max_pages: int = 100_000) -> list[SessionInfo]:
        """Every session the agent lists (``session/list``), page after page to the end.

        ``max_pages`` only guards against an agent whose cursors never end (or repeat): then
        :attr:`list_incomplete` is set, so the caller can say the list is not whole."""
        if not self.can_list:
            raise AgentError("the agent cannot list sessions (no sessionCapabilities.list in initialize)")
        found: list[SessionInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        self.list_incomplete = False
        workspace = os.path.abspath(cwd) if cwd is not None else None  # noqa: ASYNC240 - string work
        try:
            for _ in range(max_pages):
                page = await self._link.ask(self._link.connection.list_sessions(cwd=workspace, cursor=cursor))
                found.extend(page.sessions)
                cursor = page.next_cursor
                if not cursor:
                    break
                if cursor in seen:  # the agent sends us round in a circle
                    self.list_incomplete = True
                    break
                seen.add(cursor)
            else:
                self.list_incomplete = True
        except RequestError as exc:
            raise AgentError(f"the agent could not list its sessions: {describe_error(exc)}") from None
        except ConnectionError as exc:
            raise await self._link.crash_error(exc) from None
        return found

    async def delete_session(self, session_id: str) -> None:
        """Remove a stored session for good (``session/delete``)."""
        from acp.meta import AGENT_METHODS
        from acp.schema import DeleteSessionRequest, DeleteSessionResponse
        from acp.utils import request_model_from_dict

        if not self.can_delete:
            raise AgentError("the agent cannot delete sessions (no sessionCapabilities.delete in initialize)")
        request = DeleteSessionRequest(session_id=session_id)
        try:
            await self._link.ask(
                request_model_from_dict(
                    self._link.connection._conn,
                    AGENT_METHODS["session_delete"],
                    request,
                    DeleteSessionResponse,
                )
            )
        except RequestError as exc:
            said = describe_error(exc)
            raise AgentError(f"the agent could not delete session {session_id}: {said}") from None
        except ConnectionError as exc:
            raise await self._link.crash_error(exc) from None

    async def set_choice(self, session_id: str, category: str, wanted: str) -> str:
        """``/mode NAME``, ``/model NAME``: pick a value of the session's ``mode`` or ``model``
        config option (``session/set_config_option``), or — for an agent that offers only
        ``modes`` — its mode (``session/set_mode``). Returns the name now set; raises
        :class:`AgentError` saying why not (the agent offers no such choice, no such value, or
        refused)."""
        facts = self.facts.get(session_id) or SessionFacts()
        option = facts.option(category)
        if option is None and not (category == "mode" and facts.modes is not None):
            raise AgentError(f"the agent offers no {category} to choose")
        value = facts.resolve(category, wanted)
        if value is None:
            names = ", ".join(name for _id, name in facts.choices(category)) or "none"
            raise AgentError(f"the agent offers no {category} {wanted!r} (it offers: {names})")
        connection = self._link.connection
        try:
            if option is not None:
                response = await connection.set_config_option(
                    config_id=option.id, session_id=session_id, value=value
                )
                if response is not None and response.config_options:
                    facts.set_config_options(response.config_options)
            else:
                await connection.set_session_mode(session_id=session_id, mode_id=value)
                facts.observe(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=value))
        except RequestError as exc:
            raise AgentError(f"the agent refused to set the {category}: {describe_error(exc)}") from None
        except ConnectionError as exc:
            raise await self._link.crash_error(exc) from None
        return facts.current(category) or value

    async def flush_store(self, within: float) -> bool:
        """Ask the agent to finish its queued session-store writes; True once it says they landed.
        False when it cannot say (it does not offer the method, it is not running, it did not
        answer within ``within`` seconds, or its store did not finish): the caller reads anyway."""
        if not self.flushes_store:
            return False
        try:
            connection = self._link.connection
        except AgentError:
            return False
        try:
            answer = await asyncio.wait_for(connection.ext_method(STORE_FLUSH_METHOD, {}), within)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            log.info(
                "the agent did not flush its session store: %s", redact_text(str(exc) or type(exc).__name__)
            )
            return False
        return isinstance(answer, dict) and answer.get("flushed") is True
