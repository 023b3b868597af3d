"""The one client driver: talk to any ACP agent the way an editor does.

Every front-end (``watch``, the chat bridges, the AG-UI endpoint) drives its agent through
:class:`AgentDriver`, so "spawn, initialize, open a session, prompt, stream the updates, answer
permission requests, cancel, shut down" has one implementation with one set of failure messages.

This module speaks ACP to the agent (initialize, sessions, prompts, cancel, flow control); its
parts have modules of their own: the agent's process (:mod:`.agent_process`), the message-level
transport that turns a non-ACP agent's output into a clear error (:mod:`.transport`), a prompt's
:class:`~.turn.Turn`, the permission requests and policies (:mod:`.permissions`) and the errors
(:mod:`.agent_errors`). Front-ends import all of them from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.helpers import SessionUpdate
from acp.schema import (
    ClientCapabilities,
    CurrentModeUpdate,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    SessionInfo,
    SseMcpServer,
    ToolCallUpdate,
)

from acp_adapter._version import __version__
from acp_adapter.client.agent_errors import (
    AgentCrashed,
    AgentError,
    AgentLogError,
    AgentStartError,
    PromptRefused,
    TurnInProgress,
    describe_error,
)
from acp_adapter.client.agent_process import AgentProcess, default_agent_command, parse_agent_command
from acp_adapter.client.permissions import (
    AUTOMATIC_META,
    PermissionPolicy,
    PermissionRequest,
    allow_all,
    deny_all,
    permission_response,
    with_surface,
)
from acp_adapter.client.questions import (
    QuestionPolicy,
    QuestionRequest,
    QuestionResponse,
    decline,
    decline_all,
)
from acp_adapter.client.session_state import SessionFacts
from acp_adapter.client.transport import AgentTransport
from acp_adapter.client.turn import PromptBlock, Turn
from acp_adapter.protocol import StreamLimits
from acp_adapter.protocol.cancel_request import OutgoingRequestIds, call_off_if_given_up
from acp_adapter.protocol.meta import STORE_FLUSH_METHOD, meta_of
from acp_adapter.safety.redact import redact_text

#: the names other modules import from here (the errors, permissions and turns included, now in
#: :mod:`.agent_errors`, :mod:`.permissions` and :mod:`.turn`)
__all__ = [
    "AUTOMATIC_META",
    "AgentCrashed",
    "AgentDriver",
    "AgentError",
    "AgentLogError",
    "AgentStartError",
    "PermissionPolicy",
    "PermissionRequest",
    "PromptBlock",
    "PromptRefused",
    "Turn",
    "TurnInProgress",
    "allow_all",
    "default_agent_command",
    "deny_all",
    "describe_error",
    "parse_agent_command",
    "permission_response",
    "with_surface",
]

log = logging.getLogger("acp_progress.client")


#: Messages the driver reads at most before it lets their delivery tasks run (see ``_wait_for_room``).
SETTLE_EVERY = 64


class _DriverClient:
    """The ACP client methods the driver answers (the agent calls these)."""

    def __init__(self, driver: AgentDriver) -> None:
        self._driver = driver

    async def session_update(self, session_id: str, update: SessionUpdate, **kwargs: Any) -> None:
        self._driver.dispatch_update(session_id, update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        request = PermissionRequest(session_id, tool_call, list(options))
        try:
            response = await self._driver.permission_policy(request)
        except Exception:
            log.exception("the permission policy failed; denying %s", request.title)
            response = permission_response(request, False, automatic=True)
        return with_surface(response, self._driver.surface)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> QuestionResponse:
        """A question the agent passes on (an MCP tool's form or link): the front-end's policy."""
        request = QuestionRequest(message, mode)
        try:
            return await self._driver.question_policy(request)
        except Exception:
            log.exception("the question policy failed; declining the question")
            return decline()


class AgentDriver:
    """One ACP agent process, driven as an editor would drive it (an async context manager)."""

    def __init__(
        self,
        command: str | Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        permission_policy: PermissionPolicy = deny_all,
        init_timeout: float = 30.0,
        stderr_log: str | os.PathLike[str] | None = None,
        client_name: str = "acp-progress",
        client_capabilities: ClientCapabilities | None = None,
        on_stray_update: Callable[[str, SessionUpdate], None] | None = None,
        limits: StreamLimits | None = None,
        mcp_servers: Sequence[McpServerStdio | HttpMcpServer | SseMcpServer] = (),
        question_policy: QuestionPolicy | None = None,
    ) -> None:
        self.argv = parse_agent_command(command)
        #: the agent as an operating-system process (its group, its stderr, its exit)
        self._agent = AgentProcess(self.argv)
        #: the MCP servers sent in every ``session/new`` and ``session/load`` (``--mcp-config``,
        #: the settings file's ``[mcp_servers]``): the agent starts them, whichever agent it is
        self.mcp_servers: list[McpServerStdio | HttpMcpServer | SseMcpServer] = list(mcp_servers)
        #: the stream limits (ACP_PROGRESS_MAX_LINE_BYTES …; from the environment unless given)
        self.limits = limits or StreamLimits.from_env()
        self._room = asyncio.Event()
        self._room.set()
        self._unsettled = 0  # messages read since the transport last let their tasks run
        self.env = dict(env or {})
        self.cwd = cwd
        self.permission_policy = permission_policy
        self.init_timeout = init_timeout
        self.stderr_log = stderr_log
        self.client_name = client_name
        #: where this driver's permission answers come from, for the agent's audit ("watch" …)
        self.surface = client_name.removeprefix("acp-progress-")
        self.client_capabilities = client_capabilities or ClientCapabilities()
        #: answers the agent's questions (ACP elicitation); with one, the driver offers form and
        #: link questions in ``initialize``; without, every question is declined
        self.question_policy: QuestionPolicy = question_policy or decline_all
        if question_policy is not None and self.client_capabilities.elicitation is None:
            offered = ElicitationCapabilities(
                form=ElicitationFormCapabilities(), url=ElicitationUrlCapabilities()
            )
            self.client_capabilities = self.client_capabilities.model_copy(update={"elicitation": offered})
        self.on_stray_update = on_stray_update
        self.initialize_response: InitializeResponse | None = None
        self._conn: Any = None
        self._transport: AgentTransport | None = None
        #: which task sent which request (set when the agent starts)
        self.requests: OutgoingRequestIds | None = None
        self._turns: dict[str, Turn] = {}
        #: sessions being loaded: their replayed updates go to the loader's callback
        self._replaying: dict[str, Callable[[SessionUpdate], None]] = {}
        #: what each open session's agent said about it (commands, modes, options, title, usage)
        self.facts: dict[str, SessionFacts] = {}
        #: the last :meth:`list_sessions` stopped before the agent's last page (its cursors loop)
        self.list_incomplete = False
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AgentDriver:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The agent's process once started (None before)."""
        return self._agent.process

    @property
    def connection(self) -> Any:
        if self._conn is None:
            raise AgentError("the agent is not started")
        return self._conn

    async def start(self) -> InitializeResponse:
        """Spawn the agent in its own process group and complete ``initialize``."""
        try:
            await self._spawn()
            self.initialize_response = await self._initialize()
        except BaseException:
            await self.close()
            raise
        return self.initialize_response

    async def _spawn(self) -> None:
        process = await self._agent.spawn(self.env, self.cwd, self.stderr_log)
        self._transport = AgentTransport(process, self.limits, gate=self._wait_for_room)
        self.requests = OutgoingRequestIds(self._transport)
        # questions (elicitation/create) are an unstable method of this SDK's client side: routed
        self._conn = connect_to_agent(_DriverClient(self), self.requests, use_unstable_protocol=True)  # type: ignore[arg-type]

    async def _wait_for_room(self) -> None:
        """Before the transport reads the next message: let the updates already read reach their
        turns (the SDK delivers each in a task of its own), then wait while a turn is full.

        Yielding to the loop before every message would cost a loop iteration per update (a burst
        ran at two thirds of its speed), so the driver yields only once the messages read since
        the last yield could fill the fullest turn, and at least every :data:`SETTLE_EVERY`."""
        self._unsettled += 1
        fullest = max((turn.queued for turn in self._turns.values()), default=0)
        if self._unsettled >= min(SETTLE_EVERY, self.limits.max_queued_updates - fullest):
            self._unsettled = 0
            await asyncio.sleep(0)
        await self._room.wait()

    def update_room(self) -> None:
        """Let the transport read the agent's stdout again once no live turn is full."""
        if any(turn.full for turn in self._turns.values()):
            self._room.clear()
        else:
            self._room.set()

    async def _initialize(self) -> InitializeResponse:
        assert self.process is not None
        init = asyncio.ensure_future(
            self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=self.client_capabilities,
                client_info=Implementation(
                    name=self.client_name, title=self.client_name, version=__version__
                ),
            )
        )
        exited = asyncio.ensure_future(self.process.wait())
        try:
            done, _ = await asyncio.wait(
                {init, exited}, timeout=self.init_timeout, return_when="FIRST_COMPLETED"
            )
        except asyncio.CancelledError:
            init.cancel()  # the caller gave up (Ctrl-C while starting): no orphaned request task
            raise
        finally:
            exited.cancel()
        name = self.argv[0]
        if init in done:
            try:
                return init.result()
            except RequestError as exc:
                said = describe_error(exc)
                raise AgentStartError(
                    f"{name} is not an ACP agent: it answered initialize with an error ({said})"
                    f"{self._skipped_hint()}"
                ) from None
            except Exception:
                pass  # the connection broke: the process is exiting; report that below
        init.cancel()
        if not done:
            raise AgentStartError(
                f"{name} did not answer initialize within {self.init_timeout:g}s; is it an ACP agent?"
                f"{self._skipped_hint()}{self._agent.stderr_hint()}"
            )
        code = await self._agent.exit_code_within()
        raise AgentStartError(
            f"the agent {name} exited{f' with code {code}' if code is not None else ''} before answering "
            f"initialize{self._skipped_hint()}{self._agent.stderr_hint()}"
        )

    def _skipped_hint(self) -> str:
        if self._transport is None or not self._transport.skipped:
            return ""
        return f"; it wrote non-ACP output on stdout: {self._transport.skipped[0]!r}"

    @property
    def exit_code(self) -> int | None:
        """The agent's exit status once its process ended; None while it runs (or before it started)."""
        return self._agent.returncode

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the agent wrote on stderr, redacted."""
        return self._agent.stderr_tail

    async def crash_error(self, exc: BaseException) -> AgentCrashed:
        """Turn a broken connection into a message that says what happened to the agent."""
        code = await self._agent.exit_code_within(wait=1.0)
        hint = self._agent.stderr_hint()
        if code is not None:
            return AgentCrashed(f"the agent exited with code {code} during the turn{hint}")
        return AgentCrashed(f"the connection to the agent broke during the turn ({exc}){hint}")

    async def close(self, grace: float = 2.0) -> None:
        """End every turn, then the process group: EOF on stdin, then SIGTERM, then SIGKILL."""
        if self._closed:
            return
        self._closed = True
        for turn in list(self._turns.values()):
            if turn._task is not None:
                turn._task.cancel()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        await self._agent.end(grace)

    # ------------------------------------------------------------ sessions and turns

    async def _ask(self, request: Any) -> Any:
        """A request of the agent that, should the front-end give up on it, is called off on the
        agent's side too (``$/cancel_request``)."""
        return await call_off_if_given_up(self._conn, self.requests, request)

    async def new_session(self, cwd: str, **kwargs: Any) -> str:
        """Open a session in workspace ``cwd`` (absolute, as ACP requires)."""
        try:
            workspace = os.path.abspath(cwd)  # noqa: ASYNC240 - string work, no I/O
            response = await self._ask(
                self.connection.new_session(cwd=workspace, mcp_servers=list(self.mcp_servers), **kwargs)
            )
        except RequestError as exc:
            raise AgentError(f"the agent refused to open a session: {describe_error(exc)}") from None
        except ConnectionError as exc:
            raise await self.crash_error(exc) from None
        session_id = str(response.session_id)
        self.facts[session_id] = SessionFacts.from_response(response)
        return session_id

    @property
    def can_load_sessions(self) -> bool:
        """The agent said ``loadSession: true`` in ``initialize``."""
        init = self.initialize_response
        return bool(init is not None and init.agent_capabilities and init.agent_capabilities.load_session)

    @property
    def can_list_sessions(self) -> bool:
        """The agent offers ``session/list`` (``sessionCapabilities.list``)."""
        init = self.initialize_response
        caps = init.agent_capabilities.session_capabilities if init and init.agent_capabilities else None
        return caps is not None and caps.list is not None

    @property
    def flushes_store(self) -> bool:
        """The agent answers :data:`~acp_adapter.protocol.meta.STORE_FLUSH_METHOD` (this package's
        agent says so in ``initialize``: ``_meta.acpProgress.storeFlush``)."""
        meta = meta_of(self.initialize_response)
        return meta is not None and meta.store_flush is True

    async def flush_store(self, within: float) -> bool:
        """Ask the agent to finish its queued session-store writes; True once it says they landed.
        False when it cannot say (it does not offer the method, it is not running, it did not
        answer within ``within`` seconds, or its store did not finish): the caller reads anyway."""
        if self._conn is None or not self.flushes_store:
            return False
        try:
            answer = await asyncio.wait_for(self._conn.ext_method(STORE_FLUSH_METHOD, {}), within)
        except (TimeoutError, RequestError, ConnectionError) as exc:
            log.info(
                "the agent did not flush its session store: %s", redact_text(str(exc) or type(exc).__name__)
            )
            return False
        return isinstance(answer, dict) and answer.get("flushed") is True

    async def load_session(
        self, session_id: str, cwd: str, on_replay: Callable[[SessionUpdate], None] | None = None
    ) -> None:
        """Open a stored session (``session/load``); the agent replays its conversation first, each
        update to ``on_replay`` (dropped when None: a chat that already shows it)."""
        if not self.can_load_sessions:
            raise AgentError(
                "the agent cannot load sessions (it answered initialize with loadSession: false)"
            )
        self._replaying[session_id] = on_replay or (lambda _update: None)
        self.facts[session_id] = SessionFacts()
        try:
            workspace = os.path.abspath(cwd)  # noqa: ASYNC240 - string work, no I/O
            response = await self._ask(
                self.connection.load_session(
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
            raise await self.crash_error(exc) from None
        finally:
            self._replaying.pop(session_id, None)

    async def list_sessions(self, cwd: str | None = None, max_pages: int = 100_000) -> list[SessionInfo]:
        """Every session the agent lists (``session/list``), page after page to the end.

        ``max_pages`` only guards against an agent whose cursors never end (or repeat): then
        :attr:`list_incomplete` is set, so the caller can say the list is not whole."""
        if not self.can_list_sessions:
            raise AgentError("the agent cannot list sessions (no sessionCapabilities.list in initialize)")
        found: list[SessionInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        self.list_incomplete = False
        workspace = os.path.abspath(cwd) if cwd is not None else None  # noqa: ASYNC240 - string work
        try:
            for _ in range(max_pages):
                page = await self._ask(self.connection.list_sessions(cwd=workspace, cursor=cursor))
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
            raise await self.crash_error(exc) from None
        return found

    @property
    def can_delete_sessions(self) -> bool:
        """The agent offers ``session/delete`` (``sessionCapabilities.delete``)."""
        init = self.initialize_response
        caps = init.agent_capabilities.session_capabilities if init and init.agent_capabilities else None
        return caps is not None and caps.delete is not None

    async def delete_session(self, session_id: str) -> None:
        """Remove a stored session for good (``session/delete``)."""
        from acp.meta import AGENT_METHODS
        from acp.schema import DeleteSessionRequest, DeleteSessionResponse
        from acp.utils import request_model_from_dict

        if not self.can_delete_sessions:
            raise AgentError("the agent cannot delete sessions (no sessionCapabilities.delete in initialize)")
        request = DeleteSessionRequest(session_id=session_id)
        try:
            await self._ask(
                request_model_from_dict(
                    self.connection._conn, AGENT_METHODS["session_delete"], request, DeleteSessionResponse
                )
            )
        except RequestError as exc:
            said = describe_error(exc)
            raise AgentError(f"the agent could not delete session {session_id}: {said}") from None
        except ConnectionError as exc:
            raise await self.crash_error(exc) from None

    def prompt(self, session_id: str, prompt: str | Sequence[PromptBlock]) -> Turn:
        """Send a prompt now; the returned :class:`Turn` yields its updates."""
        if session_id in self._turns:
            raise TurnInProgress(f"session {session_id} already has a prompt running")
        blocks: list[PromptBlock] = [text_block(prompt)] if isinstance(prompt, str) else list(prompt)
        turn = Turn(self, session_id)
        self._turns[session_id] = turn
        turn._start(blocks)
        return turn

    async def cancel(self, session_id: str) -> None:
        """Ask the agent to cancel the session's running turn (``session/cancel``)."""
        turn = self._turns.get(session_id)
        if turn is not None:
            await turn._sent.wait()
        with contextlib.suppress(ConnectionError, RequestError):
            await self.connection.cancel(session_id=session_id)

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
        try:
            if option is not None:
                response = await self.connection.set_config_option(
                    config_id=option.id, session_id=session_id, value=value
                )
                if response is not None and response.config_options:
                    facts.set_config_options(response.config_options)
            else:
                await self.connection.set_session_mode(session_id=session_id, mode_id=value)
                facts.observe(CurrentModeUpdate(session_update="current_mode_update", current_mode_id=value))
        except RequestError as exc:
            raise AgentError(f"the agent refused to set the {category}: {describe_error(exc)}") from None
        except ConnectionError as exc:
            raise await self.crash_error(exc) from None
        return facts.current(category) or value

    def turn_ended(self, turn: Turn) -> None:
        if self._turns.get(turn.session_id) is turn:
            del self._turns[turn.session_id]
        self.update_room()

    def dispatch_update(self, session_id: str, update: SessionUpdate) -> None:
        facts = self.facts.get(session_id)
        if facts is not None:
            facts.observe(update)
        replay = self._replaying.get(session_id)
        if replay is not None:
            replay(update)
            return
        turn = self._turns.get(session_id)
        if turn is not None:
            turn._feed(update)
        elif self.on_stray_update is not None:
            self.on_stray_update(session_id, update)
        else:
            log.debug("session update outside a turn for %s: %s", session_id, type(update).__name__)
