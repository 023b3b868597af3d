"""A ProgressTurn with a progress summary, as ``serve`` has one: the summary sees the turn from its
first update, its sentence lands on the open think card, and nothing of it comes after the end —
in the async form and in the synchronous one on a worker thread."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from acp.schema import AgentThoughtChunk, ToolCallProgress

from acp_adapter import ProgressTurn
from acp_adapter.summary import SummaryFactory, SummaryRequest
from tests.helpers.acp_agent import RecordingClient

pytestmark = pytest.mark.anyio

SID = "sess-summary"


class Writer:
    """A generator that names what it saw, so the test can tell the summary followed the turn."""

    def __init__(self) -> None:
        self.calls: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.calls.append(request)
        return f"Working on it, step {len(self.calls)}."


def summarised(client: RecordingClient) -> list[dict[str, Any]]:
    out = []
    for record in client.updates:
        meta = (getattr(record.update, "field_meta", None) or {}).get("acpProgress") or {}
        if isinstance(record.update, ToolCallProgress) and "summary" in meta:
            out.append(meta["summary"])
    return out


def agent_loop(turn: ProgressTurn, pause: float) -> None:
    """What an embedder's synchronous loop does: a think card that stays open while it waits."""
    turn.progress("start", "llm_response", {})
    turn.thinking("reading the failing test ")
    deadline = time.monotonic() + pause
    while time.monotonic() < deadline:
        turn.thinking(". ")
        time.sleep(0.02)
    turn.progress("complete", "llm_response", {})
    turn.message("Done.")


def has_summary(update: Any) -> bool:
    meta = (getattr(update, "field_meta", None) or {}).get("acpProgress") or {}
    return isinstance(update, ToolCallProgress) and "summary" in meta


def check(client: RecordingClient, writer: Writer) -> None:
    shown = summarised(client)
    assert shown, "the think card carried the summary"
    assert [s["revision"] for s in shown] == sorted(s["revision"] for s in shown)
    assert shown[0]["summary"].startswith("Working on it, step")
    updates = [r.update for r in client.updates]
    closed = max(i for i, u in enumerate(updates) if getattr(u, "status", None) == "completed")
    last_summary = max(i for i, u in enumerate(updates) if has_summary(u))
    assert last_summary < closed, "no summary after the think card closed"
    thoughts = "".join(getattr(u.content, "text", "") for u in updates if isinstance(u, AgentThoughtChunk))
    assert "Working on it" not in thoughts, "never in the thought channel"
    assert writer.calls and "fix the failing test" in writer.calls[0].snapshot.user_text


async def test_the_async_turn_shows_its_summary_on_the_think_card_and_stops_at_the_end():
    client = RecordingClient()
    writer = Writer()
    factory = SummaryFactory(writer, interval=0.025)
    async with ProgressTurn(client, SID, summary=factory, user_text="Please fix the failing test") as turn:
        await asyncio.to_thread(agent_loop, turn, 0.2)  # eight intervals
        assert turn.summary is not None and turn.summary.running
    check(client, writer)
    assert turn.summary is None, "the summary stopped with the turn"
    calls, count = len(writer.calls), len(client.updates)
    await asyncio.sleep(0.1)  # its cadence would have fired a few more times
    assert len(writer.calls) == calls and len(client.updates) == count


async def test_the_sync_turn_on_a_worker_thread_runs_its_summary_on_the_loop():
    client = RecordingClient()
    writer = Writer()
    factory = SummaryFactory(writer, interval=0.025)
    loop = asyncio.get_running_loop()
    turns: list[ProgressTurn] = []

    def embedder() -> None:
        text = "Please fix the failing test"
        with ProgressTurn(client, SID, loop, summary=factory, user_text=text) as turn:
            turns.append(turn)
            assert turn.summary is not None, "started on the loop before the first update"
            agent_loop(turn, 0.2)  # eight intervals

    await asyncio.to_thread(embedder)
    check(client, writer)
    assert turns[0].summary is None, "the summary stopped with the turn"


async def test_a_turn_that_raises_stops_its_summary_as_failed():
    client = RecordingClient()
    factory = SummaryFactory(Writer(), interval=0.05)
    turn = ProgressTurn(client, SID, summary=factory, user_text="x")
    with pytest.raises(RuntimeError):
        async with turn:
            turn.progress("start", "llm_response", {})
            turn.thinking("working ")
            summary = turn.summary
            raise RuntimeError("embedder bug")
    assert summary is not None and summary.stopped and summary.outcome == "failed"
    assert turn.summary is None
