"""The agent behind the AG-UI endpoint: one :class:`~acp_adapter.client.AgentDriver`, its lifecycle.

Started when the app starts (so a broken ``--agent`` fails the server at once, not the first
user), closed when it stops. If the agent dies, the runs it served end with ``RUN_ERROR`` and the
next run starts a fresh process: the endpoint outlives its agent. Each process is a
*generation*; a thread's session belongs to the generation that opened it, so sessions of a dead
agent are never prompted again.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence

from ..client import AgentCrashed, AgentDriver, AgentError, PermissionPolicy, deny_all
from ..redact import redact_text
from .threads import ThreadSlot

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
    ) -> None:
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
        """Start the agent now (app startup); raises :class:`~acp_adapter.client.AgentStartError`."""
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
        """``(driver, session_id, reused)`` for the thread of ``slot``; opens a session when needed."""
        driver = await self.driver()
        if slot.session_id is not None and slot.generation == self.generation:
            return driver, slot.session_id, True
        try:
            session_id = await driver.new_session(self.cwd)
        except AgentCrashed:
            await self.crashed(driver)
            raise
        slot.session_id, slot.generation = session_id, self.generation
        log.info("thread %s: opened ACP session %s", redact_text(slot.thread_id), session_id)
        return driver, session_id, False

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
