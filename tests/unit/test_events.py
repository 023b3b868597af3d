"""The turn state machine and the ordered thread→loop path, in process."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from acp.schema import AgentMessageChunk, ToolCallProgress, ToolCallStart

from acp_adapter.events import SessionStream, UpdateOutbox, make_agent_progress_cb
from tests.helpers.update_sink import Sink

pytestmark = pytest.mark.anyio


def statuses(sink: Sink) -> list[tuple[str, str | None]]:
    return [(type(u).__name__, getattr(u, "status", None)) for _, u in sink.sent if u != "FAILED"]


async def make_stream() -> tuple[Sink, UpdateOutbox, SessionStream]:
    sink = Sink()
    outbox = UpdateOutbox(sink, asyncio.get_running_loop())
    stream = SessionStream("s1", outbox)
    stream.begin_turn()
    return sink, outbox, stream


async def test_start_heartbeat_complete_in_order():
    sink, outbox, stream = await make_stream()
    cb = make_agent_progress_cb(sink, "s1", asyncio.get_running_loop(), stream=stream)
    cb("start", "llm_response", {})
    cb("heartbeat", "llm_response", {"elapsed": 30.0})
    cb("heartbeat", "llm_response", {"elapsed": 60.0, "status": "Retrying in 4s (429)"})
    cb("complete", "llm_response", {})
    await outbox.flush()
    assert statuses(sink) == [
        ("ToolCallStart", "in_progress"),
        ("ToolCallProgress", "in_progress"),
        ("ToolCallProgress", "in_progress"),
        ("ToolCallProgress", "completed"),
    ]
    texts = [u.content[0].content.text for _, u in sink.sent[1:3]]
    assert texts == ["Still thinking… 30s", "Still thinking… 1m 0s — Retrying in 4s (429)"]
    assert {u.tool_call_id for _, u in sink.sent} == {sink.sent[0][1].tool_call_id}


async def test_heartbeat_or_complete_without_start_is_a_no_op():
    sink, outbox, stream = await make_stream()
    cb = make_agent_progress_cb(sink, "s1", asyncio.get_running_loop(), stream=stream)
    cb("heartbeat", "llm_response", {"elapsed": 1})
    cb("complete", "llm_response", {})
    cb("start", "llm_response")
    cb("complete", "llm_response")
    cb("heartbeat", "llm_response", {"elapsed": 2})  # after complete: dropped
    cb("complete", "llm_response")
    await outbox.flush()
    assert statuses(sink) == [("ToolCallStart", "in_progress"), ("ToolCallProgress", "completed")]


async def test_each_start_gets_a_fresh_id_and_only_one_think_card_is_open():
    sink, outbox, stream = await make_stream()
    first = stream.think_start()
    second = stream.think_start()  # closes the first
    stream.think_complete()
    await outbox.flush()
    assert first != second
    assert [(u.tool_call_id, u.status) for _, u in sink.sent] == [
        (first, "in_progress"),
        (first, "completed"),
        (second, "in_progress"),
        (second, "completed"),
    ]


async def test_a_real_tool_card_completes_the_open_think_card_first():
    sink, outbox, stream = await make_stream()
    think = stream.think_start()
    stream.tool_start("call_1", "Searching for TODO", "search")
    stream.tool_progress("call_1", value=1, total=3, message="Scanned 1/3 files")
    stream.tool_finish("call_1", result_text="3 matches")
    stream.tool_progress("call_1", value=2, total=3)  # after its terminal phase: dropped
    await outbox.flush()
    ids = [(u.tool_call_id, u.status) for _, u in sink.sent]
    assert ids == [
        (think, "in_progress"),
        (think, "completed"),
        ("call_1", "in_progress"),
        ("call_1", None),  # progress carries only what changed: no repeated status
        ("call_1", "completed"),
    ]
    progress = sink.sent[3][1]
    assert progress.field_meta["acpProgress"]["progress"] == {
        "value": 1,
        "total": 3,
        "message": "Scanned 1/3 files",
    }


async def test_end_turn_closes_everything_and_then_nothing_is_sent():
    sink, outbox, stream = await make_stream()
    think = stream.think_start()
    closed = stream.end_turn(cancelled=True)
    assert closed == 1
    stream.think_heartbeat(elapsed=5)
    stream.send_message_text("late")
    assert not stream.tool_start("call_2", "late tool", "other")
    await outbox.flush()
    assert [(u.tool_call_id, u.status) for _, u in sink.sent] == [(think, "in_progress"), (think, "failed")]

    sink2, outbox2, stream2 = await make_stream()
    stream2.tool_start("call_3", "Running sleep", "execute")
    stream2.end_turn()
    await outbox2.flush()
    assert sink2.sent[-1][1].status == "failed"


async def test_empty_progress_publishes_nothing():
    sink, outbox, stream = await make_stream()
    stream.tool_start("c", "t", "other")
    assert not stream.tool_progress("c")
    assert stream.tool_progress("c", message="halfway")
    await outbox.flush()
    assert len(sink.sent) == 2
    meta = sink.sent[1][1].field_meta["acpProgress"]["progress"]
    assert meta == {"message": "halfway"}, "unknown fields must be absent, not estimated"


async def test_progress_numbers_that_json_cannot_carry_are_left_out_with_a_warning(caplog):
    sink, outbox, stream = await make_stream()
    stream.tool_start("c", "t", "other")
    with caplog.at_level("WARNING", logger="acp_progress.turn_state"):
        assert stream.tool_progress("c", value=float("nan"), total=10, message="still going")
        assert not stream.tool_progress("c", value=True, total=float("inf"))  # nothing left
        assert not stream.tool_progress("c", value="3")  # type: ignore[arg-type]
        assert not stream.tool_progress("c", message=42)  # type: ignore[arg-type]
        await outbox.flush()
        for i in range(100):  # the same mistake in a loop is warned about once
            stream.tool_progress("c", value=float("nan"), message=f"again {i}")
    await outbox.flush()
    metas = [u.field_meta["acpProgress"]["progress"] for _, u in sink.sent[1:]]
    # the 100 reports queued while the loop was busy here: the newest replaced the others
    assert metas == [{"total": 10, "message": "still going"}, {"message": "again 99"}]
    assert outbox.replaced == 99
    assert [r.getMessage() for r in caplog.records] == [
        "tool progress: progress value must be finite, not nan; the field is left out",
        "tool progress: progress value must be a number, not bool; the field is left out",
        "tool progress: progress total must be finite, not inf; the field is left out",
        "tool progress: progress value must be a number, not str; the field is left out",
        "tool progress: the message must be text, not int; it is left out",
    ]
    assert sink.sent[1][1].content[0].content.text == "still going"


async def test_updates_from_many_threads_keep_each_threads_order():
    sink, outbox, stream = await make_stream()

    def worker(n: int) -> None:
        for i in range(200):
            stream.send_message_text(f"{n}:{i} ")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        await asyncio.to_thread(t.join)
    await outbox.flush()
    texts = [u.content.text for _, u in sink.sent if isinstance(u, AgentMessageChunk)]
    assert len(texts) == 800
    for n in range(4):
        mine = [int(t.split(":")[1]) for t in texts if t.startswith(f"{n}:")]
        assert mine == list(range(200))


async def test_callback_works_from_the_loop_thread_and_a_worker_thread_in_order():
    sink, outbox, stream = await make_stream()
    cb = make_agent_progress_cb(sink, "s1", asyncio.get_running_loop(), stream=stream)
    cb("start", "llm_response", {})
    await asyncio.to_thread(cb, "heartbeat", "llm_response", {"elapsed": 1.0})
    cb("heartbeat", "llm_response", {"elapsed": 2.0})
    await asyncio.to_thread(cb, "complete", "llm_response", {})
    await outbox.flush()
    assert [type(u).__name__ for _, u in sink.sent] == [
        "ToolCallStart",
        "ToolCallProgress",
        "ToolCallProgress",
        "ToolCallProgress",
    ]
    assert [u.content[0].content.text for _, u in sink.sent[1:3]] == [
        "Still thinking… 1.0s",
        "Still thinking… 2.0s",
    ]


async def test_a_failing_sink_loses_one_update_not_the_stream():
    sink = Sink(fail_on=1)
    outbox = UpdateOutbox(sink, asyncio.get_running_loop())
    stream = SessionStream("s1", outbox)
    stream.begin_turn()
    stream.think_start()
    stream.think_heartbeat(elapsed=1)
    stream.think_complete()
    await outbox.flush()
    assert [u if u == "FAILED" else u.status for _, u in sink.sent] == ["in_progress", "FAILED", "completed"]
    assert outbox.failed == 1


async def test_model_error_closes_the_card_failed_with_a_redacted_reason():
    sink, outbox, stream = await make_stream()
    cb = make_agent_progress_cb(sink, "s1", asyncio.get_running_loop(), stream=stream)
    cb("start", "llm_response", {})
    cb("complete", "llm_response", {"error": "401 for key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"})
    await outbox.flush()
    last = sink.sent[-1][1]
    assert isinstance(last, ToolCallProgress) and last.status == "failed"
    dumped = last.model_dump_json()
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in dumped and "401" in dumped


async def test_private_stream_when_no_stream_is_given():
    sink = Sink()
    cb = make_agent_progress_cb(sink, "solo", asyncio.get_running_loop())
    cb("start", "llm_response", {})
    cb("complete", "llm_response", {})
    for _ in range(20):
        await asyncio.sleep(0.01)
        if len(sink.sent) == 2:
            break
    assert [type(u) for _, u in sink.sent] == [ToolCallStart, ToolCallProgress]
    assert sink.sent[0][0] == "solo"


async def test_observers_see_exactly_what_the_client_gets_and_cannot_break_it():
    sink = Sink()
    outbox = UpdateOutbox(sink, asyncio.get_running_loop())
    seen: list[tuple[str, Any]] = []
    other: list[Any] = []

    class Broken:
        def observe(self, update: Any) -> None:
            raise RuntimeError("a projection crashed")

    outbox.observers("s1").add(SimpleNamespace(observe=lambda update: seen.append(("s1", update))))
    outbox.observers("s1").add(Broken())
    outbox.observers("s2").add(SimpleNamespace(observe=other.append))  # another session's: sees none
    stream = SessionStream("s1", outbox)
    stream.begin_turn()
    stream.think_start()
    stream.think_complete()
    stream.send_message_text("hello world")
    stream.end_turn()
    await outbox.flush()
    assert seen == sink.sent and len(seen) == 4  # start, complete, "hello ", "world" (held to end)
    assert other == []


async def test_an_early_card_is_adopted_by_the_agents_first_start():
    sink, outbox, stream = await make_stream()
    early = stream.think_open_early()
    cb = make_agent_progress_cb(sink, "s1", asyncio.get_running_loop(), stream=stream)
    cb("start", "llm_response", {})  # hook A: continues the card the person already sees
    cb("heartbeat", "llm_response", {"elapsed": 30.0})
    cb("complete", "llm_response", {})
    cb("start", "llm_response", {})  # the next model call gets a card of its own
    stream.end_turn()
    await outbox.flush()
    ids = [u.tool_call_id for _, u in sink.sent]
    assert statuses(sink) == [
        ("ToolCallStart", "in_progress"),
        ("ToolCallProgress", "in_progress"),
        ("ToolCallProgress", "completed"),
        ("ToolCallStart", "in_progress"),
        ("ToolCallProgress", "completed"),
    ]
    assert ids[:3] == [early] * 3 and ids[3] != early


async def test_an_early_card_is_closed_when_the_turn_ends_before_any_start():
    sink, outbox, stream = await make_stream()
    early = stream.think_open_early()
    stream.end_turn(cancelled=True)
    assert stream.think_open_early() is None, "nothing opens after the end"
    await outbox.flush()
    assert [(u.tool_call_id, u.status) for _, u in sink.sent] == [(early, "in_progress"), (early, "failed")]
