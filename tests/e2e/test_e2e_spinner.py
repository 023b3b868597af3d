"""End to end over real pipes: spawn ``python -m acp_adapter`` and drive it as an editor would.

The think card's life over a real process (opened, beating at its interval, completed before the
answer) and a hang-up: each starts its own agent. What the agent decides whoever its client is (a
cancel or a disabled heartbeat, a fresh card per turn, the answers to bad requests) is tested in
tests/unit/test_think_card_turns.py with the agent in the test's process."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from acp.schema import AgentMessageChunk, ToolCallStart

from tests.helpers.acp_agent import RecordingClient, agent_env, prompt_text, spawn_agent

pytestmark = pytest.mark.anyio


def _content_text(update: object) -> str:
    return " ".join(c.content.text for c in (getattr(update, "content", None) or []))


async def test_think_card_opens_beats_and_completes_before_the_answer(tmp_path):
    client = RecordingClient()
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.5", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    async with spawn_agent(client, env=env) as (conn, _proc, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sent = time.monotonic()
        response = await prompt_text(conn, session.session_id, "hello there")
    assert response.stop_reason == "end_turn"

    updates = client.for_session(session.session_id)
    start = updates[0]
    assert isinstance(start, ToolCallStart)
    assert start.kind == "think" and start.title == "Thinking..." and start.status == "in_progress"
    think_id = start.tool_call_id
    card = client.cards(session.session_id)[think_id]
    beats = [u for u in card[1:] if u.status == "in_progress"]
    assert len(beats) >= 2, f"expected heartbeats every 0.1 s over a 0.5 s wait, got {len(beats)}"
    assert all("Still thinking" in _content_text(b) for b in beats)
    assert card[-1].status == "completed" and "Thought for" in _content_text(card[-1])

    # heartbeats arrive at the interval, not all at once at the end
    times = [r.at for r in client.updates if getattr(r.update, "tool_call_id", None) == think_id]
    assert times[0] - sent < 0.5, "the think card should arrive well before the model's first output"
    beat_times = times[1 : 1 + len(beats)]
    gaps = [b - a for a, b in itertools.pairwise(beat_times)]
    assert gaps and max(gaps) < 0.4 and sum(gaps) / len(gaps) > 0.03

    think_cards = [u for u in updates if isinstance(u, ToolCallStart) and u.kind == "think"]
    assert len(think_cards) == 1, "the card opened as the prompt landed is the one hook A continues"

    index_complete = updates.index(card[-1])
    first_chunk = next(i for i, u in enumerate(updates) if isinstance(u, AgentMessageChunk))
    assert index_complete < first_chunk, "the think card must complete before the first answer chunk"
    assert "Hello" in client.answer(session.session_id)


async def test_client_hanging_up_mid_turn_lets_the_agent_exit_cleanly(tmp_path):
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="30")
    client = RecordingClient()
    started = asyncio.Event()
    client.on_update = lambda r: started.set()
    async with spawn_agent(client, env=env) as (conn, process, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        task = asyncio.create_task(prompt_text(conn, session.session_id, "hello"))
        await asyncio.wait_for(started.wait(), 10)
        process.stdin.close()  # the editor went away
        code = await asyncio.wait_for(process.wait(), 5)
        task.cancel()
    assert code == 0, "the agent should notice EOF, cancel the turn and exit on its own"
