"""The think card's decisions over a turn, whoever the client is: a cancel during the wait closes
the card and nothing follows, a disabled heartbeat never beats, each turn gets a fresh card, and bad
requests get clear errors while the agent keeps serving. The agent runs in this process (the ones
that need no settings of their own share one per module, :mod:`tests.helpers.shared_agent`: each
its own session and client); the card's life over a real process is in tests/e2e/test_e2e_spinner.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from acp.schema import ToolCallStart

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.shared_agent import SharedAgent, progress_agent, served_inprocess, shared_agent_inprocess

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    """The agent (the fast settings) served in this process, shared by the tests that need no other."""
    async with shared_agent_inprocess() as shared:
        yield shared


def _agent_with(env: dict[str, str]) -> object:
    """The agent ``serve`` would run with ``env`` (the same settings), in this process."""
    from acp_adapter.config import Settings

    return progress_agent(Settings.from_env(env))


def _content_text(update: object) -> str:
    return " ".join(c.content.text for c in (getattr(update, "content", None) or []))


async def test_cancel_during_the_wait_closes_the_card_and_nothing_follows(tmp_path):
    client = RecordingClient()
    started = asyncio.Event()
    client.on_update = lambda r: started.set() if isinstance(r.update, ToolCallStart) else None
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="30", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05")
    async with served_inprocess(client, _agent_with(env)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        task = asyncio.create_task(prompt_text(conn, session.session_id, "think about this for a long time"))
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.2)
        cancelled_at = time.monotonic()
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(task, 5)
        answered_at = time.monotonic()
        count_at_response = len(client.updates)
        await asyncio.sleep(0.4)  # several heartbeat intervals: nothing may arrive now
        assert len(client.updates) == count_at_response, "updates arrived after the prompt response"
    assert response.stop_reason == "cancelled"
    assert answered_at - cancelled_at < 1.0
    cards = client.think_cards(session.session_id)
    assert len(cards) == 1
    (card,) = cards.values()
    assert final_status(card) == "failed"
    assert "Cancelled" in _content_text(card[-1])


async def test_heartbeat_disabled_means_no_heartbeat_ever(tmp_path):
    client = RecordingClient()
    env = agent_env(
        ACP_PROGRESS_EMBEDDED_DELAY="0.3",  # six heartbeat intervals
        ACP_PROGRESS_HEARTBEAT_INTERVAL="0.05",
        ACP_PROGRESS_HEARTBEAT_DISABLED="1",
    )
    async with served_inprocess(client, _agent_with(env)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "hello")
    assert response.stop_reason == "end_turn"
    (card,) = client.think_cards(session.session_id).values()
    assert [u.status for u in card] == ["in_progress", "completed"]


async def test_two_turns_in_one_session_each_get_a_fresh_card(tmp_path, agent):
    client = RecordingClient()
    session = await agent.new_session(client, tmp_path)
    first = await prompt_text(agent.conn, session.session_id, "what is 6*7")
    second = await prompt_text(agent.conn, session.session_id, "what is 1+1")
    assert first.stop_reason == second.stop_reason == "end_turn"
    cards = client.think_cards(session.session_id)
    assert len(cards) == 2
    assert all(final_status(c) == "completed" for c in cards.values())
    answer = client.answer(session.session_id)
    assert "= 42" in answer and "= 2" in answer


async def test_bad_requests_get_clear_errors_and_the_agent_keeps_serving(tmp_path, agent):
    from acp import RequestError

    client = RecordingClient()
    conn = agent.conn
    with pytest.raises(RequestError) as unknown:
        await prompt_text(conn, "sess_does_not_exist", "hi")
    assert "unknown session" in str(unknown.value.data)
    with pytest.raises(RequestError) as relative:
        await conn.new_session(cwd="relative/dir", mcp_servers=[])
    assert "absolute" in str(relative.value.data)
    session = await agent.new_session(client, tmp_path)
    response = await prompt_text(conn, session.session_id, "hello")
    assert response.stop_reason == "end_turn"
