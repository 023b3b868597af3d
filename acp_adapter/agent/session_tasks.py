"""The MCP tasks of a session that outlive the agent: written down while they run, picked up again
when the session is loaded or resumed.

Why: a task runs on its server. If the agent process dies or the editor hangs up while one runs,
its result is not lost — the server still has it. The session's :class:`SessionTaskLog` keeps each
running task's id and server in the session store (its key-value rows, the same on SQLite and
PostgreSQL); :func:`resume_tasks` finds them at the next ``session/load`` (or resume), shows each
task's card again with its current status, follows it, and delivers its result when it finishes —
or says plainly that the server no longer knows it. A task whose server is not passed this time
stays on record (its card says so) until a load passes it again. The
card's final state joins the stored conversation (history is canonical), and the model hears of
the result in the session's history.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import anyio
from acp.schema import ToolCallProgress, ToolCallStart
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from acp_adapter.agent.session import Session
from acp_adapter.mcp.clean import ServerCrashed, reason_of, scrub
from acp_adapter.mcp.config import MCP_TASKS
from acp_adapter.mcp.task_calls import MAX_RECORDS, TaskFailed, TaskRecord, finish
from acp_adapter.mcp.tasks import status_line
from acp_adapter.mcp.tools import manager_ready, to_return
from acp_adapter.models.base import Message
from acp_adapter.protocol.meta import ProgressMeta
from acp_adapter.tooling.toolbox import ToolError
from acp_adapter.tools import build_tool_complete, build_tool_failed, build_tool_progress, build_tool_start

log = logging.getLogger("acp_progress.mcp")

#: What a card says of a task its server no longer has (restarted, expired, never kept it).
FORGOTTEN = (
    "the MCP server no longer knows this task (it was restarted, or the task expired); its result is lost"
)
#: The most of a resumed task's result the model is told in the session's history.
HISTORY_CAP = 8000


class SessionTaskLog:
    """The running tasks of one session, mirrored to the store (written off the event loop)."""

    def __init__(self, store: Any, writer: Any, session_id: str, *, loaded: bool = True) -> None:
        self.store = store
        self.writer = writer
        self.session_id = session_id
        self._lock = threading.Lock()
        self._records: dict[str, TaskRecord] = {}
        #: False until the stored records were read (:meth:`load`): nothing is written before, so a
        #: task started meanwhile never overwrites the ones an earlier process left
        self._loaded = loaded

    def load(self, records: list[TaskRecord]) -> None:
        """Add the records an earlier process left (read on a worker thread) and start writing."""
        with self._lock:
            newer = self._records
            self._records = {r.task_id: r for r in records}
            self._records.update(newer)
            self._loaded = True
        if newer:
            self._save()

    @property
    def records(self) -> list[TaskRecord]:
        with self._lock:
            return list(self._records.values())

    def started(self, record: TaskRecord) -> None:
        with self._lock:
            self._records[record.task_id] = record
            while len(self._records) > MAX_RECORDS:  # the oldest goes: a looping model is bounded
                del self._records[next(iter(self._records))]
        self._save()

    def ended(self, task_id: str) -> None:
        with self._lock:
            if self._records.pop(task_id, None) is None:
                return
        self._save()

    def _save(self) -> None:
        with self._lock:
            if not self._loaded:
                return
            rows = [r.dump() for r in self._records.values()]
        session_id, store = self.session_id, self.store
        if rows:
            self.writer.submit(lambda: store.put(MCP_TASKS, session_id, rows))
        else:
            self.writer.submit(lambda: store.remove(MCP_TASKS, session_id))


def stored_records(store: Any, session_id: str) -> list[TaskRecord]:
    """The task records a stored session left (on a worker thread); bad rows are skipped."""
    try:
        rows = store.get(MCP_TASKS, session_id)
    except Exception as exc:
        log.warning("could not read the MCP tasks of session %s: %s", session_id, reason_of(exc))
        return []
    if not isinstance(rows, list):
        return []
    records = [r for row in rows[:MAX_RECORDS] if (r := TaskRecord.load(row)) is not None]
    return records


async def resume_tasks(
    session: Session, manager: Any, task_log: SessionTaskLog, store: Any, writer: Any
) -> None:
    """Read the records the session left and pick up every task, in parallel; each ends its own card."""
    records = await anyio.to_thread.run_sync(stored_records, store, session.id)
    task_log.load(records)
    if not records:
        return
    log.info("session %s: picking up %d MCP task(s) left running", session.id, len(records))
    async with anyio.create_task_group() as tg:
        for record in records:
            tg.start_soon(_resume_one, session, manager, task_log, record, store, writer)


async def _resume_one(
    session: Session, manager: Any, task_log: SessionTaskLog, record: TaskRecord, store: Any, writer: Any
) -> None:
    """Show the task's card again, follow the task to its end and record how it ended; a task
    whose server was not passed this time stays on record, its card saying so."""
    card = f"mcp-task-{record.task_id}"
    outbox = session.stream.outbox
    meta = ProgressMeta(tool_id=record.tool, label=record.title)
    start = build_tool_start(card, f"{record.title} (task picked up again)", "other", meta=meta)
    outbox.submit(session.id, start)
    if manager.server(record.server) is None:  # not passed this time: the task stays on record
        why = (
            f"MCP server '{record.server}' was not passed this time; "
            "load the session with it to get the result"
        )
        outbox.submit(session.id, build_tool_failed(card, why))
        return
    end, text = await _task_ending(session, outbox, manager, record, card)
    outbox.submit(session.id, end)
    task_log.ended(record.task_id)
    _remember(session, record, start, end, text, store, writer)


async def _task_ending(
    session: Session, outbox: Any, manager: Any, record: TaskRecord, card: str
) -> tuple[ToolCallProgress, str]:
    """The card's last update and the result's text (empty unless it completed): a server that
    is gone, crashed or errs ends the card, never the session's load."""
    try:
        server = await manager_ready(manager, record.server)
        if server is None:
            why = f"MCP server '{record.server}' is not available now; the task's result cannot be fetched"
            return build_tool_failed(card, why), ""
        return await _follow(session, outbox, server, record, card)
    except ServerCrashed as exc:
        return build_tool_failed(card, f"MCP server '{record.server}': {exc}"), ""
    except MCPError as exc:
        return build_tool_failed(card, f"MCP server '{record.server}': {reason_of(exc)}"), ""


async def _follow(
    session: Session, outbox: Any, server: Any, record: TaskRecord, card: str
) -> tuple[ToolCallProgress, str]:
    """Follow the task on its ready server, its status on the card, to its result (scrubbed of
    the server's secrets); a task the server no longer knows ends as :data:`FORGOTTEN`."""
    secrets: tuple[str, ...] = server.secrets

    def show(task: Any) -> None:
        outbox.submit(session.id, build_tool_progress(card, message=scrub(status_line(task), secrets)))

    try:
        task = await server.tasks.get(record.task_id)
    except MCPError as exc:
        if exc.error.code == CONNECTION_CLOSED:
            raise
        log.info("MCP task %s: tasks/get failed: %s", record.task_id, reason_of(exc))
        return build_tool_failed(card, FORGOTTEN), ""
    try:
        result = await finish(server, task, show)
        text = to_return(result, secrets).text
        return build_tool_complete(card, text), text
    except TaskFailed as exc:
        return build_tool_failed(card, scrub(f"MCP task failed: {exc}", secrets)), ""
    except ToolError as exc:
        return build_tool_failed(card, str(exc)), ""


def _remember(
    session: Session,
    record: TaskRecord,
    start: ToolCallStart,
    end: ToolCallProgress,
    text: str,
    store: Any,
    writer: Any,
) -> None:
    """The card in its final state joins the stored conversation; the model hears the result."""
    entry = start.model_dump(mode="json", by_alias=True, exclude_none=True)
    changes = end.model_dump(mode="json", by_alias=True, exclude_none=True)
    for key in ("sessionUpdate", "_meta"):
        changes.pop(key, None)
    entry.pop("_meta", None)
    entry.update(changes)
    session_id, now = session.id, time.time()
    writer.submit(lambda: store.append_events(session_id, [entry], now))
    status = end.status or "failed"
    said = text if status == "completed" else ""
    note = f"[The MCP task '{record.title}', still running when this session was last open, ended: {status}.]"
    if said:
        note += "\n" + said[:HISTORY_CAP]
    session.history.append(Message("assistant", note))
