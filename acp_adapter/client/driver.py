"""The one client driver: talk to any ACP agent the way an editor does.

Every front-end (``watch``, the chat bridges, the AG-UI endpoint) drives its agent through
:class:`AgentDriver`, so "spawn, initialize, open a session, prompt, stream the updates, answer
permission requests, cancel, shut down" has one implementation with one set of failure messages.

Why a message-level transport of our own instead of the SDK's byte-stream helper: an agent that is
not an ACP agent (``cat``, ``python -c 'print(123)'``) or that prints garbage on stdout must produce a
clear one-line error, not a traceback from the SDK's receive loop. The transport parses each line
once, hands only JSON objects to the SDK connection and keeps a sample of what it skipped for the
error message.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.helpers import SessionUpdate
from acp.schema import (
    AllowedOutcome,
    AudioContentBlock,
    ClientCapabilities,
    CurrentModeUpdate,
    DeniedOutcome,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    McpServerStdio,
    PermissionOption,
    PromptResponse,
    RequestPermissionResponse,
    ResourceContentBlock,
    SessionInfo,
    TextContentBlock,
    ToolCallUpdate,
)

from acp_adapter._version import __version__
from acp_adapter.client.procgroup import end_process_group
from acp_adapter.client.session_state import SessionFacts
from acp_adapter.errors import AcpProgressError
from acp_adapter.protocol import (
    CHUNK_BYTES,
    JsonRpcStream,
    Refused,
    StreamLimits,
    error_answer,
    sniff_response_id,
)
from acp_adapter.protocol.meta import STORE_FLUSH_METHOD, ProgressMeta, meta_field, meta_of
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.secret_env import agent_environment

log = logging.getLogger("acp_progress.client")

#: Lines of the agent's stderr kept for error messages.
STDERR_TAIL_LINES = 12
#: The message of the error a request gets when its answer came in a line the reader refused.
REFUSED_ANSWER = "the agent's answer was refused by the line reader"
#: ``_meta`` on a permission answer that no person gave (a policy decided), so the agent can say so.
AUTOMATIC_META: dict[str, Any] = meta_field(ProgressMeta(automatic=True))

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


class AgentError(AcpProgressError):
    """A failure talking to the agent; ``str(exc)`` is one redacted line fit for a user."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_text(" ".join(message.split())))


class AgentStartError(AgentError):
    """The agent could not be started or did not complete ``initialize``."""


class AgentLogError(AgentStartError):
    """The ``--agent-log`` file cannot be written (a usage error: the front-end exits 2)."""


class AgentCrashed(AgentError):
    """The agent process died, or its connection broke, while a request was outstanding."""


class PromptRefused(AgentError):
    """The agent answered ``session/prompt`` with a JSON-RPC error: ``reason`` is its message,
    ``details`` its ``data.details`` (when present), ``code`` and ``data`` as received (redacted)."""

    def __init__(self, exc: RequestError) -> None:
        super().__init__(f"the agent answered the prompt with an error: {exc}")
        self.code: int = exc.code
        self.reason = redact_text(str(exc))
        data = exc.data
        details = data.get("details") if isinstance(data, dict) else None
        self.details: str | None = redact_text(str(details)) if details is not None else None
        self.data: Any = data


def describe_error(exc: RequestError) -> str:
    """A JSON-RPC error as one redacted phrase: its message, then its ``data.details`` when they say
    more (``Internal error: ANTHROPIC_API_KEY is not set``): the message alone is often only the
    generic text of the code, and the reason is in the details."""
    message = " ".join(str(exc).split())
    data = exc.data
    details = data.get("details") if isinstance(data, dict) else None
    if details is None:
        return redact_text(message)
    said = " ".join(str(details).split())
    if not said or said in message:
        return redact_text(message)
    return redact_text(f"{message}: {said}" if message else said)


class TurnInProgress(AgentError):
    """ACP allows one prompt per session at a time."""


# ---------------------------------------------------------------------------- commands


def default_agent_command() -> list[str]:
    """This project's agent, run by the same interpreter (works without the console script)."""
    return [sys.executable, "-m", "acp_adapter"]


def parse_agent_command(command: str | Sequence[str] | None) -> list[str]:
    """Turn an ``--agent`` value into argv, with a clear error for unbalanced quotes."""
    if command is None:
        return default_agent_command()
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise AgentStartError(f"cannot parse the agent command {command!r}: {exc}") from None
    else:
        argv = [str(part) for part in command]
    if not argv:
        raise AgentStartError("the agent command is empty")
    return argv


# ---------------------------------------------------------------------------- permissions


@dataclass(frozen=True)
class PermissionRequest:
    """One ``session/request_permission`` from the agent, as the policy sees it."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]

    @property
    def title(self) -> str:
        return self.tool_call.title or self.tool_call.tool_call_id

    @property
    def command(self) -> str | None:
        """The whole command the agent asks to run (``rawInput.command``), when it says so: a
        card's title is cut, and nobody can approve what they cannot see."""
        raw = self.tool_call.raw_input
        command = raw.get("command") if isinstance(raw, dict) else None
        return command if isinstance(command, str) and command.strip() else None


PermissionPolicy = Callable[[PermissionRequest], Awaitable[RequestPermissionResponse]]


def permission_response(
    request: PermissionRequest,
    allow: bool,
    *,
    automatic: bool = False,
    decided_by: str | None = None,
    surface: str | None = None,
) -> RequestPermissionResponse:
    """Answer ``request`` by picking its allow (or reject) option. ``automatic`` marks a policy
    decision; ``decided_by`` names the person who answered (the agent keeps both in its audit, with
    ``surface``, which the driver fills in with its front-end's name when the policy did not)."""
    wanted = "allow" if allow else "reject"
    ranked = sorted(
        (o for o in request.options if o.kind.startswith(wanted)),
        key=lambda o: not o.kind.endswith("once"),  # prefer a one-time answer over "always"
    )
    who = ProgressMeta(automatic=True if automatic else None, decided_by=decided_by, surface=surface)
    meta = meta_field(who) if who.dump() else None
    if not ranked:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"), field_meta=meta)
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=ranked[0].option_id), field_meta=meta
    )


def with_surface(response: RequestPermissionResponse, surface: str) -> RequestPermissionResponse:
    """``response`` with ``_meta.acpProgress.surface`` set, unless its policy already named one."""
    meta = meta_of(response) or ProgressMeta()
    if meta.surface is not None:
        return response
    field_meta = dict(response.field_meta or {})
    field_meta.update(meta_field(meta.model_copy(update={"surface": surface})))
    return response.model_copy(update={"field_meta": field_meta})


async def allow_all(request: PermissionRequest) -> RequestPermissionResponse:
    """Policy: allow every request without asking (``--yes``)."""
    return permission_response(request, True, automatic=True)


async def deny_all(request: PermissionRequest) -> RequestPermissionResponse:
    """Policy: deny every request; the answer says no person was asked."""
    return permission_response(request, False, automatic=True)


# ---------------------------------------------------------------------------- transport

#: Messages the driver reads at most before it lets their delivery tasks run (see ``_wait_for_room``).
SETTLE_EVERY = 64


class _AgentTransport(JsonRpcStream):
    """JSON-RPC messages over the agent's stdin/stdout through the package's one line reader.

    Lines the reader refuses (not JSON, not an object, too long, too deep, not strict JSON) are
    skipped with a warning and remembered: they explain a failed initialize. They are not answered:
    an agent that writes garbage on stdout is not listening for our opinion of it. A refused line
    that plainly starts as the answer to one of our requests (``{"jsonrpc":"2.0","id":7,"result":…``
    with a ``NaN`` or 300 levels of nesting further on) fails that request with an error that says
    why; otherwise the prompt would wait forever for an answer that already came and was refused.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        limits: StreamLimits,
        gate: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self.skipped: collections.deque[str] = collections.deque(maxlen=3)
        self.skipped_count = 0
        super().__init__(
            process.stdout, process.stdin, limits, answer_refusals=False, on_refusal=self._skip, gate=gate
        )

    def _skip(self, refused: Refused) -> dict[str, Any] | None:
        self.skipped_count += 1
        sample = redact_text(refused.head[:200].decode(errors="replace").strip())
        self.skipped.append(sample)
        log.warning(
            "the agent wrote a line that is not a JSON-RPC message on stdout (%s): %s", refused.reason, sample
        )
        answered = sniff_response_id(refused.head)
        if answered is None:
            return None
        reason = redact_text(refused.reason)
        return error_answer(RequestError(-32603, REFUSED_ANSWER, {"details": reason}), answered)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stdin.close()


# ---------------------------------------------------------------------------- turns


@dataclass(frozen=True)
class _End:
    response: PromptResponse | None
    error: BaseException | None


class Turn:
    """One prompt's session updates, in order, then its :class:`PromptResponse`.

    Iterate it (``async for update in turn``) or ``await turn.wait()``. The prompt request is sent
    when the turn is created, so updates queue up even before the caller starts iterating — up to
    ``max_queued_updates``: then the driver stops reading the agent's stdout until the consumer
    catches up (the agent's writes then block in the pipe), so a slow consumer bounds memory instead
    of growing a queue. Permission answers are written, never read, so they are not held up.
    """

    def __init__(self, driver: AgentDriver, session_id: str) -> None:
        self.session_id = session_id
        self.response: PromptResponse | None = None
        self._driver = driver
        self._queue: asyncio.Queue[SessionUpdate | _End] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        #: set once the prompt request is on its way, so a cancel can never overtake it on the wire
        self._sent = asyncio.Event()

    def _feed(self, update: SessionUpdate) -> None:
        self._queue.put_nowait(update)  # never blocks: the driver stops reading while it is full
        if self._queue.qsize() >= self._driver.limits.max_queued_updates:
            self._driver.update_room()

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    @property
    def full(self) -> bool:
        """Holding as many unconsumed updates as the driver lets a turn hold."""
        return not self._finished and self._queue.qsize() >= self._driver.limits.max_queued_updates

    def _start(self, blocks: list[PromptBlock]) -> None:
        self._task = asyncio.create_task(self._run(blocks), name=f"acp-prompt-{self.session_id}")

    async def _run(self, blocks: list[PromptBlock]) -> None:
        response: PromptResponse | None = None
        error: BaseException | None = None
        try:
            request = self._driver.connection.prompt(session_id=self.session_id, prompt=blocks)
            self._sent.set()  # the request is written in this same step (the send lock is FIFO)
            response = await request
        except asyncio.CancelledError:
            error = AgentCrashed("the prompt was abandoned because the driver closed")
        except RequestError as exc:
            error = PromptRefused(exc)
        except Exception as exc:
            error = await self._driver.crash_error(exc)
        finally:
            self._driver.turn_ended(self)
            self._queue.put_nowait(_End(response, error))

    @property
    def done(self) -> bool:
        return self._finished

    async def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        while not self._finished:
            item = await self._queue.get()
            self._driver.update_room()
            if isinstance(item, _End):
                self._finished = True
                if item.error is not None:
                    raise item.error
                self.response = item.response
                return
            yield item

    async def wait(self) -> PromptResponse:
        """Consume the remaining updates and return the prompt response."""
        async for _ in self:
            pass
        if self.response is None:  # iterated to the end before: the response is already known
            raise AgentCrashed("the turn ended without a prompt response")
        return self.response

    async def cancel(self) -> None:
        await self._driver.cancel(self.session_id)


# ---------------------------------------------------------------------------- the driver


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
        mcp_servers: Sequence[McpServerStdio | HttpMcpServer] = (),
    ) -> None:
        self.argv = parse_agent_command(command)
        #: the MCP servers sent in every ``session/new`` and ``session/load`` (``--mcp-config``,
        #: the settings file's ``[mcp_servers]``): the agent starts them, whichever agent it is
        self.mcp_servers: list[McpServerStdio | HttpMcpServer] = list(mcp_servers)
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
        self.on_stray_update = on_stray_update
        self.initialize_response: InitializeResponse | None = None
        self.process: asyncio.subprocess.Process | None = None
        self._conn: Any = None
        self._transport: _AgentTransport | None = None
        self._turns: dict[str, Turn] = {}
        #: sessions being loaded: their replayed updates go to the loader's callback
        self._replaying: dict[str, Callable[[SessionUpdate], None]] = {}
        #: what each open session's agent said about it (commands, modes, options, title, usage)
        self.facts: dict[str, SessionFacts] = {}
        #: the last :meth:`list_sessions` stopped before the agent's last page (its cursors loop)
        self.list_incomplete = False
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._log_file: IO[bytes] | None = None
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AgentDriver:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

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
        # the front-end's own secrets (bot token, endpoint token) are never the agent's
        env = agent_environment(os.environ, self.env)
        if self.stderr_log is not None:  # before the agent starts: a bad path must not leave it running
            try:
                self._log_file = open(self.stderr_log, "ab")  # noqa: SIM115, ASYNC230 - tiny; closed in close()
            except OSError as exc:
                raise AgentLogError(
                    f"cannot write the agent log {os.fspath(self.stderr_log)}: {exc.strerror or exc}"
                ) from None
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                limit=CHUNK_BYTES,  # the line reader enforces the line limit; this only sizes the pipe buffer
                start_new_session=True,  # its own process group: shutdown reaches its children too
            )
        except FileNotFoundError:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: command not found") from None
        except PermissionError:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: permission denied") from None
        except OSError as exc:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: {exc.strerror or exc}") from None
        self._stderr_task = asyncio.create_task(self._pump_stderr(), name="acp-agent-stderr")
        self._transport = _AgentTransport(self.process, self.limits, gate=self._wait_for_room)
        self._conn = connect_to_agent(_DriverClient(self), self._transport)  # type: ignore[arg-type]

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

    async def _pump_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stream = self.process.stderr
        while True:
            try:
                line = await stream.readline()
            except (asyncio.LimitOverrunError, ValueError):
                continue
            if not line:
                return
            if self._log_file is not None:
                with contextlib.suppress(OSError):
                    self._log_file.write(line)
                    self._log_file.flush()
            text = line.decode(errors="replace").rstrip()
            if text:
                self._stderr_tail.append(text)

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
                f"{self._skipped_hint()}{self._stderr_hint()}"
            )
        code = await self._exit_code()
        raise AgentStartError(
            f"the agent {name} exited{f' with code {code}' if code is not None else ''} before answering "
            f"initialize{self._skipped_hint()}{self._stderr_hint()}"
        )

    async def _exit_code(self, wait: float = 1.0) -> int | None:
        if self.process is None:
            return None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), wait)
        if self._stderr_task is not None:  # let the last stderr lines arrive for the message
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        return self.process.returncode

    def _skipped_hint(self) -> str:
        if self._transport is None or not self._transport.skipped:
            return ""
        return f"; it wrote non-ACP output on stdout: {self._transport.skipped[0]!r}"

    def _stderr_hint(self) -> str:
        if not self._stderr_tail:
            return ""
        tail = " | ".join(list(self._stderr_tail)[-3:])
        return f"; its stderr ends: {redact_text(tail)}"

    @property
    def exit_code(self) -> int | None:
        """The agent's exit status once its process ended; None while it runs (or before it started)."""
        return self.process.returncode if self.process is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the agent wrote on stderr, redacted."""
        return [redact_text(line) for line in self._stderr_tail]

    async def crash_error(self, exc: BaseException) -> AgentCrashed:
        """Turn a broken connection into a message that says what happened to the agent."""
        code = await self._exit_code(wait=1.0)
        if code is not None:
            return AgentCrashed(f"the agent exited with code {code} during the turn{self._stderr_hint()}")
        return AgentCrashed(f"the connection to the agent broke during the turn ({exc}){self._stderr_hint()}")

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
        if self.process is not None:
            await end_process_group(self.process, grace)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 1.0)
        if self._log_file is not None:
            self._log_file.close()

    # ------------------------------------------------------------ sessions and turns

    async def new_session(self, cwd: str, **kwargs: Any) -> str:
        """Open a session in workspace ``cwd`` (absolute, as ACP requires)."""
        try:
            workspace = os.path.abspath(cwd)  # noqa: ASYNC240 - string work, no I/O
            response = await self.connection.new_session(
                cwd=workspace, mcp_servers=list(self.mcp_servers), **kwargs
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
            response = await self.connection.load_session(
                cwd=workspace, session_id=session_id, mcp_servers=list(self.mcp_servers)
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
                page = await self.connection.list_sessions(cwd=workspace, cursor=cursor)
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
            await request_model_from_dict(
                self.connection._conn, AGENT_METHODS["session_delete"], request, DeleteSessionResponse
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
