"""Many sessions prompting at once through one agent process: every card closes, nothing leaks."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text, spawn_agent

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SESSIONS = 200


async def test_200_concurrent_sessions_close_every_card_without_cross_talk(tmp_path):
    client = RecordingClient()
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.5", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    async with spawn_agent(client, env=env) as (conn, _proc, _log):
        sessions = [
            (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id for _ in range(SESSIONS)
        ]
        prompts = [f"count words in: {' '.join(['word'] * (i + 1))}" for i in range(SESSIONS)]
        responses = await asyncio.wait_for(
            asyncio.gather(*(prompt_text(conn, sid, p) for sid, p in zip(sessions, prompts, strict=True))), 60
        )
    assert [r.stop_reason for r in responses] == ["end_turn"] * SESSIONS

    seen_ids: set[str] = set()
    for i, sid in enumerate(sessions):
        cards = client.think_cards(sid)
        assert len(cards) == 1, f"session {i}: expected one think card, got {len(cards)}"
        ((card_id, updates),) = cards.items()
        assert final_status(updates) == "completed"
        assert card_id not in seen_ids, "a card id showed up in two sessions"
        seen_ids.add(card_id)
        n = i + 1
        expected = f"That text has {n} word{'s' if n != 1 else ''}."
        assert client.answer(sid) == expected, f"session {i} got another session's answer"
    # every update names a session that exists and carries only that session's card ids
    for received in client.updates:
        cid = getattr(received.update, "tool_call_id", None)
        if cid is not None:
            assert cid in client.think_cards(received.session_id)
