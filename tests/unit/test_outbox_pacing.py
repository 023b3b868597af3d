"""Tool progress never waits for a slow client: a queued progress update of a card is replaced by
the newer one (latest wins, position kept), cards are never merged, and starts, terminal updates
and text are never dropped or reordered. Text that outruns the connection is paced instead: the
backlog stays bounded, the loop itself never waits, and a loop that stops draining costs one wait."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from acp_adapter.agent import outbox as outbox_module
from acp_adapter.events import SessionStream, UpdateOutbox
from tests.helpers.update_sink import Sink

pytestmark = pytest.mark.anyio


class SlowSink:
    """A client that reads more slowly than the tool reports; records what it got, in order."""

    def __init__(self, outbox_ref: list[UpdateOutbox], delay: float = 0.0) -> None:
        self.got: list[tuple[str, Any]] = []
        self.peak_backlog = 0
        self._outbox_ref = outbox_ref
        self._delay = delay

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.peak_backlog = max(self.peak_backlog, len(self._outbox_ref[0]._items))
        self.got.append((update.tool_call_id if hasattr(update, "tool_call_id") else "", update))
        # every update costs the client time, like a real write to a slow reader
        await (asyncio.sleep(self._delay) if self._delay else asyncio.sleep(0))

    def values(self, card: str) -> list[float]:
        out = []
        for cid, update in self.got:
            progress = (getattr(update, "field_meta", None) or {}).get("acpProgress", {}).get("progress")
            if cid == card and progress is not None:
                out.append(progress["value"])
        return out

    def statuses(self, card: str) -> list[str | None]:
        return [u.status for cid, u in self.got if cid == card]


def open_cards(
    loop: asyncio.AbstractEventLoop, *cards: str, delay: float = 0.0
) -> tuple[SlowSink, UpdateOutbox, SessionStream]:
    """A turn with tool cards open, over a :class:`SlowSink` that sees the outbox's backlog."""
    ref: list[UpdateOutbox] = []
    sink = SlowSink(ref, delay)
    outbox = UpdateOutbox(sink, loop)
    ref.append(outbox)
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    for card in cards:
        stream.tool_start(card, f"Scanning {card}", "search")
    return sink, outbox, stream


async def test_a_slow_client_never_slows_the_tool_and_ends_with_the_last_value():
    sink, outbox, stream = open_cards(asyncio.get_running_loop(), "c", delay=0.001)
    reports = 20_000
    delivered_when_done: list[int] = []

    def tool() -> None:
        for i in range(reports):
            stream.tool_progress("c", value=i, total=reports)
        delivered_when_done.append(len(sink.got))
        stream.tool_finish("c", result_text="done")

    await asyncio.to_thread(tool)
    await outbox.flush()
    values = sink.values("c")
    # the tool ran at its own speed: it finished long before a 1 ms-per-update client could read
    # 20,000 updates (it would take 20 s), so most reports were replaced in the queue
    assert delivered_when_done[0] < reports // 4
    assert values[-1] == reports - 1, "the client ends with the last value"
    assert values == sorted(values) and len(set(values)) == len(values), "newest first, never older"
    assert sink.statuses("c")[-1] == "completed", "and the terminal update after it"
    assert outbox.replaced == reports - len(values)
    assert sink.peak_backlog <= 3, "one queued progress per card, whatever the tool sends"
    await outbox.aclose()


async def test_progress_of_different_cards_is_never_merged_and_order_is_kept():
    sink, outbox, stream = open_cards(asyncio.get_running_loop(), "a", "b")
    for i in range(50):  # the loop is busy here: everything queues, nothing is sent yet
        stream.tool_progress("a", value=i)
        stream.tool_progress("b", value=100 + i)
    stream.send_message_text("between ")
    stream.tool_finish("a", result_text="a done")
    stream.tool_progress("b", value=999)
    stream.tool_finish("b", result_text="b done")
    await outbox.flush()
    assert sink.values("a") == [49] and sink.values("b") == [999]
    kinds = [
        (cid, getattr(u, "status", None) or u.session_update)
        for cid, u in sink.got
        if cid or u.session_update
    ]
    # starts first, then each card's one (newest) progress in the place of its first report
    # (b's report after a's terminal update too: it was still queued), the text, the terminals
    assert kinds == [
        ("a", "in_progress"),
        ("b", "in_progress"),
        ("a", "tool_call_update"),
        ("b", "tool_call_update"),
        ("", "agent_message_chunk"),
        ("a", "completed"),
        ("b", "completed"),
    ]
    await outbox.aclose()


async def test_a_replacement_is_never_lost_to_the_pump_taking_the_queued_update():
    """The producer replaces while the pump takes: whatever the interleaving, the last value arrives."""

    def tool(stream: SessionStream) -> None:
        for i in range(2000):
            stream.tool_progress("c", value=i)

    for _ in range(20):
        sink, outbox, stream = open_cards(asyncio.get_running_loop(), "c")
        await asyncio.to_thread(tool, stream)  # the pump runs on this loop meanwhile
        await outbox.flush()
        assert sink.values("c")[-1] == 1999
        await outbox.aclose()


async def test_streamed_text_that_outruns_the_client_is_paced_and_loses_nothing():
    sink, outbox, stream = open_cards(asyncio.get_running_loop())

    def model() -> None:
        for i in range(3000):
            stream.send_message_text(f"w{i} ")

    await asyncio.to_thread(model)
    stream.end_turn()
    await outbox.flush()
    text = "".join(u.content.text for _, u in sink.got if u.session_update == "agent_message_chunk")
    assert text.split() == [f"w{i}" for i in range(3000)], "every chunk arrives, in order"
    # the producer waits at PACE_HIGH; one chunk may land between its check and the wait
    assert sink.peak_backlog <= outbox_module.PACE_HIGH + 2
    await outbox.aclose()


async def test_the_loop_thread_itself_is_never_paced():
    _sink, outbox, stream = open_cards(asyncio.get_running_loop())
    started = time.perf_counter()
    for i in range(outbox_module.PACE_HIGH * 3):  # the pump cannot run while this loop does
        stream.send_message_text(f"w{i} ")
    assert time.perf_counter() - started < outbox_module.PACE_TIMEOUT
    assert len(outbox._items) >= outbox_module.PACE_HIGH * 2
    await outbox.aclose()


def test_a_loop_that_stops_draining_costs_the_model_one_wait(monkeypatch):
    monkeypatch.setattr(outbox_module, "PACE_TIMEOUT", 0.05)
    loop = asyncio.new_event_loop()  # never run: nothing drains
    try:
        _sink, outbox, stream = open_cards(loop)
        waits: list[float | None] = []
        real_wait = outbox._room.wait

        def counted_wait(timeout: float | None = None) -> bool:
            # counting the waits themselves (not timing each chunk) keeps a busy machine out of it
            waits.append(timeout)
            return real_wait(timeout)

        monkeypatch.setattr(outbox._room, "wait", counted_wait)

        def model() -> None:
            for i in range(outbox_module.PACE_HIGH * 2 + 50):
                stream.send_message_text(f"w{i} ")

        worker = threading.Thread(target=model)
        worker.start()
        worker.join(10)
        assert not worker.is_alive()
        assert waits == [0.05], f"one paced wait, then pacing is off: {waits}"
        assert not outbox._pacing
    finally:
        loop.close()


async def test_pacing_resumes_once_the_pump_drains_again(monkeypatch):
    monkeypatch.setattr(outbox_module, "PACE_TIMEOUT", 0.05)
    _sink, outbox, stream = open_cards(asyncio.get_running_loop())
    # the loop is busy in this coroutine (not draining) while a thread floods the outbox
    worker = threading.Thread(
        target=lambda: [stream.send_message_text(f"w{i} ") for i in range(outbox_module.PACE_HIGH * 2 + 10)]
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
    outbox.observers("s").add(SimpleNamespace(observe=lambda update: seen.append(update.tool_call_id)))
    stream = SessionStream("s", outbox)
    stream.begin_turn()

    def broken() -> Any:
        raise RuntimeError("builder bug with sk-live-ABCDEFGHIJKLMNOPQRSTUV1234")

    stream.tool_start("a", "A", "other")
    stream.tool_progress("a", value=1)  # built on the loop, between the start and the next card
    outbox.submit_latest("s", "broken", broken)
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
