"""The one supervisor: keeps an :class:`~acp_adapter.client.driver.AgentDriver` running for a front-end.

A long-lived front-end (the AG-UI endpoint, a chat bridge) outlives its agent: when the agent dies,
the work it served fails with a clear reason and the next request starts a fresh process. Before
this module each front-end did that itself, with its own lock, its own "is it dead?" and no limit
on how fast a crashing agent was started again. :class:`AgentSupervisor` is that logic, once:

* **start on demand**: :meth:`AgentSupervisor.driver` returns the running driver, starting one (a
  new *generation*) when there is none;
* **detect a dead driver**: a caller that saw the agent break reports it (:meth:`~AgentSupervisor.crashed`),
  and a driver whose process exited is noticed on the next :meth:`~AgentSupervisor.driver` call even
  when nobody reported it;
* **restart with a bounded policy** (:class:`RestartPolicy`): the first restart after a failure is
  immediate (one crash costs nothing), each further *consecutive* failure waits a doubling backoff
  up to a cap, and after ``max_failures`` consecutive failures requests fail at once with the last
  reason (no spawn storm) until the cap has passed, when one more attempt is made. A driver that
  stayed up ``stable_after`` seconds ends the streak;
* **report the reason, redacted**: :attr:`AgentSupervisor.last_failure` is one redacted line (what
  the driver or its start said), for a health check or a one-line message;
* **close**: ends the running driver, wakes callers waiting out a backoff and cancels a start in
  progress, so shutdown is never held up by a restart.

Generations let a caller tell a session of a dead process from one of the live one: a session id
opened under generation *n* must be loaded again (or replaced) once :attr:`~AgentSupervisor.generation`
moved on. Time comes from an injected :class:`Clock` (``now``/``call_later``; the summary package's
``ManualClock`` fits), so the backoff is tested without a wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from acp.schema import InitializeResponse

from acp_adapter.client.driver import AgentDriver, AgentError
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import flatten

log = logging.getLogger("acp_progress.client.supervisor")

REASON_LIMIT = 300
"""Characters of a failure reason kept (one line, redacted)."""


class AgentUnavailable(AgentError):
    """The agent failed ``max_failures`` times in a row: no start is tried until the backoff cap passed."""


class _Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the supervisor asks of time (a structural match of :class:`acp_adapter.summary.Clock`)."""

    def now(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer: ...


class _LoopClock:
    """The running event loop's clock (the default)."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Timer:
        return asyncio.get_running_loop().call_later(delay, callback)


@dataclass(frozen=True)
class RestartPolicy:
    """How fast, and how often in a row, a failing agent is started again.

    ``backoff`` seconds before the second consecutive restart, doubling per further failure, at most
    ``backoff_max``; after ``max_failures`` consecutive failures requests fail at once
    (:class:`AgentUnavailable`) until ``backoff_max`` passed since the last one. A driver that ran
    ``stable_after`` seconds before it died starts a new streak.
    """

    backoff: float = 0.5
    backoff_max: float = 30.0
    max_failures: int = 5
    stable_after: float = 60.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures before the next start."""
        if failures <= 1:
            return 0.0
        return float(min(self.backoff_max, self.backoff * 2 ** (failures - 2)))


DriverFactory = Callable[[], AgentDriver]
"""Makes a fresh, not yet started driver (the front-end's argv, env, policy, client name)."""


class AgentSupervisor:
    """Owns one front-end's agent process: starts it on demand, restarts it after it died, closes it."""

    def __init__(
        self,
        make_driver: DriverFactory,
        *,
        name: str = "agent",
        policy: RestartPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._make = make_driver
        #: how the log names this agent ("bridge tg", "AG-UI endpoint")
        self.name = name
        self.policy = policy or RestartPolicy()
        self.clock: Clock = clock or _LoopClock()
        #: processes started so far; a session belongs to the generation that opened it
        self.generation = 0
        #: consecutive failures (starts that failed, drivers that died before ``stable_after``)
        self.failures = 0
        #: why the last driver died or failed to start: one redacted line (None: no failure yet)
        self.last_failure: str | None = None
        self._failed_at: float | None = None
        self._started_at = 0.0
        self._driver: AgentDriver | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._closing = asyncio.Event()
        self._starting: asyncio.Task[InitializeResponse] | None = None

    # ------------------------------------------------------------------ state

    @property
    def current(self) -> AgentDriver | None:
        """The running driver, if any (never starts one)."""
        return self._driver

    @property
    def running(self) -> bool:
        return self._driver is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pid(self) -> int | None:
        """The agent's process id while it runs (health checks, process supervision)."""
        process = self._driver.process if self._driver is not None else None
        return process.pid if process is not None else None

    def adopt(self, driver: AgentDriver) -> None:
        """Supervise an already started driver as a new generation (embedding, tests)."""
        self._driver = driver
        self.generation += 1
        self._started_at = self.clock.now()

    # ------------------------------------------------------------------ starting

    async def driver(self) -> AgentDriver:
        """The running driver; started (or restarted, under the policy) when there is none.

        Raises :class:`~acp_adapter.client.driver.AgentStartError` when the start failed,
        :class:`AgentUnavailable` while too many failures in a row hold starts back, and
        :class:`~acp_adapter.client.driver.AgentError` once closed.
        """
        async with self._lock:
            self._check_open()
            current = self._driver
            if current is not None:
                code = current.exit_code
                if code is None:
                    return current
                self._forget(current, f"the agent exited with code {code}")
                self._spawn_close(current)
            await self._wait_for_backoff()
            return await self._start()

    def _check_open(self) -> None:
        if self._closed:
            raise AgentError(f"{self.name} is shutting down")

    async def _wait_for_backoff(self) -> None:
        if self.failures == 0 or self._failed_at is None:
            return
        policy = self.policy
        if self.failures >= policy.max_failures:
            remaining = self._failed_at + policy.backoff_max - self.clock.now()
            if remaining > 0:
                raise AgentUnavailable(
                    f"the agent failed {self.failures} times in a row; not starting it again for "
                    f"{remaining:.0f}s (last: {self.last_failure})"
                )
            return
        remaining = self._failed_at + policy.delay(self.failures) - self.clock.now()
        if remaining > 0:
            log.info(
                "%s: restarting the agent in %.1fs (failure %d in a row)", self.name, remaining, self.failures
            )
            await self._sleep(remaining)
            self._check_open()

    async def _sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on the injected clock, or until :meth:`close`."""
        woken = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        timer = self.clock.call_later(seconds, wake)
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait({woken, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            closing.cancel()
            woken.cancel()

    async def _start(self) -> AgentDriver:
        driver = self._make()
        starting = self._starting = asyncio.ensure_future(driver.start())
        try:
            await starting
        except asyncio.CancelledError:
            self._check_open()  # close() cancelled the start: say so, not "cancelled"
            raise
        except BaseException as exc:
            self._failed(f"{type(exc).__name__}: {exc}" if not isinstance(exc, AgentError) else str(exc))
            raise
        finally:
            self._starting = None
        if self._closed:  # closed just as the start finished: this driver must not outlive it
            await driver.close()
            self._check_open()
        self.adopt(driver)
        log.info(
            "%s: agent started (%s), generation %d", self.name, redact_text(driver.argv[0]), self.generation
        )
        return driver

    # ------------------------------------------------------------------ failures

    def _failed(self, reason: str) -> None:
        self.failures += 1
        self._failed_at = self.clock.now()
        self.last_failure = _one_line(reason)

    def _forget(self, driver: AgentDriver, reason: str) -> None:
        """``driver`` died: it is no longer the current one; count the failure."""
        if self._driver is driver:
            self._driver = None
        if self.clock.now() - self._started_at >= self.policy.stable_after:
            self.failures = 0  # it served a while: a new streak
        self._failed(reason)
        log.warning(
            "%s: the agent stopped (%s); the next request starts it again", self.name, self.last_failure
        )

    def _spawn_close(self, driver: AgentDriver) -> None:
        task = asyncio.ensure_future(driver.close())
        task.add_done_callback(_log_close_failure)

    async def crashed(self, driver: AgentDriver, reason: BaseException | str | None = None) -> None:
        """A caller saw ``driver``'s agent break: forget it (once) and close it; the next
        :meth:`driver` call starts a fresh one. A report about an older generation is ignored."""
        async with self._lock:
            if self._driver is not driver:
                return
            self._forget(driver, str(reason) if reason is not None else "the agent stopped")
        await driver.close()

    # ------------------------------------------------------------------ closing

    async def close(self, grace: float = 2.0, give_up_after: float | None = None) -> None:
        """Stop supervising: cancel a start in progress, wake backoff waiters, end the running driver.

        ``give_up_after``: stop waiting for the driver to end after that many seconds (its process
        group is being signalled; a stuck close must not hold the caller's shutdown)."""
        self._closed = True
        self._closing.set()
        if self._starting is not None:
            self._starting.cancel()
        async with self._lock:
            driver, self._driver = self._driver, None
        if driver is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(driver.close(grace=grace), give_up_after)


def _one_line(reason: str) -> str:
    return flatten(redact_text(reason), REASON_LIMIT)


def _log_close_failure(task: asyncio.Future[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("closing a dead agent failed: %s", redact_text(str(task.exception())))
