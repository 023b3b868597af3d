"""A tool call made as an MCP task, from the handle to the result, and the record that lets a task
outlive the agent.

Why records: a task runs on the server, not in the agent. Its id and server are written down (the
session's :class:`TaskLog`) the moment the server hands them out and struck out when its result was
delivered or it was cancelled; a record still there when the session is loaded again (the agent
was killed, the editor hung up) is a task someone still waits for — the session shows its card
again and delivers its result (:mod:`acp_adapter.agent.session_tasks`).

Cancel: ``session/cancel`` sends ``tasks/cancel`` (bounded) and the card ends at once. The agent
shutting down or the editor hanging up is not a cancel of the task: it keeps running, and its
record stays for the next load.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from acp_adapter.cancel import outlives_cancel
from acp_adapter.errors import AcpProgressError
from acp_adapter.mcp.clean import ServerCrashed, reason_of
from acp_adapter.mcp.connection import McpServer
from acp_adapter.mcp.tasks import TERMINAL, StatusFn, can_cancel

log = logging.getLogger("acp_progress.mcp")

#: Seconds ``tasks/cancel`` may take before the card ends anyway (the card must end within 2 s).
CANCEL_WAIT = 1.5
#: The most records one session keeps (a model looping over a task tool cannot grow it forever).
MAX_RECORDS = 64
MAX_ID = 200


@dataclass(frozen=True)
class TaskRecord:
    """What the session store keeps of a running task: enough to find it again and show it."""

    task_id: str
    server: str
    tool: str
    title: str
    at: float

    def dump(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def load(cls, raw: object) -> TaskRecord | None:
        """A record read back from the store; None for anything that is not one (altered rows)."""
        if not isinstance(raw, Mapping):
            return None
        try:
            record = cls(
                str(raw["task_id"])[:MAX_ID],
                str(raw["server"])[:MAX_ID],
                str(raw["tool"])[:MAX_ID],
                str(raw["title"])[:MAX_ID],
                float(raw["at"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return record if fit_task_id(record.task_id) and record.server else None


class TaskLog(Protocol):
    """Where a session writes down its running tasks."""

    def started(self, record: TaskRecord) -> None: ...

    def ended(self, task_id: str) -> None: ...


class TaskFailed(AcpProgressError):
    """The task ended failed or cancelled by the server; the message says why."""


async def call_as_task(
    server: McpServer,
    tool: str,
    arguments: dict[str, Any],
    *,
    title: str,
    progress: ProgressFnT,
    on_status: StatusFn,
    cancel_reason: Callable[[], str],
    task_log: TaskLog | None,
    call_timeout: float | None = None,
) -> types.CallToolResult:
    """Call ``tool`` as a task and wait for its result; raises :class:`TaskFailed` for a task that
    failed or was cancelled, :class:`ServerCrashed` when the connection closed."""
    try:
        answer, token = await server.tasks.create(tool, arguments, progress, call_timeout)
    except MCPError as exc:
        raise _crashed_or(exc) from None
    if isinstance(answer, types.CallToolResult):  # the server ran it at once
        server.tasks.forget_progress(token)
        return answer
    task = answer.task
    if not fit_task_id(task.task_id):
        server.tasks.forget_progress(token)
        await _cancel_task(server, task.task_id)
        raise TaskFailed(
            "the server named its task with an id this agent does not keep (too long or not text)"
        )
    record = TaskRecord(task.task_id, server.name, tool, title, time.time())
    if task_log is not None:
        task_log.started(record)
    return await _recorded_result(server, task, token, on_status, cancel_reason, task_log)


async def _recorded_result(
    server: McpServer,
    task: types.Task,
    token: str,
    on_status: StatusFn,
    cancel_reason: Callable[[], str],
    task_log: TaskLog | None,
) -> types.CallToolResult:
    """Follow a recorded task to its result. Its record is struck out once the task ended (a
    result, a failure, a cancel of the prompt, which cancels the task where the server can) and
    kept when the agent only stopped waiting (shutting down, the editor hung up): someone still
    waits for that task."""
    ended = False
    try:
        result = await finish(server, task, on_status)
        ended = True
        return result
    except TaskFailed:
        ended = True
        raise
    except BaseException:
        if not outlives_cancel(cancel_reason()):
            ended = True
            if can_cancel(server.session.server_capabilities if server.session else None):
                await _cancel_task(server, task.task_id)
        raise
    finally:
        server.tasks.forget_progress(token)
        if ended and task_log is not None:
            task_log.ended(task.task_id)


async def _cancel_task(server: McpServer, task_id: str) -> None:
    """``tasks/cancel``, shielded and bounded: the card ends within its time whatever the server does."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT):
        try:
            await server.tasks.cancel(task_id, within=CANCEL_WAIT)
        except Exception as exc:
            log.info("MCP server %s: tasks/cancel failed: %s", server.name, reason_of(exc))


async def finish(server: McpServer, task: types.Task, on_status: StatusFn) -> types.CallToolResult:
    """Follow a task to its end and fetch its result (``tasks/result``)."""
    try:
        try:
            last = await server.tasks.follow(task, on_status)
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                raise
            raise TaskFailed(f"the MCP server no longer knows this task ({reason_of(exc)})") from None
        if last.status == "cancelled":
            raise TaskFailed(last.status_message or "the task was cancelled")
        # completed, failed, or waiting for input (tasks/result delivers the questions and
        # answers once the task is over)
        try:
            result = await server.tasks.result(task.task_id)
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                raise
            if last.status == "failed":
                raise TaskFailed(last.status_message or reason_of(exc)) from None
            raise
        if last.status == "failed" and not result.is_error:
            raise TaskFailed(last.status_message or "the task failed")
        return result
    except MCPError as exc:
        raise _crashed_or(exc) from None


def fit_task_id(task_id: str) -> bool:
    """A task id this agent keeps (in the store, in a card id): at most 200 printable ASCII characters."""
    return 0 < len(task_id) <= MAX_ID and task_id.isascii() and task_id.isprintable()


def _crashed_or(exc: MCPError) -> Exception:
    if exc.error.code == types.CONNECTION_CLOSED:
        return ServerCrashed("the server crashed or closed its connection")
    return exc


def is_terminal(task: types.Task) -> bool:
    return task.status in TERMINAL
