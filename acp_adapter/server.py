"""The ACP agent: initialize, sessions, prompt, cancel — and the protected stdio entry point.

Each prompt is a :class:`~acp_adapter.agent.turn.ProgressTurn` — the API agent developers get —
whose ``agent_callbacks()`` wire the agent loop (``run_agent.AIAgent``, injected by the command line
as ``turn_runner``) on a worker thread; :class:`~acp_adapter.agent.prompt_turns.PromptTurns` runs
them. Before the prompt response is returned the turn is ended (every open card closed) and the
outbox flushed, so the client sees every update of the turn, in order, before the response — on
success, error, cancel and callback failure alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from acp import PROTOCOL_VERSION
from acp.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AuthenticateResponse,
    CloseSessionResponse,
    DeleteSessionResponse,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    LogoutCapabilities,
    LogoutResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    ResumeSessionResponse,
    SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionForkCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from acp_adapter._version import __version__
from acp_adapter.agent.commands import parse_command
from acp_adapter.agent.heartbeat import Heartbeats
from acp_adapter.agent.model_backends import ModelBackends
from acp_adapter.agent.permission_audit import PermissionAudit
from acp_adapter.agent.prompt_turns import PromptTurns, TurnParts, TurnRunner
from acp_adapter.agent.routes import agent_connection
from acp_adapter.agent.session import LiveSessions
from acp_adapter.agent.session_mcp import SessionServers
from acp_adapter.agent.session_opening import SessionOpening
from acp_adapter.agent.session_options import SessionOptions
from acp_adapter.agent.session_parts import SessionParts
from acp_adapter.agent.session_roster import SessionRoster
from acp_adapter.agent.sign_in import SignIn, auth_methods
from acp_adapter.cancel import SHUTTING_DOWN
from acp_adapter.config import Settings
from acp_adapter.events import UpdateOutbox, shared_outbox
from acp_adapter.models import ChatModel
from acp_adapter.protocol.backlog import BacklogProbe, peer_backlog_probe
from acp_adapter.protocol.meta import ProgressMeta, meta_field
from acp_adapter.store import BackgroundWriter, SessionStore, open_store
from acp_adapter.store.recorder import ConversationRecorder
from acp_adapter.text import prompt_to_text
from acp_adapter.tooling.builtin import kill_started_processes
from acp_adapter.tooling.presentation import PresentationRegistry

if TYPE_CHECKING:
    from acp_adapter.summary import SummaryFactory

__all__ = [
    "HANGUP_GRACE",
    "ProgressAgent",
    "TurnRunner",
    "agent_connection",
    "exit_if_turns_stuck",
    "serve",
    "serve_connection",
]

log = logging.getLogger("acp_progress.server")


#: Seconds a running turn gets to finish (cancelled) after the client hung up; then it is abandoned,
#: so the agent exits within about twice this whatever the turn is doing.
HANGUP_GRACE = 0.8


class ProgressAgent:
    """An ACP agent (it implements the SDK's Agent methods; it does not subclass ``acp.Agent``).

    Each ACP method is answered by an object it holds: ``opening`` (new, load, resume, fork),
    ``roster`` (list, close, delete, the store flush), ``options`` (modes, models, config options,
    commands), ``turns`` (prompts) and ``sign_in``."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        turn_runner: TurnRunner,
        model: ChatModel | None = None,
        scheduler: Heartbeats | None = None,
        registry: PresentationRegistry | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.turn_runner = turn_runner
        #: the client's name from ``initialize`` (``clientInfo.name``) as sent: redacted and bounded
        #: where it is written, so the redactor is not loaded before the first answer
        self.client_name: str | None = None
        #: ``clientCapabilities`` from ``initialize``: fs and terminal the tools then use
        self.client_capabilities: Any = None
        #: the model selector's back-ends (a model passed in belongs to the caller, who closes it)
        self.backends = ModelBackends(self.settings, model)
        #: heartbeats of every turn; by default the connection's own event loop times them
        #: (``loop.call_later``), so an ACP agent needs no scheduler thread
        self.scheduler = scheduler
        self.registry = registry or PresentationRegistry()
        self.sessions = LiveSessions(
            max_sessions=self.settings.max_sessions, idle_timeout=self.settings.session_idle_timeout
        )
        #: the durable copy of every conversation (SQLite unless ACP_PROGRESS_STATE=off); writes
        #: go through a thread of their own, never the event loop
        self.store, self._writer, self.recorder = _open_persistence(self.settings, store)
        self._conn: Any = None
        self._outbox: UpdateOutbox | None = None
        #: what the client has not read of our output yet (set by :func:`serve` for real stdio):
        #: the outbox holds tool progress while it is non-empty, so a slow editor gets fresh values
        self.backlog: BacklogProbe | None = None
        #: progress summaries (ACP_PROGRESS_SUMMARY, off by default here): one per running turn,
        #: fed by an outbox observer, so they see exactly the stream the client sees
        self.summaries: SummaryFactory | None = _summary_factory(self.settings)
        #: every session's MCP servers (started, prepared and stopped with the session)
        self.mcp = _session_servers(self)
        #: set by :func:`agent_connection` once it routes ``session/delete``, ``session/resume`` (with
        #: close and fork) and ``logout``, which the SDK's router does not: only then are they advertised
        self.routes_delete = self.routes_resume = self.routes_logout = False
        #: ``authenticate``/``logout``: what ``serve --setup`` saved lives in this settings file
        self.sign_in = SignIn(_settings_file())
        #: the session methods' answerers (see the class docstring)
        self.options, self.opening, self.roster = _session_objects(self)
        #: the permission audit (who answered, where, what)
        self.audit = PermissionAudit(self.store, lambda: self.client_name)
        #: the prompts' turns: each a ProgressTurn driving the agent loop on a worker thread
        self.turns = PromptTurns(_turn_parts(self))

    # ------------------------------------------------------------ connection plumbing

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    @property
    def outbox(self) -> UpdateOutbox:
        """The connection's one ordered path: the outbox a :class:`ProgressTurn` or a callback
        factory given the same connection finds too, so their updates never overtake ours."""
        if self._outbox is None:
            loop = asyncio.get_running_loop()
            connected = self._conn is not None  # a bare agent (no connection yet) has nothing to share
            self._outbox = (
                shared_outbox(self._conn, loop, backlog=self.backlog)
                if connected
                else UpdateOutbox(self._conn, loop, backlog=self.backlog)
            )
        return self._outbox

    async def hang_up(self, grace: float = HANGUP_GRACE) -> None:
        """The client hung up: give running turns ``grace`` seconds to finish cancelled, then
        abandon the rest (their prompt tasks stop waiting for their workers) and shut down.

        A turn whose work ignores its cancel signal must not keep the agent alive after the
        editor is gone: see also :func:`exit_if_turns_stuck`.
        """
        with contextlib.suppress(Exception):
            await self.drain(grace)
        await self.mcp.stop_all()
        await self.turns.abandon(grace)
        if self.summaries is not None:
            await self.summaries.aclose()  # the summary model's connections, on this loop
        self.shutdown()

    @property
    def stuck_turns(self) -> int:
        """Turns whose worker thread is still running (their work ignored cancellation)."""
        return self.turns.stuck

    async def drain(self, grace: float = 5.0) -> None:
        """Cancel every running turn and wait until each has answered its prompt.

        Called when the client hung up, *before* the SDK connection is closed: a prompt that is
        still finishing when the connection's sender shuts down would wait for its response to be
        written forever.
        """
        await self.turns.drain(grace)

    def shutdown(self) -> None:
        """Cancel every turn and release what the agent built (the model's HTTP client and loop)."""
        self.turns.cancel_all(SHUTTING_DOWN)
        self.turns.close()
        if killed := kill_started_processes():
            log.info("killed %d background job group(s) started by commands", killed)
        with contextlib.suppress(Exception):  # others may delete its sessions once it is gone
            self.recorder.let_go_of_all()
        self._writer.close()  # what the turns recorded reaches the disk before the process ends
        with contextlib.suppress(Exception):
            self.store.close()
        self.backends.close()

    @property
    def model(self) -> ChatModel:
        """The configured back-end (new sessions' default)."""
        return self.backends.default

    # ------------------------------------------------------------ sign-in (delegated)

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """Sign in with one of the methods ``initialize`` listed: new sessions then use the
        back-end it names; sessions already open keep theirs."""
        self.use_settings(await self.sign_in.authenticate(method_id, self.settings))
        return AuthenticateResponse()

    async def logout(self, **kwargs: Any) -> LogoutResponse:
        """Clear what ``serve --setup`` saved and the key this process holds; new sessions use the
        embedded model."""
        self.use_settings(self.sign_in.logout(self.settings))
        return LogoutResponse()

    def use_settings(self, settings: Settings) -> None:
        """Serve new sessions with ``settings``' back-end (see :meth:`ModelBackends.use`)."""
        self.settings = settings
        self.backends.use(settings)

    # ------------------------------------------------------------ sessions (delegated)

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        return await self.opening.new_session(cwd, mcp_servers, additional_directories)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        return await self.opening.load_session(cwd, session_id, mcp_servers, additional_directories)

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        return await self.opening.resume_session(cwd, session_id, mcp_servers, additional_directories)

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: Any = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        return await self.opening.fork_session(session_id, cwd, additional_directories, mcp_servers)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        return await self.roster.list_sessions(cwd, cursor)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        return await self.roster.close_session(session_id)

    async def delete_session(self, session_id: str, **kwargs: Any) -> DeleteSessionResponse:
        return await self.roster.delete_session(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.roster.ext_method(method, params)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        return await self.options.set_mode(await self.opening.session_for_prompt(session_id), mode_id)

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        session = await self.opening.session_for_prompt(session_id)
        return await self.options.set_config_option(session, config_id, value)

    # ------------------------------------------------------------ ACP methods

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        name = getattr(client_info, "name", None)
        if isinstance(name, str) and name.strip():  # the editor's name: the audit's default surface
            self.client_name = name  # cleaned where it is used: the redactor loads off the start path
        self.client_capabilities = client_capabilities  # its files and terminals serve the tools
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=_capabilities(
                image=getattr(self.model, "name", "") == "openai",
                delete=self.routes_delete,
                resume=self.routes_resume,
                logout=self.routes_logout,
            ),
            auth_methods=auth_methods(client_capabilities),
            agent_info=Implementation(name="acp-progress", title="acp-progress", version=__version__),
            # it shows its own spinners (a relay adds none) and flushes its store when asked
            field_meta=meta_field(ProgressMeta(think_cards=True, store_flush=True)),
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.find(session_id)
        if session is not None and session.cancel is not None:
            session.cancel.cancel("cancelled by the user")

    def stop_prompt_request(self, params: Any) -> bool:
        """``$/cancel_request`` of a ``session/prompt``: its turn is cancelled as by
        ``session/cancel`` (every card closes, the answer is ``stopReason: cancelled``). False when
        the prompt has no turn running yet: then the request is interrupted where it waits."""
        session = self.sessions.find(PromptRequest.model_validate(params).session_id)
        if session is None or session.cancel is None:
            return False
        session.cancel.cancel("cancelled by the user")
        return True

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = await self.opening.session_for_prompt(session_id)
        command = parse_command(prompt_to_text(prompt, attachments=False))
        if command is not None:  # /help, /title: the agent answers, not the model
            return await self.options.answer_command(session, command)
        return await self.turns.run(session, prompt)


def _capabilities(*, image: bool, delete: bool, resume: bool, logout: bool) -> AgentCapabilities:
    """What ``initialize`` advertises: ``image`` when the back-end sees images; ``delete``,
    ``resume`` (with close and fork) and ``logout`` only once the connection routes them."""
    return AgentCapabilities(
        load_session=True,
        # images reach a back-end that sees them (the OpenAI-compatible one)
        prompt_capabilities=PromptCapabilities(embedded_context=True, image=image),
        session_capabilities=SessionCapabilities(
            list=SessionListCapabilities(),
            delete=SessionDeleteCapabilities() if delete else None,
            resume=SessionResumeCapabilities() if resume else None,
            close=SessionCloseCapabilities() if resume else None,
            fork=SessionForkCapabilities() if resume else None,
            # the tools read and search there too (never write, never beyond them)
            additional_directories=SessionAdditionalDirectoriesCapabilities(),
        ),
        # stdio MCP servers are always supported (ACP requires it); streamable HTTP and SSE too
        mcp_capabilities=McpCapabilities(http=True, sse=True),
        auth=AgentAuthCapabilities(logout=LogoutCapabilities() if logout else None),
    )


def _open_persistence(
    settings: Settings, store: SessionStore | None
) -> tuple[SessionStore, BackgroundWriter, ConversationRecorder]:
    """The session store (``store`` when the caller passes one), the thread that writes to it, and
    the recorder that keeps every conversation there."""
    opened = store if store is not None else _open_store(settings)
    writer = BackgroundWriter(opened)
    recorder = ConversationRecorder(opened, writer, max_session_bytes=settings.max_session_bytes)
    return opened, writer, recorder


def _session_servers(agent: ProgressAgent) -> SessionServers:
    """Every session's MCP servers; their questions go to the editor, with what it offers and the
    way to flush the cards first (read when asked: the connection comes later)."""
    servers = SessionServers(agent.store, agent._writer, agent.settings.mcp)
    servers.client = lambda: (agent._conn, agent.client_capabilities, agent.outbox.flush)
    return servers


def _session_objects(agent: ProgressAgent) -> tuple[SessionOptions, SessionOpening, SessionRoster]:
    """The objects that answer the session methods, sharing the agent's sessions, store and
    outbox; a session freed for idleness is let go of by the roster."""
    options = SessionOptions(
        store=agent.store,
        writer=agent._writer,
        recorder=agent.recorder,
        model_menu=lambda: agent.backends.menu,
        outbox=lambda: agent.outbox,
    )
    parts = SessionParts(
        agent.sessions,
        agent.store,
        agent._writer,
        agent.recorder,
        agent.mcp,
        options,
        outbox=lambda: agent.outbox,
        made_outbox=lambda: agent._outbox,
    )
    opening = SessionOpening(parts)
    roster = SessionRoster(parts)
    agent.sessions.on_free = roster.forget_freed
    return options, opening, roster


def _turn_parts(agent: ProgressAgent) -> TurnParts:
    """What the prompts' turns use of the agent: its shared parts, and callables for what changes
    later (the settings after a sign-in, the connection and the client's capabilities)."""
    return TurnParts(
        turn_runner=agent.turn_runner,
        settings=lambda: agent.settings,
        sessions=agent.sessions,
        recorder=agent.recorder,
        writer=agent._writer,
        mcp=agent.mcp,
        registry=agent.registry,
        summaries=agent.summaries,
        scheduler=agent.scheduler,
        outbox=lambda: agent.outbox,
        conn=lambda: agent._conn,
        client_capabilities=lambda: agent.client_capabilities,
        model_for=lambda session: agent.backends.for_choice(agent.options.config_of(session).model),
        audit=agent.audit.record,
    )


def _settings_file() -> Path | None:
    from acp_adapter._config_file import config_file_path

    return config_file_path()


def _open_store(settings: Settings) -> SessionStore:
    return open_store(
        Path(settings.state_dir).expanduser() if settings.state_dir else None,
        enabled=settings.state,
        retention_days=settings.session_retention_days,
        url=settings.store.url,
    )


def _summary_factory(settings: Settings) -> SummaryFactory | None:
    """Summaries are off for ``serve`` unless ACP_PROGRESS_SUMMARY / --summary turns them on;
    a bad set-up (the openai extra missing …) is a ConfigError at start-up."""
    if settings.summary in ("auto", "off"):
        return None  # not even imported: summaries off cost an editor's agent no start-up time
    from acp_adapter.summary import SummaryFactory

    return SummaryFactory.from_settings(settings, default_mode="off")


async def serve(
    settings: Settings | None = None, model: ChatModel | None = None, *, turn_runner: TurnRunner
) -> ProgressAgent:
    """Serve ACP over this process's stdio, with stdout structurally reserved for the protocol.

    The SDK's agent-side connection (:func:`agent_connection`: what ``acp.run_agent`` builds, plus
    the ``session/delete`` route) runs on the protected streams through the package's
    one JSON-RPC reader (:class:`~acp_adapter.protocol.JsonRpcStream`: line, depth and strictness
    limits, bad lines answered and never fatal, no read while the client is not reading our answers);
    the end of input reaches it only after :meth:`ProgressAgent.hang_up` handled the running turns
    (``before_eof``), so a client that closes our stdin still reads every response and the SDK closes
    a connection with nothing in flight. ``turn_runner`` builds each prompt's agent loop (the command
    line passes ``run_agent.AIAgent``). ``model`` replaces the configured back-end (embedders and
    tests pass their own). Tool progress is held while the client has unread bytes on our stdout
    (:mod:`acp_adapter.protocol.backlog`), so a slow editor reads fresh values, not old ones.

    Returns the agent that served, for the caller to hand to :func:`exit_if_turns_stuck`."""
    from acp_adapter.protocol.stdio import open_protocol_streams, protect_stdio

    fds = protect_stdio()
    agent = ProgressAgent(settings, model=model, turn_runner=turn_runner)
    # the end of input reaches the SDK only after the running turns were handled (hang_up)
    reader, writer = await open_protocol_streams(fds, before_eof=agent.hang_up)
    agent.backlog = peer_backlog_probe(writer.transport)
    await serve_connection(agent, reader, writer)
    return agent


async def serve_connection(
    agent: ProgressAgent, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Serve ``agent`` to the one client on ``reader``/``writer`` until the connection ends, as
    :func:`serve` does on stdio: the package's JSON-RPC reader with the agent's stream limits, the
    connection with every route, and the hang-up (running turns cancelled and answered) at the end,
    whatever ended it."""
    from acp_adapter.protocol import JsonRpcStream, StreamLimits

    stream = JsonRpcStream(reader, writer, StreamLimits.from_settings(agent.settings.streams))
    conn = agent_connection(agent, stream)
    try:
        with contextlib.suppress(ConnectionError):
            try:
                await conn.listen()
            finally:
                await asyncio.shield(conn.close())
    finally:
        with anyio.CancelScope(shield=True):
            await agent.hang_up()  # idempotent: already run at end of input, not on other exits


def exit_if_turns_stuck(agent: ProgressAgent) -> None:
    """After :func:`serve` returned ``agent``: if a turn's worker thread still runs (its work ignored
    the cancel signal), end the process now instead of letting interpreter shutdown wait for it.

    Worker threads of a thread pool are joined at exit, so a turn stuck in 12 s of CPU work would
    otherwise keep an agent whose editor is long gone alive. Logs are flushed first.
    """
    stuck = agent.stuck_turns
    if not stuck:
        return
    log.warning("exiting with %d turn(s) still running after the client hung up", stuck)
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(0)
