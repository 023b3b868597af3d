"""Admitting a run: a new run claims its thread and starts driving, or a ``resume`` continues the
thread's paused turn; the number of runs in flight is bounded from admission on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.interrupts import PermissionBroker, ResumeError, resume_entry
from acp_adapter.frontends.agui.observers import ObserverSet, RunContext, RunObserverFactory
from acp_adapter.frontends.agui.policy import RedactPolicy
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.replica_claims import ReplicaClaims
from acp_adapter.frontends.agui.request import RunRequest
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadRegistry
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.service")

#: the name of a run's driving task (what :meth:`~.service.AguiService.end_runs` counts)
RUN_TASK_PREFIX = "agui-run"

Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]
"""``(coroutine, name) -> task``: a task the endpoint ends when it stops."""


class TooManyRuns(AcpProgressError):
    """As many runs as the endpoint allows are in flight (a 503 with ``Retry-After``)."""


@dataclass(frozen=True)
class RunSettings:
    """What every run of the endpoint gets: its redaction ``policy``, its observers (the summary
    first when ``summaries`` are on), and the endpoint's bounds."""

    policy: RedactPolicy
    observers: tuple[RunObserverFactory, ...]
    summaries: bool
    max_runs: int
    max_queued_events: int
    cancel_grace: float


class RunStarter:
    """Opens the endpoint's runs on its one agent and counts those in flight."""

    def __init__(
        self,
        settings: RunSettings,
        host: AgentHost,
        threads: ThreadRegistry,
        thread_sessions: ThreadSessions,
        permissions: PermissionBroker,
        claims: ReplicaClaims,
        spawn: Spawn,
    ) -> None:
        self._settings = settings
        self._host = host
        self._threads = threads
        self._thread_sessions = thread_sessions
        self._permissions = permissions
        self._claims = claims
        self._spawn = spawn
        #: runs admitted and not yet ended (counted from admission, before the thread is claimed)
        self.runs_in_flight = 0

    @property
    def runs_full(self) -> bool:
        return self.runs_in_flight >= self._settings.max_runs

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
            raise TooManyRuns(
                f"{self._settings.max_runs} runs are in progress, the most this endpoint serves at once"
            )
        self.runs_in_flight += 1
        try:
            active = await self._start(request)
        except BaseException:
            self.runs_in_flight -= 1
            raise
        return active

    def _paused_run(self, thread_id: str) -> ActiveRun | None:
        slot = self._threads.get(thread_id)
        active = slot.active if slot is not None else None
        return active if isinstance(active, ActiveRun) and active.paused is not None else None

    def _resume(self, active: ActiveRun, request: RunRequest) -> ActiveRun:
        """The paused turn goes on as this run: same projection, a new emitter, the chosen answer."""
        pending = active.paused
        assert pending is not None and request.input.resume
        answer = pending.choice(resume_entry(request.input.resume, pending))
        projection = active.context.emitter.projection
        projection.reopen(request.input.run_id)
        emitter = RunEmitter(
            projection, asyncio.get_running_loop(), max_queued=self._settings.max_queued_events
        )
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

    def _new_run(self, request: RunRequest) -> ActiveRun:
        """The run's projection, emitter and context, not started yet."""
        run_input = request.input
        projection = RunProjection(
            run_input.thread_id,
            run_input.run_id,
            emit_tool_progress=request.tool_progress,
            policy=self._settings.policy,
        )
        emitter = RunEmitter(
            projection, asyncio.get_running_loop(), max_queued=self._settings.max_queued_events
        )
        context = RunContext(
            thread_id=run_input.thread_id,
            run_id=run_input.run_id,
            prompt=request.prompt,
            input=run_input,
            emitter=emitter,
            tool_progress=request.tool_progress,
            progress_summary=request.progress_summary and self._settings.summaries,
        )
        return ActiveRun(
            context,
            host=self._host,
            threads=self._threads,
            spawn=self._spawn,
            broker=self._permissions,
            asks_permission=request.asks_permission,
        )

    async def _start(self, request: RunRequest) -> ActiveRun:
        """Claim the thread (here and across replicas), then start driving the run."""
        run_input = request.input
        self._thread_sessions.note_title(run_input.thread_id, request.prompt)
        active = self._new_run(request)
        context = active.context
        slot = await self._threads.claim(
            run_input.thread_id, active, wait_abandoned=self._settings.cancel_grace
        )
        await self._claims.claim(slot, active)
        active.observers = ObserverSet.build(self._settings.observers, context)
        context.emitter.start()
        task = self._spawn(active.drive(slot), RUN_TASK_PREFIX)
        task.add_done_callback(self._run_ended)
        log.info(
            "run %s on thread %s started (tool progress %s, progress summary %s)",
            redact_text(run_input.run_id),
            redact_text(run_input.thread_id),
            "on" if request.tool_progress else "off",
            "on" if context.progress_summary else "off",
        )
        return active
