"""The route queue: coalescing, eviction order, metrics, terminal events survive saturation."""

from __future__ import annotations

import asyncio

import pytest

from acp_adapter.frontends.bridges.events import (
    AnswerText,
    DeleteMessage,
    ErrorNotice,
    ProgressEvent,
    ProgressPayload,
    ReactionEvent,
    TurnEnd,
)
from acp_adapter.frontends.bridges.queue import QueueClosed, RouteQueue


def prog(call: str, phase: str = "started", index: int = 1, preview: str = "") -> ProgressEvent:
    return ProgressEvent(
        ProgressPayload(call, "search", phase, "Searching for", preview, "🔎", index)  # type: ignore[arg-type]
    )


def drain(q: RouteQueue) -> list[object]:
    out = []
    while (item := q.get_nowait()) is not None:
        out.append(item)
    return out


def test_text_coalesces_in_place_and_progress_only_on_same_call_and_phase() -> None:
    q = RouteQueue(soft_bound=100)
    q.put(AnswerText(0, "He"))
    q.put(prog("a", "started", 1, "v1"))
    q.put(AnswerText(0, "Hello"))
    q.put(prog("a", "started", 2, "v2"))  # same call, same phase: replaces
    q.put(prog("a", "completed", 3))  # same call, other phase: kept
    q.put(prog("b", "started", 4))  # other call: never merged
    q.put(AnswerText(1, "Next"))  # another segment: kept
    items = drain(q)
    assert items == [
        AnswerText(0, "Hello"),
        prog("a", "started", 2, "v2"),
        prog("a", "completed", 3),
        prog("b", "started", 4),
        AnswerText(1, "Next"),
    ]
    assert q.metrics.coalesced == 2 and q.metrics.delivered == 5


def test_eviction_order_and_metrics_under_pressure() -> None:
    q = RouteQueue(soft_bound=3)
    q.put(prog("a", "started"))
    q.put(prog("a", "completed"))
    q.put(prog("b", "started"))
    q.put(prog("c", "started"))  # full: evicts the oldest started ("a"), not the terminal line
    q.put(ReactionEvent("working"))  # full: evicts "b" started
    q.put(ReactionEvent("success"))  # full: evicts "c" started
    q.put(ReactionEvent("failure"))  # full and nothing evictable: the reaction is dropped
    q.put(prog("d", "started"))  # likewise dropped
    assert [type(c[0]).__name__ for c in q._items] == ["ProgressEvent", "ReactionEvent", "ReactionEvent"]
    assert q.metrics.delivery_dropped_by_reason == {
        "evicted_started": 3,
        "queue_full_reaction": 1,
        "queue_full_started": 1,
    }
    assert drain(q)[0] == prog("a", "completed")


def test_terminal_final_error_and_delete_survive_a_saturated_queue() -> None:
    q = RouteQueue(soft_bound=2)
    q.put(prog("x", "completed"))
    q.put(AnswerText(0, "partial"))
    must_keep = [
        prog("y", "failed"),
        ErrorNotice("agent crashed"),
        DeleteMessage(17),
        TurnEnd("end_turn"),
        AnswerText(1, "text is never dropped either"),
    ]
    for event in must_keep:
        assert q.put(event)
    assert q.put(prog("z", "started")) is False
    assert drain(q)[2:] == must_keep
    assert q.metrics.over_soft_bound == 5
    assert q.metrics.max_depth == 7
    assert q.metrics.delivery_dropped_by_reason == {"queue_full_started": 1}


def test_metrics_merge_and_dict() -> None:
    q1, q2 = RouteQueue(soft_bound=1), RouteQueue(soft_bound=1)
    q1.put(prog("a"))
    q1.put(prog("b"))
    q2.put(prog("c"))
    total = q1.metrics
    total.merge(q2.metrics)
    assert total.as_dict()["delivery_dropped_by_reason"] == {"evicted_started": 1}
    assert total.as_dict()["enqueued"] == 3


@pytest.mark.anyio
async def test_get_waits_then_drains_and_reports_closed() -> None:
    q = RouteQueue()
    assert await q.get(max_wait=0.01) is None

    async def later() -> None:
        await asyncio.sleep(0.01)
        q.put(TurnEnd("end_turn"))
        q.close()

    task = asyncio.create_task(later())
    assert await q.get() == TurnEnd("end_turn")
    with pytest.raises(QueueClosed):
        await q.get()
    assert q.put(TurnEnd("x")) is False
    await task
