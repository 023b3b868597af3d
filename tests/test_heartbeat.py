"""The shared heartbeat scheduler: one thread, exact cancel semantics, no drift."""

from __future__ import annotations

import threading
import time

from acp_adapter.agent.heartbeat import HeartbeatScheduler


def test_fires_every_interval_until_cancelled():
    scheduler = HeartbeatScheduler()
    beats: list[float] = []
    handle = scheduler.every(0.02, lambda: beats.append(time.monotonic()))
    time.sleep(0.15)
    handle.cancel()
    count = len(beats)
    time.sleep(0.06)
    scheduler.stop()
    assert 4 <= count <= 9
    assert len(beats) == count, "a heartbeat ran after cancel() returned"


def test_first_beat_waits_one_interval():
    scheduler = HeartbeatScheduler()
    beats: list[float] = []
    started = time.monotonic()
    handle = scheduler.every(0.1, lambda: beats.append(time.monotonic()))
    time.sleep(0.05)
    assert beats == []
    time.sleep(0.1)
    handle.cancel()
    scheduler.stop()
    assert beats and beats[0] - started >= 0.095


def test_cancel_waits_for_a_callback_in_flight():
    scheduler = HeartbeatScheduler()
    inside = threading.Event()
    finished: list[bool] = []

    def slow() -> None:
        inside.set()
        time.sleep(0.1)
        finished.append(True)

    handle = scheduler.every(0.01, slow)
    assert inside.wait(1)
    handle.cancel()  # must block until the callback in flight returned
    done_at_cancel = len(finished)
    assert done_at_cancel >= 1
    time.sleep(0.15)
    assert len(finished) == done_at_cancel, "a callback ran after cancel() returned"
    scheduler.stop()


def test_cancel_from_inside_the_callback_is_allowed():
    scheduler = HeartbeatScheduler()
    calls: list[int] = []
    holder: dict[str, object] = {}

    def once() -> None:
        calls.append(1)
        holder["h"].cancel()  # type: ignore[attr-defined]

    holder["h"] = scheduler.every(0.01, once)
    time.sleep(0.08)
    scheduler.stop()
    assert calls == [1]


def test_one_thread_serves_thousands_of_jobs_and_errors_are_contained():
    scheduler = HeartbeatScheduler()
    before = threading.active_count()
    counts = [0] * 2000
    handles = []
    for i in range(2000):

        def beat(i: int = i) -> None:
            counts[i] += 1
            if i == 7:
                raise RuntimeError("a failing heartbeat must not stop the others")

        handles.append(scheduler.every(0.02, beat))
    time.sleep(0.15)
    assert threading.active_count() - before == 1
    for handle in handles:
        handle.cancel()
    scheduler.stop()
    assert min(counts) >= 2
    assert scheduler.pending == 0


def test_rejects_a_non_positive_interval():
    scheduler = HeartbeatScheduler()
    for bad in (0, -1, float("nan")):
        try:
            scheduler.every(bad, lambda: None)
        except ValueError as exc:
            assert "interval" in str(exc)
        else:
            raise AssertionError(f"interval {bad} accepted")
