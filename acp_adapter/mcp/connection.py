"""One MCP server of one session: start it, keep it, call its tools, stop it.

Why this shape: the ``mcp`` SDK's transports are async context managers whose task groups must
be entered and left by one task, so every server lives in a *runner* task of the session's
task group (:mod:`acp_adapter.mcp.manager`). The runner enters the transport and the
``ClientSession``, lists the tools, says it is ready, then waits until it is told to stop;
leaving the contexts stops the server (stdio: close stdin, SIGTERM, SIGKILL of its own process
group — the SDK starts it with ``start_new_session``). A call is a separate task on the same
loop that uses the live ``ClientSession``; cancelling it makes the SDK send MCP
``notifications/cancelled``. Reasons shown to anyone are redacted: a server's command line,
environment and headers may hold tokens.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

from acp_adapter._version import __version__
from acp_adapter.mcp.clean import ServerCrashed, reason_of
from acp_adapter.mcp.elicitation import AskedCall
from acp_adapter.mcp.limits import MAX_MESSAGE, AnswerTooLarge, SizeGuard, too_large_text
from acp_adapter.mcp.stdio import bounded_stdio_client
from acp_adapter.mcp.tasks import TaskChannel, offers_tasks

log = logging.getLogger("acp_progress.mcp")

#: Seconds a server gets to start, initialize and list its tools.
START_TIMEOUT = 10.0
#: the SDK's wait for a stdio server to exit once its input is closed
STOP_GRACE = 2.0
#: At most this many pages of ``tools/list`` are read (a server paging forever is cut).
MAX_LIST_PAGES = 50
#: At most this many tools are read from one server (the names module keeps 1,000 of them).
MAX_LISTED = 5000

ProgressFn = ProgressFnT


def spec_secrets(spec: McpServerStdio | HttpMcpServer | SseMcpServer) -> tuple[str, ...]:
    """Values of a server's secret-named env variables and of all its headers (longest first): a
    server that echoes them (in a result, an error, a progress message, a log line) must not show
    them anywhere."""
    from acp_adapter.safety.redact import is_sensitive_name

    if isinstance(spec, McpServerStdio):
        values = [e.value for e in spec.env if is_sensitive_name(e.name)]
    else:
        values = [h.value for h in spec.headers]
        values += [v for h in spec.headers for v in h.value.split()[1:]]  # "Bearer TOKEN"
    return tuple(sorted({v for v in values if len(v) >= 6}, key=len, reverse=True))


def _stdio_params(spec: McpServerStdio, cwd: str) -> StdioServerParameters:
    env = {item.name: item.value for item in spec.env}
    return StdioServerParameters(command=spec.command, args=list(spec.args), env=env, cwd=cwd)


class McpServer:
    """One server: its state (``starting``, ``ready``, ``failed``, ``crashed``, ``stopped``), tools
    and session."""

    def __init__(
        self,
        spec: McpServerStdio | HttpMcpServer | SseMcpServer,
        cwd: str,
        *,
        start_timeout: float = START_TIMEOUT,
        max_message: int = MAX_MESSAGE,
        stop_grace: float = STOP_GRACE,
        on_list_changed: Callable[[McpServer], None] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.cwd = cwd
        self.start_timeout = start_timeout
        #: seconds a stdio server may take to exit once its input is closed, then it is terminated
        self.stop_grace = stop_grace
        self.state = "starting"
        self.error: str | None = None
        self.tools: list[types.Tool] = []
        #: set when the server said its tool list changed; the list is read again before the next turn
        self.tools_stale = False
        self.session: ClientSession | None = None
        #: the task requests of this server (MCP tasks), live while the session is
        self.tasks = TaskChannel()
        #: the tools to call as tasks (the server runs them as tasks and they say they support it)
        self.task_tools: frozenset[str] = frozenset()
        #: asks the person what the server asks (an ``elicitation.SessionQuestions``); None: nobody
        self.questions: Any = None
        #: the calls running on this server, latest last: a question belongs to the latest one
        self.asking: list[AskedCall] = []
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._on_list_changed = on_list_changed
        #: the one size limit on a message from this server, and how often it cut one off
        self.guard = SizeGuard(max_message)

    @property
    def secrets(self) -> tuple[str, ...]:
        """See :func:`spec_secrets`."""
        return spec_secrets(self.spec)

    # ------------------------------------------------------------ lifecycle (runner task)

    async def run(self) -> None:
        """The runner: connect, serve until stopped or the connection closes, then clean up."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                await self._serve()
            except Exception as exc:
                self._fail(reason_of(exc))
            finally:
                self.session = None
                if self.state == "ready" and not self._stop.is_set():
                    self.state = "crashed"
                    self.error = "the server crashed or closed its connection"
                elif self.state in ("starting", "ready"):
                    self.state = "stopped" if self._stop.is_set() else "failed"
                    self.error = self.error or "the server closed its connection"
                self._ready.set()
                self._done.set()
        if scope.cancelled_caught and self.state == "starting":
            self._fail(f"did not start within {self.start_timeout:g} s")

    async def _serve(self) -> None:
        devnull = open(os.devnull, "w")  # noqa: SIM115, ASYNC230 - /dev/null never blocks
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(devnull))
                # the session's dispatcher is ours too: a task-augmented tools/call goes through it
                dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
                session = await stack.enter_async_context(
                    ClientSession(
                        dispatcher=dispatcher,
                        message_handler=self._on_message,
                        client_info=types.Implementation(name="acp-progress", version=__version__),
                        notification_bindings=[self.tasks.binding()],
                        elicitation_callback=self._on_question,
                    )
                )
                stack.callback(self.tasks.detach)
                await session.initialize()
                self.tools = await list_tools(session)
                self._note_task_tools(session)
                self.tasks.attach(session, dispatcher)
                self.session = session
                self.state = "ready"
                log.info("MCP server %s ready with %d tool(s)", self.name, len(self.tools))
                self._ready.set()
                await self._stop.wait()
        finally:
            devnull.close()

    def _transport(self, errlog: Any) -> contextlib.AbstractAsyncContextManager[Any]:
        if isinstance(self.spec, McpServerStdio):
            # the server's stderr may print its tokens: it never reaches our log
            return bounded_stdio_client(
                _stdio_params(self.spec, self.cwd),
                errlog=errlog,
                limit=self.guard.limit,
                on_cut=self.guard.trip,
                stop_grace=self.stop_grace,
            )
        if isinstance(self.spec, SseMcpServer):
            from acp_adapter.mcp.sse import bounded_sse_client

            return bounded_sse_client(self.spec.url, _headers(self.spec), self.guard)
        return _http_transport(self.spec, self.guard)

    async def _on_question(
        self, context: Any, params: types.ElicitRequestFormParams | types.ElicitRequestURLParams
    ) -> types.ElicitResult | types.ErrorData:
        """The server asks the person something (``elicitation/create``) during a call."""
        from acp_adapter.mcp.elicitation import NOBODY, declined

        call = self.asking[-1] if self.asking else None
        if self.questions is None:
            return declined(self.name, NOBODY, call)
        result: types.ElicitResult | types.ErrorData = await self.questions.ask(self.name, params, call)
        return result

    def _note_task_tools(self, session: ClientSession) -> None:
        caps = session.server_capabilities
        self.task_tools = frozenset(t.name for t in self.tools if offers_tasks(caps, t))

    def uses_task(self, tool: str) -> bool:
        """Whether ``tool`` is called as a task (MCP tasks)."""
        return tool in self.task_tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            await self.tasks.on_progress(message)  # a task's progress, after its call was answered
        elif isinstance(message, types.ElicitCompleteNotification):
            if self.questions is not None:  # the person finished what a link question sent them to
                await self.questions.completed(self.name, message.params.elicitation_id)
        elif isinstance(message, types.ToolListChangedNotification):
            self.tools_stale = True
            if self._on_list_changed is not None:
                self._on_list_changed(self)

    def _fail(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason
        self._ready.set()

    async def wait_ready(self, within: float | None = None) -> bool:
        """Wait until the server is ready or failed; on timeout, give up on it (it is stopped)."""
        with anyio.move_on_after(self.start_timeout if within is None else within):
            await self._ready.wait()
        if not self._ready.is_set():
            self._fail(f"did not start within {self.start_timeout:g} s")
            if self._scope is not None:
                self._scope.cancel()
        return self.state == "ready"

    async def stop(self, within: float = 6.0) -> None:
        """Stop the server and wait (bounded) until its process is gone."""
        self._stop.set()
        if self.state == "starting" and self._scope is not None:
            self._scope.cancel()
        with anyio.move_on_after(within):
            await self._done.wait()
        if not self._done.is_set() and self._scope is not None:
            self._scope.cancel()

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    # ------------------------------------------------------------ calls (any task)

    async def refresh_tools(self) -> None:
        """Read the tool list again (after ``notifications/tools/list_changed``)."""
        if self.session is None:
            return
        self.tools_stale = False
        with anyio.fail_after(self.start_timeout):
            self.tools = await list_tools(self.session)
        self._note_task_tools(self.session)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressFn,
        call_timeout: float | None = None,
    ) -> types.CallToolResult:
        """Call one tool with a progress token; a closed connection raises :class:`ServerCrashed`, an
        answer cut off at the size limit :class:`AnswerTooLarge`."""
        session = self.session
        if session is None or self.state != "ready":
            raise ServerCrashed(self.error or "the server is not running")
        cut_before = self.guard.tripped
        try:
            result = await session.call_tool(
                tool, arguments, read_timeout_seconds=call_timeout, progress_callback=progress
            )
        except MCPError as exc:
            cut = self.guard.tripped != cut_before  # the transport cut a message off meanwhile
            # streamable HTTP reports a cut-off event stream as "closed", but only that one
            # request's stream ended: the server's connection is fine
            closed = exc.error.code == types.CONNECTION_CLOSED and not (
                cut and isinstance(self.spec, HttpMcpServer)
            )
            if closed:
                self.state = "crashed"
                self.error = "the server crashed or closed its connection"
                self._stop.set()
            if cut:  # that is why the call failed
                ending = "; its connection was closed" if closed else ""
                raise AnswerTooLarge(too_large_text(self.guard.limit) + ending) from None
            if closed:
                raise ServerCrashed(self.error) from None
            raise
        if not isinstance(result, types.CallToolResult):
            raise RuntimeError("the server answered with an unsupported result")
        return result


async def list_tools(session: ClientSession) -> list[types.Tool]:
    """Every tool of a server, page by page, bounded in pages and in tools."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools[: MAX_LISTED - len(tools)])
        cursor = page.next_cursor
        if not cursor or len(tools) >= MAX_LISTED:
            break
    return tools


def _headers(spec: HttpMcpServer | SseMcpServer) -> dict[str, str]:
    """The spec's headers (they carry tokens: never logged)."""
    return {h.name: h.value for h in spec.headers}


@contextlib.asynccontextmanager
async def _http_transport(spec: HttpMcpServer, guard: SizeGuard) -> Any:
    """Streamable HTTP with the spec's headers, every response bounded by ``guard``."""
    from mcp.client.streamable_http import streamable_http_client

    from acp_adapter.mcp.http import SDK_EVENT_SLACK, bounded_http_client

    async with (
        bounded_http_client(guard, headers=_headers(spec)) as http,
        streamable_http_client(
            spec.url, http_client=http, max_sse_event_size=guard.limit + SDK_EVENT_SLACK
        ) as streams,
    ):
        yield streams[0], streams[1]
