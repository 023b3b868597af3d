"""MCP tasks (protocol 2025-11-25): a tool call answered with a task handle, followed until it ends.

Why a module of its own: the ``mcp`` SDK has the task types (``CreateTaskResult``,
``GetTaskRequest``, ``TaskStatusNotification`` …) but no typed client calls for them. Every task
message is built here from those types and sent through the server's live ``ClientSession``
(``tasks/get``, ``tasks/result``, ``tasks/cancel``) or, for the one request whose answer the
session would check against the plain ``tools/call`` result shape, through the session's own
JSON-RPC dispatcher with the same typed params. Nothing here writes JSON by hand.

A task outlives the call that created it (and the agent: the server keeps it), so following one
is a loop of its own — :func:`follow` — driven by ``notifications/tasks/status`` when the server
sends them and by ``tasks/get`` at the server's ``pollInterval`` otherwise. Progress notifications
keep flowing after the ``tools/call`` answer, under a progress token chosen here, and reach the
callback registered for that token.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp import ClientSession
from mcp.client.extension import NotificationBinding
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from pydantic import TypeAdapter

from acp_adapter.mcp.clean import ServerCrashed, clean_text

log = logging.getLogger("acp_progress.mcp")

#: The states after which a task never changes again.
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: Polling bounds in seconds: a server asking for 1 ms polls is not obeyed, nor one asking for hours.
MIN_POLL = 0.05
MAX_POLL = 30.0
#: Poll interval when the server suggests none.
DEFAULT_POLL = 1.0
#: How long a task is asked to be kept after its creation (ms): long enough to be found after the
#: agent was restarted, short enough not to pile up on the server.
TASK_TTL_MS = 24 * 3600 * 1000
#: The longest status message kept (characters).
MAX_STATUS = 500
#: Status notifications waiting for their follower; older ones are dropped (a flooding server).
MAX_PENDING_STATUS = 64

_CREATED = TypeAdapter[types.CreateTaskResult | types.CallToolResult](
    types.CreateTaskResult | types.CallToolResult
)

StatusFn = Callable[[types.Task], Awaitable[None] | None]


def offers_tasks(capabilities: types.ServerCapabilities | None, tool: types.Tool) -> bool:
    """Whether ``tool`` is to be called as a task: the server can run ``tools/call`` as a task and
    the tool says it supports it (``optional`` or ``required``)."""
    support = tool.execution.task_support if tool.execution is not None else None
    if support not in ("optional", "required"):
        return False
    tasks = capabilities.tasks if capabilities is not None else None
    requests = tasks.requests if tasks is not None else None
    return requests is not None and requests.tools is not None and requests.tools.call is not None


def can_cancel(capabilities: types.ServerCapabilities | None) -> bool:
    tasks = capabilities.tasks if capabilities is not None else None
    return tasks is not None and tasks.cancel is not None


class TaskChannel:
    """The task requests and notifications of one server's session."""

    def __init__(self) -> None:
        self.session: ClientSession | None = None
        self.dispatcher: JSONRPCDispatcher[Any] | None = None
        self._watchers: dict[str, MemoryObjectSendStream[types.Task]] = {}
        self._progress: dict[str, ProgressFnT] = {}

    # ------------------------------------------------------------ wiring (the server's runner)

    def binding(self) -> NotificationBinding[types.TaskStatusNotificationParams]:
        """The session's binding for ``notifications/tasks/status`` (not in the SDK's tables)."""
        return NotificationBinding(
            method="notifications/tasks/status",
            params_type=types.TaskStatusNotificationParams,
            handler=self._on_status,
        )

    def attach(self, session: ClientSession, dispatcher: JSONRPCDispatcher[Any]) -> None:
        self.session = session
        self.dispatcher = dispatcher

    def detach(self) -> None:
        self.session = None
        self.dispatcher = None
        for send in self._watchers.values():
            send.close()
        self._watchers.clear()
        self._progress.clear()

    async def _on_status(self, params: types.TaskStatusNotificationParams) -> None:
        send = self._watchers.get(params.task_id)
        if send is not None:
            # the follower polls anyway: a dropped notice costs one poll interval
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(params)  # the notification's params are a Task

    async def on_progress(self, notification: types.ProgressNotification) -> None:
        """A progress notification after the ``tools/call`` answer (the message handler's tee)."""
        report = self._progress.get(str(notification.params.progress_token))
        if report is not None:
            params = notification.params
            await report(params.progress, params.total, params.message)

    # ------------------------------------------------------------ requests

    def _live(self) -> tuple[ClientSession, JSONRPCDispatcher[Any]]:
        if self.session is None or self.dispatcher is None:
            raise ServerCrashed("the server is not running")
        return self.session, self.dispatcher

    async def create(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None,
        within: float | None = None,
    ) -> tuple[types.CreateTaskResult | types.CallToolResult, str]:
        """``tools/call`` as a task; the answer (a task handle, or a plain result from a server that
        ran it at once) and the progress token the task's progress arrives under."""
        session, dispatcher = self._live()
        token = f"acp-progress-task-{uuid.uuid4().hex}"
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name=tool,
                arguments=arguments,
                task=types.TaskMetadata(ttl=TASK_TTL_MS),
                _meta=types.RequestParamsMeta(progress_token=token),
            )
        )
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        opts: dict[str, Any] = {}
        if session.protocol_version:
            opts["headers"] = {MCP_PROTOCOL_VERSION_HEADER: session.protocol_version}
        if within is not None:
            opts["timeout"] = within
        if progress is not None:
            self._progress[token] = progress
        try:
            raw = await dispatcher.send_raw_request(data["method"], data.get("params"), opts)  # type: ignore[arg-type]
            return _CREATED.validate_python(raw, by_name=False), token
        except BaseException:
            self._progress.pop(token, None)
            raise

    def forget_progress(self, token: str) -> None:
        self._progress.pop(token, None)

    async def get(self, task_id: str, within: float = 10.0) -> types.GetTaskResult:
        session, _ = self._live()
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return await session.send_request(request, types.GetTaskResult, request_read_timeout_seconds=within)

    async def result(self, task_id: str, within: float | None = None) -> types.CallToolResult:
        session, _ = self._live()
        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
        return await session.send_request(request, types.CallToolResult, request_read_timeout_seconds=within)

    async def cancel(self, task_id: str, within: float = 1.5) -> types.CancelTaskResult:
        session, _ = self._live()
        request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
        answer = types.CancelTaskResult
        return await session.send_request(request, answer, request_read_timeout_seconds=within)

    # ------------------------------------------------------------ following one task

    async def follow(self, task: types.Task, on_status: StatusFn) -> types.Task:
        """Follow ``task`` until it is terminal (or needs input), calling ``on_status`` for every
        change of status or status message; returns the last state seen."""
        send, receive = anyio.create_memory_object_stream[types.Task](MAX_PENDING_STATUS)
        self._watchers[task.task_id] = send
        last: tuple[str, str | None] | None = None
        try:
            current = task
            while True:
                seen = (current.status, current.status_message)
                if seen != last:
                    last = seen
                    outcome = on_status(current)
                    if outcome is not None:
                        await outcome
                if current.status in TERMINAL or current.status == "input_required":
                    return current
                fresh: types.Task | None = None
                with anyio.move_on_after(poll_interval(current)):
                    try:
                        fresh = await receive.receive()
                    except anyio.EndOfStream:
                        raise ServerCrashed("the server closed its connection") from None
                if fresh is None:
                    fresh = await self.get(current.task_id)
                current = _with_interval(fresh, current)
        finally:
            if self._watchers.get(task.task_id) is send:
                del self._watchers[task.task_id]
            send.close()
            receive.close()


def poll_interval(task: types.Task) -> float:
    """The server's suggested polling interval, bounded (seconds)."""
    millis = task.poll_interval
    seconds = millis / 1000 if isinstance(millis, int) and millis > 0 else DEFAULT_POLL
    return min(max(seconds, MIN_POLL), MAX_POLL)


def _with_interval(fresh: types.Task, before: types.Task) -> types.Task:
    """A notification may omit ``pollInterval``: the last one the server gave stays."""
    if fresh.poll_interval is None and before.poll_interval is not None:
        return fresh.model_copy(update={"poll_interval": before.poll_interval})
    return fresh


def status_line(task: types.Task) -> str:
    """What a card shows of a task's state: its status in words and its message."""
    words = {
        "working": "working",
        "input_required": "waiting for your answer",
        "completed": "completed",
        "failed": "failed",
        "cancelled": "cancelled",
    }[task.status]
    message = task.status_message
    if isinstance(message, str) and message.strip():
        text = " ".join(clean_text(message).split())[:MAX_STATUS]
        return f"task {words}: {text}"
    return f"task {words}"
