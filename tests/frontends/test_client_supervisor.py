"""The one agent supervisor: start on demand, restart after death, bounded backoff, close while restarting.

In-process drivers (an :class:`AgentDriver` whose start and death the test controls) on a
:class:`ManualClock`, so the backoff is measured without a wall clock; one test kills a real agent
process to show a death nobody reported is noticed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import pytest
from acp.schema import InitializeResponse

from acp_adapter.client.driver import AgentDriver, AgentError, AgentStartError
from acp_adapter.client.supervisor import AgentSupervisor, AgentUnavailable, RestartPolicy
from acp_adapter.summary.clock import ManualClock
from tests.helpers.acp_agent import agent_env

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
POLICY = RestartPolicy(backoff=1.0, backoff_max=8.0, max_failures=5, stable_after=60.0)


class FakeDriver(AgentDriver):
    """A driver without a process: ``start`` succeeds (or fails, or waits for ``gate``); ``die`` ends it."""

    def __init__(self, fail: str | None = None, gate: asyncio.Event | None = None) -> None:
        super().__init__(["fake-agent"])
        self.fail = fail
        self.gate = gate
        self.started = False
        self.closed = False
        self.code: int | None = None

    async def start(self) -> InitializeResponse:
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                await self.close()
                raise
        if self.fail is not None:
            raise AgentStartError(self.fail)
        self.started = True
        self.initialize_response = InitializeResponse(protocol_version=1)
        return self.initialize_response

    async def close(self, grace: float = 2.0) -> None:
        self.closed = True

    @property
    def exit_code(self) -> int | None:
        return self.code

    def die(self, code: int = 3) -> None:
        self.code = code


class Factory:
    """Makes the drivers the supervisor asks for; ``plan`` says how the next ones behave."""

    def __init__(self) -> None:
        self.made: list[FakeDriver] = []
        self.plan: list[dict[str, Any]] = []

    def __call__(self) -> FakeDriver:
        driver = FakeDriver(**(self.plan.pop(0) if self.plan else {}))
        self.made.append(driver)
        return driver


def supervisor(clock: ManualClock | None = None) -> tuple[AgentSupervisor, Factory, ManualClock]:
    clock = clock or ManualClock()
    factory = Factory()
    return AgentSupervisor(factory, name="test", policy=POLICY, clock=clock), factory, clock


async def test_starts_on_demand_once_and_reuses_the_running_driver() -> None:
    sup, factory, _ = supervisor()
    assert not sup.running and sup.generation == 0 and factory.made == []
    first, again = await asyncio.gather(sup.driver(), sup.driver())  # concurrent callers, one start
    assert first is again and len(factory.made) == 1 and first.initialize_response is not None
    assert sup.running and sup.generation == 1 and sup.last_failure is None
    await sup.close()
    assert factory.made[0].closed and not sup.running


async def test_a_driver_that_died_unreported_is_noticed_and_replaced() -> None:
    sup, factory, _ = supervisor()
    first = await sup.driver()
    factory.made[0].die(3)
    second = await sup.driver()
    assert second is not first and sup.generation == 2
    assert sup.last_failure == "the agent exited with code 3" and sup.failures == 1
    await asyncio.sleep(0)  # the dead one is closed in the background
    assert factory.made[0].closed
    await sup.close()


async def test_a_reported_crash_restarts_at_once_and_a_stale_report_is_ignored() -> None:
    sup, _factory, _ = supervisor()
    first = await sup.driver()
    await sup.crashed(first, AgentError(f"the connection broke (token {SECRET})"))
    assert not sup.running and sup.last_failure is not None
    assert SECRET not in sup.last_failure and "the connection broke" in sup.last_failure  # redacted
    second = await sup.driver()  # the first restart after a failure does not wait
    assert second is not first and sup.generation == 2
    await sup.crashed(first, "late report about the old process")
    assert sup.current is second and sup.failures == 1
    await sup.close()


async def test_consecutive_failures_back_off_doubling_up_to_the_cap_then_fail_fast() -> None:
    sup, factory, clock = supervisor()
    factory.plan = [{}] + [{"fail": f"boom {n} {SECRET}"} for n in range(1, 6)]
    await sup.crashed(await sup.driver(), "died at once")  # failure 1
    waits: list[float] = []
    for n in range(1, 5):  # failures 1..4: restart n waits POLICY.delay(n)
        task = asyncio.create_task(sup.driver())
        began = clock.now()
        await clock.settle()
        while not task.done():
            await clock.advance(0.25)
        waits.append(clock.now() - began)
        with pytest.raises(AgentStartError, match=f"boom {n}"):
            task.result()
    assert waits == [0.0, 1.0, 2.0, 4.0]  # first restart immediate, then doubling
    assert sup.failures == 5 and SECRET not in (sup.last_failure or "")
    starts = len(factory.made)
    with pytest.raises(AgentUnavailable, match=r"failed 5 times in a row.*boom 4"):
        await sup.driver()  # max_failures reached: no spawn, the reason at once
    assert len(factory.made) == starts
    await clock.advance(POLICY.backoff_max)  # the cap passed: one more attempt is allowed
    with pytest.raises(AgentStartError, match="boom 5"):
        await sup.driver()
    assert len(factory.made) == starts + 1
    assert POLICY.delay(50) == POLICY.backoff_max  # never longer than the cap
    await sup.close()


async def test_a_driver_that_served_long_enough_starts_a_new_streak() -> None:
    sup, _factory, clock = supervisor()
    for _ in range(3):
        driver = await sup.driver()
        await clock.advance(POLICY.stable_after)
        await sup.crashed(driver, "died after a good while")
        assert sup.failures == 1  # each restart is immediate: no crash loop
    await sup.driver()
    await sup.close()


async def test_close_while_waiting_out_a_backoff_ends_the_wait_at_once() -> None:
    sup, _factory, clock = supervisor()
    await sup.crashed(await sup.driver(), "one")
    await sup.crashed(await sup.driver(), "two")  # failures 2: the next start waits 1 s
    waiter = asyncio.create_task(sup.driver())
    await clock.settle()
    assert not waiter.done()
    await sup.close()  # the clock never moved: only close can end the wait
    with pytest.raises(AgentError, match="shutting down"):
        await waiter
    with pytest.raises(AgentError, match="shutting down"):
        await sup.driver()


async def test_close_while_a_start_is_in_progress_cancels_it_and_closes_that_driver() -> None:
    sup, factory, clock = supervisor()
    factory.plan = [{"gate": asyncio.Event()}]  # never opened: the start hangs
    starting = asyncio.create_task(sup.driver())
    await clock.settle()
    assert len(factory.made) == 1 and not starting.done()
    await asyncio.wait_for(sup.close(), 5)
    with pytest.raises(AgentError, match="shutting down"):
        await starting
    assert factory.made[0].closed and not factory.made[0].started and not sup.running
    assert sup.failures == 0  # a shutdown is not the agent's failure


@pytest.mark.e2e
async def test_a_killed_agent_process_is_restarted_with_a_new_pid() -> None:
    def make() -> AgentDriver:
        return AgentDriver([sys.executable, "-m", "acp_adapter"], env=agent_env())

    sup = AgentSupervisor(make, name="real", policy=POLICY)
    try:
        first = await sup.driver()
        pid = sup.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert first.process is not None
        await asyncio.wait_for(first.process.wait(), 10)
        second = await sup.driver()
        assert second is not first and sup.pid not in (None, pid) and sup.generation == 2
        assert sup.last_failure == f"the agent exited with code {-signal.SIGKILL}"
        session = await second.new_session(os.getcwd())
        assert session
    finally:
        await sup.close()
    assert sup.pid is None


async def test_a_start_that_finishes_as_close_begins_does_not_leave_a_driver_running() -> None:
    sup, factory, clock = supervisor()
    gate = asyncio.Event()
    factory.plan = [{"gate": gate}]
    starting = asyncio.create_task(sup.driver())
    await clock.settle()
    gate.set()  # the start completes …
    closing = asyncio.create_task(sup.close())  # … while close begins, before the caller resumes
    await asyncio.wait_for(closing, 5)
    with pytest.raises(AgentError, match="shutting down"):
        await starting
    assert factory.made[0].closed and not sup.running
