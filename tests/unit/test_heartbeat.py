"""Heartbeats: exact cadence and cancel semantics on a manual clock; the shared scheduler thread and
the event loop's ``call_later`` each checked once in real time."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from acp_adapter.agent.heartbeat import Heartbeats, HeartbeatScheduler, LoopThreadClock, loop_heartbeats
from acp_adapter.clock import ManualClock

pytestmark = pytest.mark.anyio


async def test_fires_every_interval_from_its_deadline_until_cancelled():
    clock = ManualClock()
    heartbeats = Heartbeats(clock)
    beats: list[float] = []
    handle = heartbeats.every(1.0, lambda: beats.append(clock.now()))
    await clock.advance(5.5)
    assert beats == [1.0, 2.0, 3.0, 4.0, 5.0]
    handle.cancel()
    await clock.advance(10)
    assert beats == [1.0, 2.0, 3.0, 4.0, 5.0], "a heartbeat ran after cancel() returned"
    assert heartbeats.pending == 0 and clock.pending == 0


async def test_first_beat_waits_one_interval():
    clock = ManualClock()
    beats: list[float] = []
    Heartbeats(clock).every(0.1, lambda: beats.append(clock.now()))
    await clock.advance(0.099)
    assert beats == []
    await clock.advance(0.001)
    assert beats == [pytest.approx(0.1)]


async def test_cancel_from_inside_the_callback_is_allowed():
    clock = ManualClock()
    heartbeats = Heartbeats(clock)
    calls: list[int] = []
    holder: dict[str, object] = {}

    def once() -> None:
        calls.append(1)
        holder["h"].cancel()  # type: ignore[attr-defined]

    holder["h"] = heartbeats.every(0.01, once)
    await clock.advance(1)
    assert calls == [1]
    assert heartbeats.pending == 0 and clock.pending == 0


async def test_thousands_of_jobs_on_one_clock_and_errors_are_contained():
    clock = ManualClock()
    heartbeats = Heartbeats(clock)
    counts = [0] * 2000
    handles = []
    for i in range(2000):

        def beat(i: int = i) -> None:
            counts[i] += 1
            if i == 7:
                raise RuntimeError("a failing heartbeat must not stop the others")

        handles.append(heartbeats.every(0.02, beat))
    await clock.advance(0.061)
    assert set(counts) == {3}
    assert heartbeats.pending == 2000
    for handle in handles:
        handle.cancel()
    assert heartbeats.pending == 0


def test_rejects_a_non_positive_interval():
    heartbeats = Heartbeats(ManualClock())
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="interval"):
            heartbeats.every(bad, lambda: None)


def test_a_stopped_scheduler_refuses_new_jobs():
    scheduler = HeartbeatScheduler()
    scheduler.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        scheduler.every(1, lambda: None)


# ------------------------------------------------------------ real time: the scheduler thread


def test_one_thread_serves_thousands_of_jobs_in_real_time():
    scheduler = HeartbeatScheduler()
    before = threading.active_count()
    counts = [0] * 2000
    handles = [scheduler.every(0.02, lambda i=i: counts.__setitem__(i, counts[i] + 1)) for i in range(2000)]
    time.sleep(0.15)
    assert threading.active_count() - before == 1
    for handle in handles:
        handle.cancel()
    scheduler.stop()
    assert min(counts) >= 2
    assert scheduler.pending == 0


def test_cancel_waits_for_a_callback_in_flight():
    scheduler = HeartbeatScheduler()
    inside = threading.Event()
    release = threading.Event()
    finished: list[bool] = []

    def slow() -> None:
        inside.set()
        release.wait(1)
        finished.append(True)

    handle = scheduler.every(0.01, slow)
    assert inside.wait(1)
    cancelled = threading.Event()
    canceller = threading.Thread(target=lambda: (handle.cancel(), cancelled.set()))
    canceller.start()
    assert not cancelled.wait(0.05), "cancel() returned while the callback was still running"
    release.set()
    canceller.join(1)
    done_at_cancel = len(finished)
    assert done_at_cancel >= 1
    time.sleep(0.05)
    assert len(finished) == done_at_cancel, "a callback ran after cancel() returned"
    scheduler.stop()


# ------------------------------------------------------------ real time: the event loop


async def test_loop_heartbeats_armed_from_a_worker_thread_beat_on_the_loop_thread():
    loop = asyncio.get_running_loop()
    heartbeats = loop_heartbeats(loop)
    threads: list[int] = []
    before = set(threading.enumerate())
    handle = await asyncio.to_thread(heartbeats.every, 0.01, lambda: threads.append(threading.get_ident()))
    await asyncio.sleep(0.1)
    await asyncio.to_thread(handle.cancel)  # cancelled from a thread, as the agent's worker does
    count = len(threads)
    await asyncio.sleep(0.05)
    assert count >= 3
    assert len(threads) == count, "a heartbeat ran after cancel() returned"
    assert set(threads) == {threading.get_ident()}, "every beat runs on the event loop's thread"
    started = {t.name for t in set(threading.enumerate()) - before}
    assert all(name.startswith("asyncio_") for name in started), f"a scheduler thread of its own: {started}"
    assert heartbeats.pending == 0


async def test_a_loop_timer_cancelled_from_a_thread_never_starts_after_cancel_returned():
    loop = asyncio.get_running_loop()
    clock = LoopThreadClock(loop)
    late: list[int] = []

    def arm_and_cancel(delay: float) -> None:
        returned = threading.Event()
        clock.call_later(delay, lambda: late.append(1) if returned.is_set() else None).cancel()
        returned.set()

    # cancelled before, while or after the loop arms it (a 0 s timer may fire before cancel)
    for i in range(60):
        await asyncio.to_thread(arm_and_cancel, (i % 3) * 0.001)
    await asyncio.sleep(0.02)
    assert late == []


def test_a_closed_loop_arms_nothing():
    loop = asyncio.new_event_loop()
    loop.close()
    timer = LoopThreadClock(loop).call_later(0.01, lambda: None)
    timer.cancel()  # and cancelling it is harmless
