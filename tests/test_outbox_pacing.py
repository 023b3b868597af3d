"""A producer thread that outruns the connection is paced: the backlog stays bounded, nothing is
lost or reordered, the loop itself never waits, and a loop that stops draining costs one wait."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from acp_adapter import outbox as outbox_module
from acp_adapter.events import SessionStream, UpdateOutbox

from .test_events import Sink

pytestmark = pytest.mark.anyio


class SlowSink:
    """A client that reads more slowly than the tool reports, and records the backlog it saw."""

    def __init__(self, outbox_ref: list[UpdateOutbox]) -> None:
        self.values: list[float] = []
        self.peak_backlog = 0
        self._outbox_ref = outbox_ref

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.peak_backlog = max(self.peak_backlog, len(self._outbox_ref[0]._items))
        progress = (update.field_meta or {}).get("acpProgress", {}).get("progress")
        if progress is not None:
            self.values.append(progress["value"])
        await asyncio.sleep(0)  # every update costs the loop a turn, like a real write


def scanning_card(loop: asyncio.AbstractEventLoop) -> tuple[SlowSink, UpdateOutbox, SessionStream]:
    """A turn with one open tool card, over a :class:`SlowSink` that sees the outbox's backlog."""
    ref: list[UpdateOutbox] = []
    sink = SlowSink(ref)
    outbox = UpdateOutbox(sink, loop)
    ref.append(outbox)
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    stream.tool_start("c", "Scanning", "search")
    return sink, outbox, stream


async def test_a_tool_that_outruns_the_client_is_paced_and_loses_nothing():
    sink, outbox, stream = scanning_card(asyncio.get_running_loop())
    reports = 3000

    def tool() -> None:
        for i in range(reports):
            stream.tool_progress("c", value=i, total=reports)

    await asyncio.to_thread(tool)
    await outbox.flush()
    assert sink.values == list(range(reports)), "every report arrives, in order"
    # the producer waits at PACE_HIGH; one report may land between its check and the wait
    assert sink.peak_backlog <= outbox_module.PACE_HIGH + 1
    await outbox.aclose()


async def test_the_loop_thread_itself_is_never_paced():
    _sink, outbox, stream = scanning_card(asyncio.get_running_loop())
    started = time.perf_counter()
    for i in range(outbox_module.PACE_HIGH * 3):  # the pump cannot run while this loop does
        stream.tool_progress("c", value=i)
    assert time.perf_counter() - started < outbox_module.PACE_TIMEOUT
    assert len(outbox._items) >= outbox_module.PACE_HIGH * 3
    await outbox.aclose()


def test_a_loop_that_stops_draining_costs_the_tool_one_wait(monkeypatch):
    monkeypatch.setattr(outbox_module, "PACE_TIMEOUT", 0.2)
    loop = asyncio.new_event_loop()  # never run: nothing drains
    try:
        _sink, outbox, stream = scanning_card(loop)
        timings: list[float] = []

        def tool() -> None:
            for i in range(outbox_module.PACE_HIGH + 50):
                before = time.perf_counter()
                stream.tool_progress("c", value=i)
                timings.append(time.perf_counter() - before)

        worker = threading.Thread(target=tool)
        worker.start()
        worker.join(10)
        assert not worker.is_alive()
        slow = [t for t in timings if t >= 0.15]
        assert len(slow) == 1, f"one paced wait, then pacing is off: {len(slow)} slow reports"
        assert len(outbox._items) == outbox_module.PACE_HIGH + 50 + 1, "nothing was dropped"
    finally:
        loop.close()


async def test_pacing_resumes_once_the_pump_drains_again(monkeypatch):
    monkeypatch.setattr(outbox_module, "PACE_TIMEOUT", 0.05)
    _sink, outbox, stream = scanning_card(asyncio.get_running_loop())
    # the loop is busy in this coroutine (not draining) while a thread floods the outbox
    worker = threading.Thread(
        target=lambda: [stream.tool_progress("c", value=i) for i in range(outbox_module.PACE_HIGH + 10)]
    )
    worker.start()
    worker.join(5)
    assert not outbox._pacing, "the stalled pump turned pacing off"
    await outbox.flush()
    assert outbox._pacing, "draining below the low mark turns it back on"
    await outbox.aclose()


async def test_an_update_built_on_the_loop_keeps_its_place_and_a_failing_build_loses_only_itself(caplog):
    sink = Sink()
    outbox = UpdateOutbox(sink, asyncio.get_running_loop())
    seen: list[str] = []
    outbox.observers.append(lambda _sid, update: seen.append(update.tool_call_id))
    stream = SessionStream("s", outbox)
    stream.begin_turn()

    def broken() -> Any:
        raise RuntimeError("builder bug with sk-live-ABCDEFGHIJKLMNOPQRSTUV1234")

    stream.tool_start("a", "A", "other")
    stream.tool_progress("a", value=1)  # built on the loop, between the start and the next card
    outbox.submit_built("s", broken)
    stream.tool_start("b", "B", "other")
    with caplog.at_level("ERROR", logger="acp_progress.events"):
        await outbox.flush()
    sent = [update.tool_call_id for _, update in sink.sent]
    assert sent == ["a", "a", "b"] and seen == sent
    assert outbox.failed == 1
    assert "could not build a session update" in caplog.text
    assert "ABCDEFGHIJKLMNOPQRSTUV1234" not in caplog.text
    await outbox.aclose()


async def test_a_pump_cancelled_mid_delivery_does_not_silence_later_updates():
    release = asyncio.Event()
    sent: list[str] = []

    class StuckOnce:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            if not sent:
                sent.append("stuck")
                await release.wait()  # cancelled here, while the pump is draining
            sent.append(update.tool_call_id)

    outbox = UpdateOutbox(StuckOnce(), asyncio.get_running_loop())
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    stream.tool_start("a", "A", "other")
    await asyncio.sleep(0.01)
    assert outbox._task is not None
    outbox._task.cancel()
    await asyncio.sleep(0.01)

    def from_a_thread() -> None:
        stream.tool_start("b", "B", "other")

    await asyncio.to_thread(from_a_thread)
    for _ in range(200):  # no flush: the submit alone must wake a new pump
        if len(sent) == 2:
            break
        await asyncio.sleep(0.01)
    assert sent == ["stuck", "b"]
    await outbox.aclose()


async def test_an_update_submitted_on_the_loop_goes_out_on_the_next_iteration():
    """The prompt's think card is submitted on the loop: the pump runs on the very next loop
    iteration, with no extra hop through a scheduled wake-up."""
    sink = Sink()
    outbox = UpdateOutbox(sink, asyncio.get_running_loop())
    stream = SessionStream("s", outbox)
    for turn in range(3):  # the first creates the pump; later ones wake it from idle
        stream.begin_turn()
        stream.think_open_early()
        await asyncio.sleep(0)
        assert len(sink.sent) == 2 * turn + 1, f"turn {turn}: the card waited for another iteration"
        stream.end_turn()
        await outbox.flush()
    await outbox.aclose()
