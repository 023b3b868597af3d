"""The agent behind the AG-UI endpoint: one :class:`~acp_adapter.client.driver.AgentDriver`, its lifecycle.

Started when the app starts (so a broken ``--agent`` fails the server at once, not the first
user), closed when it stops. If the agent dies, the runs it served end with ``RUN_ERROR`` and the
next run starts a fresh process: the endpoint outlives its agent. Each process is a
*generation*; a thread's session belongs to the generation that opened (or loaded) it, so a
session of a dead agent is never prompted without being loaded into the new process first. The
thread → session mapping is durable (:mod:`.thread_store`): after a restart of the endpoint a known
thread's session is loaded, not replaced.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence

from acp_adapter.client.driver import AgentCrashed, AgentDriver, AgentError, PermissionPolicy, deny_all
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadSlot
from acp_adapter.safety.redact import redact_text

__all__ = ["AgentHost"]

log = logging.getLogger("acp_progress.agui.host")


class AgentHost:
    """Owns the agent process and opens (or reuses) the ACP session of each thread."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        permission_policy: PermissionPolicy = deny_all,
        init_timeout: float = 30.0,
        stderr_log: str | os.PathLike[str] | None = None,
        threads: ThreadSessions | None = None,
    ) -> None:
        #: where each thread's session is remembered across restarts
        self.threads = threads if threads is not None else ThreadSessions()
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env or {})
        self.permission_policy = permission_policy
        self.init_timeout = init_timeout
        self.stderr_log = stderr_log
        self.generation = 0
        self._driver: AgentDriver | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def running(self) -> bool:
        return self._driver is not None

    @property
    def pid(self) -> int | None:
        """The agent's process id while it runs (for health checks and process supervision)."""
        process = self._driver.process if self._driver is not None else None
        return process.pid if process is not None else None

    async def start(self) -> None:
        """Start the agent now (app startup); raises :class:`~acp_adapter.client.driver.AgentStartError`."""
        await self.driver()

    async def driver(self) -> AgentDriver:
        """The running driver, started (or restarted after a crash) on demand."""
        async with self._lock:
            if self._closed:
                raise AgentError("the AG-UI endpoint is shutting down")
            if self._driver is None:
                driver = AgentDriver(
                    self.argv,
                    env=self.env,
                    cwd=self.cwd,
                    permission_policy=self.permission_policy,
                    init_timeout=self.init_timeout,
                    stderr_log=self.stderr_log,
                    client_name="acp-progress-agui",
                )
                await driver.start()
                self._driver = driver
                self.generation += 1
                log.info("agent started (%s), generation %d", redact_text(self.argv[0]), self.generation)
            return self._driver

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
        except AgentCrashed:
            await self.crashed(driver)
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
            candidate = stored.session_id if stored is not None else None
        if candidate is None:
            return None
        thread = redact_text(slot.thread_id)
        if not driver.can_load_sessions:
            log.info("thread %s: the agent cannot load sessions; starting a new conversation", thread)
            return None
        try:
            await driver.load_session(candidate, self.cwd, on_replay=None)
        except AgentCrashed:
            await self.crashed(driver)
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

    async def crashed(self, driver: AgentDriver) -> None:
        """The agent of ``driver`` broke: forget it, so the next run starts a fresh process."""
        async with self._lock:
            if self._driver is not driver:
                return
            self._driver = None
        log.warning("the agent stopped; the next run starts it again")
        await driver.close()

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()
