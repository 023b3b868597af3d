"""The AG-UI endpoint without HTTP: configuration, the agent host, the threads, the runs in flight.

:mod:`.app` is the thin FastAPI layer over this; keeping the run logic here means it has no
framework types in it and a host embedding the endpoint differently can reuse it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any, Final

from acp_adapter.client.driver import parse_agent_command
from acp_adapter.config import AguiSettings
from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.endpoint import AGENT_SUMMARY_ENV, AguiOptions
from acp_adapter.frontends.agui.history import bounded, history_messages
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.interrupts import (
    PermissionBroker,
    ResumeError,
    resume_entry,
)
from acp_adapter.frontends.agui.observers import ObserverSet, RunContext
from acp_adapter.frontends.agui.policy import load_policy
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.questions import QuestionBroker
from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks, ReplicaUnavailable, claim_thread
from acp_adapter.frontends.agui.request import RunRequest
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.frontends.agui.summaries import summary_observers, summary_setup
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadBusy, ThreadRegistry, ThreadSlot
from acp_adapter.safety.redact import redact_text, redact_value

log = logging.getLogger("acp_progress.agui.service")

#: Seconds a history read waits for its thread's cancelled run to end (then it reads what is stored).
HISTORY_WAIT_S: Final = 5.0


class TooManyRuns(AcpProgressError):
    """As many runs as the endpoint allows are in flight (a 503 with ``Retry-After``)."""


#: the name of a run's driving task (what :meth:`AguiService.end_runs` counts)
RUN_TASK_PREFIX = "agui-run"


class AguiService:
    """Everything one AG-UI endpoint serves with: one agent, one session per thread."""

    def __init__(self, options: AguiOptions) -> None:
        """Resolve ``options``; a bad one raises here, before anything is served (an agent command
        line that does not split, a policy that does not load, a ``cwd`` that is no directory, a
        summary set-up that cannot work)."""
        self.options = options
        #: the agent's command line, split
        self.argv = parse_agent_command(options.agent_command)
        self.policy = load_policy(options.policy)
        self.tool_progress = (
            AguiSettings().tool_progress if options.tool_progress is None else options.tool_progress
        )
        #: the agent's directory and every session's workspace (absolute)
        self.workspace = options.workspace()
        #: how runs get progress summaries (None: never, not even on request)
        self.summary = summary_setup(options.summary)
        agent_env = dict(options.agent_env)
        agent_env.setdefault(AGENT_SUMMARY_ENV, "off")
        #: the endpoint's default for runs' permission interrupts (forwardedProps may override)
        self.permission_interrupts = options.permission_interrupts
        #: asks a run's client (an interrupt) when the run wants it, else ``permission_policy``
        self.permissions = PermissionBroker(options.permission_policy, timeout=options.permission_timeout)
        #: asks a run's client a tool's question (an interrupt with a form), else declines it
        self.questions = QuestionBroker(self.permissions, timeout=options.permission_timeout)
        #: threadId → sessionId, durable when given a store (else for this process only)
        self.thread_sessions = ThreadSessions(
            options.thread_store, retention_days=options.thread_retention_days, scope=options.thread_scope
        )
        self.max_runs = options.limits.max_runs
        self.max_queued_events = options.limits.max_queued_events
        #: runs admitted and not yet ended (counted from admission, before the thread is claimed)
        self.runs_in_flight = 0
        self.run_observers = list(options.run_observers)
        if self.summary is not None:
            # first, so the summary stops before slower observers' on_end hooks are awaited
            self.run_observers.insert(0, summary_observers(self.summary))
        self.cancel_grace = options.cancel_grace
        self.host = AgentHost(
            self.argv,
            cwd=self.workspace,
            env=agent_env,
            permission_policy=self.permissions,
            question_policy=self.questions,
            init_timeout=options.init_timeout,
            stderr_log=options.agent_log,
            threads=self.thread_sessions,
            mcp_servers=options.mcp_servers,
        )
        self.threads = ThreadRegistry()
        self._tasks: set[asyncio.Task[None]] = set()
        self.started = False
        self._closed = False
        #: the threads' locks across replicas (set when the store is shared: :mod:`.replicas`)
        self.thread_locks: ReplicaThreadLocks | None = None
        self._database_watch: asyncio.Task[None] | None = None

    @property
    def progress_summary(self) -> bool:
        """The endpoint's default for runs' progress summaries (a run's forwardedProps may override)."""
        return self.summary is not None and self.summary.default

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start the agent (app startup; a no-op when the host started it before). A failure
        propagates: the server must not come up without it."""
        if self.started:
            return
        forgotten = await self.thread_sessions.prune()
        if forgotten:
            days = self.thread_sessions.retention_days
            log.info("forgot %d AG-UI threads unused for %g days", forgotten, days)
        await self.host.start()
        self.started = True
        if self.thread_locks is not None:
            try:
                await asyncio.to_thread(self.thread_locks.prune, self.thread_sessions.retention_days)
            except Exception as exc:  # housekeeping: the next start prunes
                log.warning("could not forget old AG-UI thread runs: %s", redact_text(str(exc)))
        if self.thread_locks is not None:  # not a run: end_runs leaves it be
            self._database_watch = asyncio.get_running_loop().create_task(
                self.thread_locks.watch(), name="agui-database-health"
            )

    async def end_runs(self) -> int:
        """End the runs still in flight — each client gets ``RUN_ERROR`` ("the server is stopping")
        and its stream closes — and return how many there were. The agent keeps running."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        return sum(1 for task in tasks if task.get_name().startswith(RUN_TASK_PREFIX))

    async def close(self) -> None:
        """End the runs still in flight (their clients get ``RUN_ERROR``), then stop the agent (once)."""
        if self._closed:
            return
        self._closed = True
        await self.end_runs()
        await self.host.close()
        await self.thread_sessions.aclose()
        if self.thread_locks is not None:  # PostgreSQL releases whatever it still held
            if self._database_watch is not None:
                self._database_watch.cancel()
            await asyncio.to_thread(self.thread_locks.close)
        if self.summary is not None:
            await self.summary.aclose()
        self.started = False

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ runs

    @property
    def runs_full(self) -> bool:
        return self.runs_in_flight >= self.max_runs

    async def open_run(self, request: RunRequest) -> ActiveRun:
        """Claim the thread, queue RUN_STARTED, start driving — or continue the thread's paused turn.

        Raises :class:`TooManyRuns` when ``max_runs`` are in flight (counted from here, so runs
        waiting for their thread count too), :class:`~.threads.ThreadBusy`, and
        :class:`~.interrupts.ResumeError` for a ``resume`` that answers nothing pending.
        """
        paused = self._paused_run(request.input.thread_id)
        if request.input.resume:
            if paused is None:
                raise ResumeError(
                    f"thread {request.input.thread_id!r} has no pending interrupt to resume "
                    "(it was answered, or expired and the static policy answered it)"
                )
            return self._resume(paused, request)
        if paused is not None:
            paused.decline()  # a client that does not resume: the static policy answers
        if self.runs_full:
            raise TooManyRuns(f"{self.max_runs} runs are in progress, the most this endpoint serves at once")
        self.runs_in_flight += 1
        try:
            active = await self._open_run(request)
        except BaseException:
            self.runs_in_flight -= 1
            raise
        return active

    def _paused_run(self, thread_id: str) -> ActiveRun | None:
        slot = self.threads.get(thread_id)
        active = slot.active if slot is not None else None
        return active if isinstance(active, ActiveRun) and active.paused is not None else None

    def _resume(self, active: ActiveRun, request: RunRequest) -> ActiveRun:
        """The paused turn goes on as this run: same projection, a new emitter, the chosen answer."""
        pending = active.paused
        assert pending is not None and request.input.resume
        answer = pending.choice(resume_entry(request.input.resume, pending))
        projection = active.context.emitter.projection
        projection.reopen(request.input.run_id)
        emitter = RunEmitter(projection, asyncio.get_running_loop(), max_queued=self.max_queued_events)
        active.resume(emitter, request.input, answer)
        log.info(
            "run %s on thread %s resumes interrupt %s (%s)",
            redact_text(request.input.run_id),
            redact_text(request.input.thread_id),
            pending.id,
            "answered" if answer is not None else "cancelled: the static policy answers",
        )
        return active

    def _run_ended(self, task: asyncio.Task[None]) -> None:
        self.runs_in_flight -= 1

    async def _open_run(self, request: RunRequest) -> ActiveRun:
        run_input = request.input
        self.thread_sessions.note_title(run_input.thread_id, request.prompt)
        projection = RunProjection(
            run_input.thread_id,
            run_input.run_id,
            emit_tool_progress=request.tool_progress,
            policy=self.policy,
        )
        emitter = RunEmitter(projection, asyncio.get_running_loop(), max_queued=self.max_queued_events)
        context = RunContext(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            prompt=request.prompt,
            input=run_input,
            emitter=emitter,
            tool_progress=request.tool_progress,
            progress_summary=request.progress_summary and self.summary is not None,
        )
        active = ActiveRun(
            context,
            host=self.host,
            threads=self.threads,
            spawn=self.spawn,
            broker=self.permissions,
            asks_permission=request.asks_permission,
        )
        slot = await self.threads.claim(run_input.thread_id, active, wait_abandoned=self.cancel_grace)
        if self.thread_locks is not None:
            await self._claim_across_replicas(slot, active)
        active.observers = ObserverSet.build(self.run_observers, context)
        emitter.start()
        if self.thread_locks is not None:
            active.release_elsewhere = lambda: self._release_across_replicas(slot.thread_id)
        task = self.spawn(active.drive(slot), RUN_TASK_PREFIX)
        task.add_done_callback(self._run_ended)
        log.info(
            "run %s on thread %s started (tool progress %s, progress summary %s)",
            redact_text(run_input.run_id),
            redact_text(run_input.thread_id),
            "on" if request.tool_progress else "off",
            "on" if context.progress_summary else "off",
        )
        return active

    async def _claim_across_replicas(self, slot: ThreadSlot, active: ActiveRun) -> None:
        """The thread's lock across replicas (:mod:`.replicas`), after the in-process claim: a
        409 when another replica runs the thread; a stale copy of its session is dropped."""
        assert self.thread_locks is not None
        try:
            stale = await claim_thread(self.thread_locks, slot.thread_id)
        except ReplicaUnavailable as exc:
            self.threads.release(slot, active)
            raise ThreadBusy(f"thread {slot.thread_id!r} cannot run now ({exc}); try again") from None
        except BaseException:
            self.threads.release(slot, active)
            raise
        if stale is None:
            self.threads.release(slot, active)
            raise ThreadBusy(
                f"thread {slot.thread_id!r} already has a run in progress at another replica; a thread "
                "serves one run at a time: wait for its RUN_FINISHED"
            )
        if stale:  # another replica ran it since: load the session from the store again
            slot.session_id, slot.generation = None, -1

    async def _release_across_replicas(self, thread_id: str) -> None:
        """Off the loop; the thread map is written before the lock goes. Shielded: a run ended by
        the server stopping still lets go of its thread (the connection would, a moment later)."""
        locks = self.thread_locks
        if locks is not None:
            release = asyncio.to_thread(locks.release, thread_id, self.thread_sessions.writer.flush)
            await asyncio.shield(release)

    async def thread_list(self) -> list[dict[str, Any]]:
        """This endpoint's threads (the stored ones, most recent first), each with whether a run
        holds it now (``running``) or waits on a question (``paused``, with the ``interrupt``)."""
        rows = await self.thread_sessions.listing()
        for row in rows:
            slot = self.threads.get(row["threadId"])
            active = slot.active if slot is not None else None
            row["running"] = active is not None
            paused = active.paused if isinstance(active, ActiveRun) else None
            row["paused"] = paused is not None
            if paused is not None:  # a page reloaded while asked can ask again
                row["interrupt"] = paused.interrupt().model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
        return rows

    async def thread_history(self, thread_id: str) -> dict[str, Any] | None:
        """``thread_id``'s earlier conversation as AG-UI messages, bounded (:mod:`.history`), or
        ``None`` when this endpoint has no such thread.

        Read once what this endpoint's agent answered is on disk: a run of the thread being
        cancelled (its client left — the page's Stop) ends first, then the agent finishes its
        queued store writes (:meth:`~.host.AgentHost.flush_store`). Why here and not before
        ``RUN_FINISHED``: the agent already waits for a turn's write before it answers, but only
        so long (a slow store must not hold every answer) and not for a cancelled turn (a stop
        answers at once); a history read is rare, so it is the one that waits. Both bounded."""
        slot = self.threads.get(thread_id)
        active = slot.active if slot is not None else None
        if active is not None and active.abandoned:
            await active.wait_done(HISTORY_WAIT_S)
        await self.host.flush_store()
        updates = await self.thread_sessions.conversation(thread_id)
        if updates is None:
            return None
        messages, state = history_messages(updates, self.policy)
        kept, omitted = bounded(messages)
        answer: dict[str, Any] = {
            "threadId": redact_text(thread_id),
            "messages": kept,
            "truncated": omitted > 0,
            "omitted": omitted,
        }
        if state is not None:
            answer["state"] = redact_value(state)
        return answer

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "ok",
            "agentRunning": self.host.running,
            "threads": len(self.threads),
            "activeRuns": self.threads.active_runs,
        }
        if self.thread_locks is not None:
            ok = self.thread_locks.database_ok
            out["database"] = "unknown" if ok is None else "reachable" if ok else "unreachable"
        return out
