"""The agent behind the AG-UI endpoint: one :class:`~acp_adapter.client.driver.AgentDriver`, its threads.

The process's lifecycle is the client layer's one :class:`~acp_adapter.client.supervisor.AgentSupervisor`:
started when the app starts (so a broken ``--agent`` fails the server at once, not the first
user), closed when it stops. If the agent dies, the runs it served end with ``RUN_ERROR`` and the
next run starts a fresh process (a crash loop is slowed by the supervisor's bounded backoff): the
endpoint outlives its agent. Each process is a
*generation*; a thread's session belongs to the generation that opened (or loaded) it, so a
session of a dead agent is never prompted without being loaded into the new process first. The
thread → session mapping is durable (:mod:`.thread_store`): after a restart of the endpoint a known
thread's session is loaded, not replaced.

The agent writes its sessions through a writer thread of its own; before the endpoint reads a
thread's conversation from the store it asks the running agent to finish those writes
(:meth:`AgentHost.flush_store`), so a page reloaded right after a run ended shows that run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Final

from acp_adapter.client.driver import AgentCrashed, AgentDriver, AgentError, PermissionPolicy, deny_all
from acp_adapter.client.questions import QuestionPolicy
from acp_adapter.client.supervisor import AgentSupervisor
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadSlot
from acp_adapter.mcp.config import McpServerSpec
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.host")

#: The longest a history read waits for the agent's queued store writes (the agent's own bound is
#: 5 s; the rest is the round trip): past it the read shows what is on disk.
STORE_FLUSH_WAIT: Final = 6.0


class AgentHost:
    """Opens (or reuses) each thread's ACP session on the agent its :class:`AgentSupervisor` keeps running."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        permission_policy: PermissionPolicy = deny_all,
        question_policy: QuestionPolicy | None = None,
        init_timeout: float = 30.0,
        stderr_log: str | os.PathLike[str] | None = None,
        threads: ThreadSessions | None = None,
        mcp_servers: Sequence[McpServerSpec] = (),
    ) -> None:
        self.mcp_servers = list(mcp_servers)
        #: where each thread's session is remembered across restarts
        self.threads = threads if threads is not None else ThreadSessions()
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env or {})
        self.permission_policy = permission_policy
        #: answers the tools' questions; with one the driver offers questions to the agent
        self.question_policy = question_policy
        self.init_timeout = init_timeout
        self.stderr_log = stderr_log
        #: the agent process: started on demand, restarted after it died, closed with the app
        self.supervisor = AgentSupervisor(self._make_driver, name="the AG-UI endpoint")

    def _make_driver(self) -> AgentDriver:
        return AgentDriver(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            permission_policy=self.permission_policy,
            question_policy=self.question_policy,
            init_timeout=self.init_timeout,
            stderr_log=self.stderr_log,
            client_name="acp-progress-agui",
            mcp_servers=self.mcp_servers,
        )

    @property
    def generation(self) -> int:
        """The agent process's generation (a thread's session belongs to the one that opened it)."""
        return self.supervisor.generation

    @property
    def running(self) -> bool:
        return self.supervisor.running

    @property
    def pid(self) -> int | None:
        """The agent's process id while it runs (for health checks and process supervision)."""
        return self.supervisor.pid

    async def start(self) -> None:
        """Start the agent now (app startup); raises :class:`~acp_adapter.client.driver.AgentStartError`."""
        await self.supervisor.driver()

    async def driver(self) -> AgentDriver:
        """The running driver, started (or restarted after a crash) on demand."""
        return await self.supervisor.driver()

    async def session(self, slot: ThreadSlot) -> tuple[AgentDriver, str, bool]:
        """``(driver, session_id, reused)`` for the thread of ``slot``.

        A thread whose session belongs to this agent process reuses it. Otherwise (the thread's
        first run since the endpoint or its agent started) the thread's stored session is loaded
        first — its replay is dropped: it is history, not this run — and only when there is none,
        or the agent cannot load it, a new session is opened.
        """
        driver = await self.driver()
        if slot.session_id is not None and slot.generation == self.generation:
            self.threads.remember(slot.thread_id, slot.session_id, self.cwd)  # keeps it from expiring
            return driver, slot.session_id, True
        loaded = await self._load_stored(driver, slot)
        if loaded is not None:
            return driver, loaded, True
        try:
            session_id = await driver.new_session(self.cwd)
        except AgentCrashed as exc:
            await self.crashed(driver, exc)
            raise
        slot.session_id, slot.generation = session_id, self.generation
        self.threads.remember(slot.thread_id, session_id, self.cwd)
        log.info("thread %s: opened ACP session %s", redact_text(slot.thread_id), session_id)
        return driver, session_id, False

    async def _load_stored(self, driver: AgentDriver, slot: ThreadSlot) -> str | None:
        """Load the thread's earlier session into this agent process; None when there is none to load."""
        if slot.refused:
            slot.refused = False
            return None
        candidate = slot.session_id
        if candidate is None:
            stored = await self.threads.lookup(slot.thread_id)
            if stored is not None and stored.cwd and stored.cwd != self.cwd:
                # another workspace's conversation: never loaded here (its files would reach the model)
                why = "its session belongs to another workspace; starting a new conversation"
                log.warning("thread %s: %s", redact_text(slot.thread_id), why)
                stored = None
            candidate = stored.session_id if stored is not None else None
        if candidate is None:
            return None
        thread = redact_text(slot.thread_id)
        if not driver.sessions.can_load:
            log.info("thread %s: the agent cannot load sessions; starting a new conversation", thread)
            return None
        try:
            await driver.load_session(candidate, self.cwd, on_replay=None)
        except AgentCrashed as exc:
            await self.crashed(driver, exc)
            raise
        except AgentError as exc:
            log.warning(
                "thread %s: could not load its session %s (%s); starting a new conversation",
                thread,
                candidate,
                redact_text(str(exc)),
            )
            return None
        slot.session_id, slot.generation = candidate, self.generation
        self.threads.remember(slot.thread_id, candidate, self.cwd)
        log.info("thread %s: loaded its ACP session %s", thread, candidate)
        return candidate

    async def flush_store(self) -> bool:
        """Have the running agent finish its queued session-store writes (bounded by
        :data:`STORE_FLUSH_WAIT`); True when it says they landed. Never starts an agent: one that is
        not running has nothing queued (a dead one's queue is gone with it)."""
        driver = self.supervisor.current
        return driver is not None and await driver.flush_store(STORE_FLUSH_WAIT)

    async def crashed(self, driver: AgentDriver, reason: BaseException | None = None) -> None:
        """The agent of ``driver`` broke: forget it, so the next run starts a fresh process."""
        await self.supervisor.crashed(driver, reason)

    async def close(self) -> None:
        await self.supervisor.close()
