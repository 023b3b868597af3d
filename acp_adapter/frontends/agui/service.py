"""The AG-UI endpoint without HTTP: configuration, the agent host, the threads, the runs in flight.

:mod:`.app` is the thin FastAPI layer over this; keeping the run logic here means it has no
framework types in it and a host embedding the endpoint differently can reuse it. The service
resolves the options and owns the lifecycle; it hands the work to the parts it holds, each given
what it uses: :class:`~.run_starter.RunStarter` (admitting runs), :class:`~.thread_reader.ThreadReader`
(the listing and a thread's history) and :class:`~.replica_claims.ReplicaClaims` (a thread's lock
across replicas).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from acp_adapter.client.driver import parse_agent_command
from acp_adapter.config import AguiSettings
from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.endpoint import AGENT_SUMMARY_ENV, AguiOptions
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.interrupts import PermissionBroker
from acp_adapter.frontends.agui.policy import load_policy
from acp_adapter.frontends.agui.questions import QuestionBroker
from acp_adapter.frontends.agui.replica_claims import ReplicaClaims
from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks
from acp_adapter.frontends.agui.request import RunRequest
from acp_adapter.frontends.agui.run_starter import RUN_TASK_PREFIX, RunSettings, RunStarter
from acp_adapter.frontends.agui.summaries import summary_observers, summary_setup
from acp_adapter.frontends.agui.thread_reader import ThreadReader
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadRegistry

log = logging.getLogger("acp_progress.agui.service")


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
        self.host = self._agent_host()
        self.threads = ThreadRegistry()
        self.claims = ReplicaClaims(self.threads, self.thread_sessions)
        self.runs = RunStarter(
            self._run_settings(),
            self.host,
            self.threads,
            self.thread_sessions,
            self.permissions,
            self.claims,
            self.spawn,
        )
        self.reader = ThreadReader(self.threads, self.thread_sessions, self.host, self.policy)
        self._tasks: set[asyncio.Task[None]] = set()
        self.started = False
        self._closed = False

    def _agent_host(self) -> AgentHost:
        """The one agent, asked not to write its own summary unless ``agent_env`` says otherwise
        (the endpoint's summaries are its runs', not the agent's think cards')."""
        options = self.options
        agent_env = dict(options.agent_env)
        agent_env.setdefault(AGENT_SUMMARY_ENV, "off")
        return AgentHost(
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

    def _run_settings(self) -> RunSettings:
        observers = list(self.options.run_observers)
        if self.summary is not None:
            # first, so the summary stops before slower observers' on_end hooks are awaited
            observers.insert(0, summary_observers(self.summary))
        limits = self.options.limits
        return RunSettings(
            policy=self.policy,
            observers=tuple(observers),
            summaries=self.summary is not None,
            max_runs=limits.max_runs,
            max_queued_events=limits.max_queued_events,
            cancel_grace=self.options.cancel_grace,
        )

    @property
    def progress_summary(self) -> bool:
        """The endpoint's default for runs' progress summaries (a run's forwardedProps may override)."""
        return self.summary is not None and self.summary.default

    @property
    def thread_locks(self) -> ReplicaThreadLocks | None:
        """The threads' locks across replicas (set when the store is shared: :mod:`.replicas`)."""
        return self.claims.locks

    @thread_locks.setter
    def thread_locks(self, locks: ReplicaThreadLocks | None) -> None:
        self.claims.locks = locks

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
        await self.claims.start()

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
        await self.claims.close()
        if self.summary is not None:
            await self.summary.aclose()
        self.started = False

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ runs and threads

    @property
    def runs_full(self) -> bool:
        return self.runs.runs_full

    async def open_run(self, request: RunRequest) -> ActiveRun:
        """A new run on its thread, or the thread's paused turn resumed (:meth:`.RunStarter.open_run`)."""
        return await self.runs.open_run(request)

    async def thread_list(self) -> list[dict[str, Any]]:
        return await self.reader.listing()

    async def thread_history(self, thread_id: str) -> dict[str, Any] | None:
        return await self.reader.history(thread_id)

    def health(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": "ok",
            "agentRunning": self.host.running,
            "threads": len(self.threads),
            "activeRuns": self.threads.active_runs,
        }
        self.claims.health(out)
        return out
