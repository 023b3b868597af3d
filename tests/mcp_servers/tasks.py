"""A test MCP server whose tools run as MCP tasks (protocol 2025-11-25), built with the ``mcp`` SDK.

Run ``python -m tests.mcp_servers.tasks [stdio|http PORT]``. The SDK serves tasks as types only, so
this server adds them itself: it advertises ``tasks`` (``tools/call``, ``cancel``), marks its task
tools ``execution.taskSupport``, answers a ``tools/call`` that asks for a task with a
``CreateTaskResult`` (in a server middleware, which owns that answer) and serves ``tasks/get``,
``tasks/result`` and ``tasks/cancel``. Its tools cover what the agent must handle:

* ``steps`` — ``steps`` steps of ``delay`` seconds, each one a progress notification, then a
  status message and a ``notifications/tasks/status`` (``quiet``: no status notifications,
  the client must poll; ``hold_at`` and ``gate``: the task holds at that step until the file
  ``gate`` exists, so a test decides when it goes on);
* ``breaks`` — fails after two steps (status ``failed``, an error result);
* ``forgets`` — the server forgets the task at once (``tasks/get`` answers "unknown task");
* ``asks`` — asks the person a question (``elicitation/create``) and answers with what they said;
* ``orders`` — asks a form of every kind a page draws (text, whole number, yes/no, a choice), its
  first field's title hostile (an escape sequence, a right-to-left override);
* ``opens`` — sends the person to a link (URL-mode ``elicitation/create``);
* ``badid`` — a task id no client should keep (5,000 characters and an escape sequence);
* ``stamped`` — one status change and one progress notification per step, each stamped with the
  sender's monotonic clock (the benchmark's twin measurements).

Tasks live in this process, not in a connection: over HTTP a new client (an agent started again)
finds the tasks the old one created. ``MCP_TASKS_PIDFILE`` gets the pid; ``MCP_TASKS_CANCELLED``
names a file each ``tasks/cancel`` writes its task id to.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

server = MCPServer("tasks")
TASK_TOOLS = {"steps", "breaks", "forgets", "stamped", "badid"}
POLL_MS = int(os.environ.get("MCP_TASKS_POLL_MS", "200"))


@dataclass
class Job:
    task: types.Task
    done: anyio.Event = field(default_factory=anyio.Event)
    result: types.CallToolResult | None = None
    session: Any = None
    token: str | int | None = None


JOBS: dict[str, Job] = {}


def _now() -> str:
    return datetime.now(UTC).isoformat()


async def _set(job: Job, status: types.TaskStatus, message: str | None, notify: bool = True) -> None:
    changes = {"status": status, "status_message": message, "last_updated_at": _now()}
    job.task = job.task.model_copy(update=changes)
    if status in ("completed", "failed", "cancelled"):
        job.done.set()
    if notify and job.session is not None:
        params = types.TaskStatusNotificationParams.model_validate(
            job.task.model_dump(by_alias=True), by_name=False
        )
        try:
            await job.session.send_notification(types.TaskStatusNotification(params=params))
        except Exception:  # the client went away: it polls when it comes back
            job.session = None


async def _progress(job: Job, value: float, total: float, message: str) -> None:
    if job.session is None or job.token is None:
        return
    params = types.ProgressNotificationParams(
        progress_token=job.token, progress=value, total=total, message=message
    )
    try:
        await job.session.send_notification(types.ProgressNotification(params=params))
    except Exception:
        job.session = None


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def _run(job: Job, name: str, args: dict[str, Any]) -> None:
    steps = int(args.get("steps", 20))
    delay = float(args.get("delay", 0.05))
    notify = not bool(args.get("quiet", False))
    hold_at, gate = int(args.get("hold_at", 0)), str(args.get("gate", ""))
    try:
        if name == "forgets":
            JOBS.pop(job.task.task_id, None)
            return
        if name == "stamped":
            for i in range(1, steps + 1):
                await anyio.sleep(delay)
                stamp = f"t={time.monotonic():.6f}"
                await _set(job, "working", f"status {stamp}")
                await _progress(job, i, steps, f"progress t={time.monotonic():.6f}")
            job.result = _text(f"stamped {steps}")
            await _set(job, "completed", None)
            return
        for i in range(1, steps + 1):
            if job.task.status == "cancelled":
                return
            # progress before status: an agent passes a status on one task hop after it reads it
            # (through the task's follower), a progress at once, and a card's unsent progress is
            # replaced by its newer one; read in one burst the other way round, the status would
            # replace the step's value before it was sent, however fast the agent
            await _progress(job, i, steps, f"step {i}")
            await _set(job, "working", f"step {i} of {steps}", notify)
            if name == "breaks" and i == 2:
                job.result = _text("the widget broke at step 2", error=True)
                await _set(job, "failed", "the widget broke at step 2", notify)
                return
            while i == hold_at and gate:  # held at this step until the test opens the gate (a file)
                if os.path.exists(gate) or job.task.status == "cancelled":
                    break
                await anyio.sleep(0.02)
            await anyio.sleep(delay)
        if job.task.status != "cancelled":
            job.result = _text(f"all {steps} steps done")
            await _set(job, "completed", f"all {steps} steps done", notify)
    except Exception as exc:  # a server bug shows as a failed task, never a hang
        job.result = _text(str(exc), error=True)
        await _set(job, "failed", str(exc), notify)


def _tool(name: str, description: str) -> types.Tool:
    schema = {
        "type": "object",
        "properties": {
            "steps": {"type": "integer"},
            "delay": {"type": "number"},
            "quiet": {"type": "boolean"},
            "hold_at": {"type": "integer"},
            "gate": {"type": "string"},
        },
    }
    return types.Tool(
        name=name,
        description=description,
        input_schema=schema,
        execution=types.ToolExecution(task_support="optional"),
        annotations=types.ToolAnnotations(read_only_hint=True),
    )


TOOLS = [
    _tool("steps", "Run steps as a task, reporting each one."),
    _tool("breaks", "A task that fails after two steps."),
    _tool("forgets", "A task the server forgets at once."),
    _tool("stamped", "Status changes and progress stamped with the sender's clock."),
    _tool("badid", "A task whose id is 5,000 characters and an escape sequence."),
]


class Colour(BaseModel):
    colour: str = Field(title="Colour", description="The colour you like")


@server.tool(description="Ask the person a question and answer with what they said.")
async def asks(ctx: Context, question: str = "What colour?") -> str:
    answer = await ctx.elicit(question, Colour)
    if answer.action == "accept":
        return f"the person said {answer.data.colour}"
    return f"the person chose {answer.action}"


HOSTILE_TITLE = "Name\x1b]0;pwned\x07\x1b[31m\u202etxt.exe"


class Order(BaseModel):
    name: str = Field(title=HOSTILE_TITLE, description="Who the order is for")
    count: int = Field(title="How many")
    urgent: bool = Field(title="Urgent", default=False)
    size: Literal["small", "large"] = Field(title="Size")


@server.tool(description="Ask the person for an order (a form of every kind) and answer with it.")
async def orders(ctx: Context) -> str:
    answer = await ctx.elicit("Your order?", Order)
    if answer.action == "accept":
        order = answer.data
        return f"ordered {order.count} {order.size} for {order.name}, urgent={order.urgent}"
    return f"the person chose {answer.action}"


@server.tool(description="Send the person to a link and say whether they agreed to go.")
async def opens(ctx: Context, url: str = "https://example.com/login") -> str:
    answer = await ctx.elicit_url("Sign in to go on", url, "login-1")
    if answer.action == "accept":  # the sign-in "happened": the client is told it is done
        await ctx.session.send_elicit_complete("login-1")
    return f"the person chose {answer.action}"


def _job(ctx: ServerRequestContext[Any, Any]) -> Job:
    task_id = (ctx.params or {}).get("taskId")
    job = JOBS.get(task_id) if isinstance(task_id, str) else None
    if job is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"unknown task {task_id}")
    return job


async def tasks_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Tasks on top of the SDK: the task requests, the task answer of ``tools/call``, the listing."""
    params = dict(ctx.params or {})
    if ctx.method == "tools/list":
        return types.ListToolsResult(tools=[*TOOLS, *(await server.list_tools())])
    if ctx.method == "tools/call" and params.get("name") in TASK_TOOLS and params.get("task") is not None:
        now = _now()
        hostile = "x" * 5000 + "\x1b[2J" if params.get("name") == "badid" else None
        task = types.Task(
            task_id=hostile or uuid.uuid4().hex,
            status="working",
            created_at=now,
            last_updated_at=now,
            ttl=params["task"].get("ttl"),
            poll_interval=POLL_MS,
        )
        token = (params.get("_meta") or {}).get("progressToken")
        job = JOBS[task.task_id] = Job(task, session=ctx.session, token=token)
        server_tasks.start_soon(_run, job, str(params["name"]), dict(params.get("arguments") or {}))
        return types.CreateTaskResult(task=task)
    if ctx.method == "tasks/get":
        job = _job(ctx)
        job.session = job.session or ctx.session
        return types.GetTaskResult.model_validate(job.task.model_dump(by_alias=True), by_name=False)
    if ctx.method == "tasks/result":
        job = _job(ctx)
        await job.done.wait()
        return job.result or _text("cancelled", error=True)
    if ctx.method == "tasks/cancel":
        job = _job(ctx)
        if job.task.status in ("working", "input_required"):
            await _set(job, "cancelled", "cancelled by the client")
        heard = os.environ.get("MCP_TASKS_CANCELLED")
        if heard:
            with open(heard, "a") as handle:  # proof for the tests that tasks/cancel arrived
                handle.write(f"{job.task.task_id}\n")
        return types.CancelTaskResult.model_validate(job.task.model_dump(by_alias=True), by_name=False)
    return await call_next(ctx)


def _capabilities(original: Any) -> Any:
    def capabilities(*args: Any, **kwargs: Any) -> types.ServerCapabilities:
        caps: types.ServerCapabilities = original(*args, **kwargs)
        caps.tasks = types.ServerTasksCapability(
            cancel=types.TasksCancelCapability(),
            requests=types.ServerTasksRequestsCapability(
                tools=types.TasksToolsCapability(call=types.TasksCallCapability())
            ),
        )
        return caps

    return capabilities


low = server._lowlevel_server  # the SDK serves tasks as types only: this server adds them
low.middleware.append(tasks_middleware)
low.get_capabilities = _capabilities(low.get_capabilities)
server_tasks: Any = None


async def _serve(argv: list[str]) -> None:
    global server_tasks
    async with anyio.create_task_group() as tg:
        server_tasks = tg
        if argv and argv[0] == "http":
            await server.run_streamable_http_async(host="127.0.0.1", port=int(argv[1]))  # type: ignore[call-arg]
        else:
            await server.run_stdio_async()
        tg.cancel_scope.cancel()


def main() -> None:
    pidfile = os.environ.get("MCP_TASKS_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as handle:
            handle.write(f"{os.getpid()}\n")
    anyio.run(_serve, sys.argv[1:])


if __name__ == "__main__":
    main()
