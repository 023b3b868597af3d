"""ProgressAgent over the SDK's in-memory transports: fast checks of the server's contracts."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import AgentMessageChunk, ToolCallStart

import acp_adapter.agent.turn as turn_module
from acp_adapter.server import ProgressAgent
from acp_adapter.text import prompt_to_text
from run_agent import AIAgent
from tests.helpers.acp_agent import RecordingClient, fast_settings, final_status, inprocess_agent

pytestmark = pytest.mark.anyio


async def test_prompt_closes_the_think_card_before_the_response(tmp_path):
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings())) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("what is 3*3")])
        count = len(client.updates)
        await asyncio.sleep(0.15)
        assert len(client.updates) == count
    assert response.stop_reason == "end_turn"
    # the answer's own usage (what editors read), and the same in _meta for our front-ends
    assert response.usage is not None and response.usage.total_tokens > 0
    assert response.field_meta["acpProgress"]["usage"]["totalTokens"] == response.usage.total_tokens
    (card,) = client.think_cards().values()
    assert final_status(card) == "completed"
    assert "3*3 = 9" in client.answer()
    usage = [r.update for r in client.updates if getattr(r.update, "session_update", "") == "usage_update"]
    assert usage and usage[-1].size > 0


async def test_heartbeats_are_timed_by_the_event_loop_with_no_thread_of_their_own(tmp_path, monkeypatch):
    import threading

    from acp_adapter.agent import heartbeat

    unused = heartbeat.HeartbeatScheduler()
    monkeypatch.setattr(heartbeat, "_default", unused)  # what a loop-less caller would share
    client = RecordingClient()
    agent = ProgressAgent(fast_settings(embedded_delay=0.3, heartbeat_interval=0.05), turn_runner=AIAgent)
    before = set(threading.enumerate())
    async with inprocess_agent(client, agent) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("what is 2+2")])
        count = len(client.updates)
        await asyncio.sleep(0.15)  # three intervals: nothing after the end
        assert len(client.updates) == count
    assert response.stop_reason == "end_turn"
    started = {t.name for t in set(threading.enumerate()) - before}
    assert "acp-progress-heartbeat" not in started, "the ACP agent started the scheduler thread"
    assert unused._thread is None and unused.pending == 0
    (card,) = client.think_cards().values()
    beats = [u for u in card if u.status == "in_progress" and u.content]
    assert len(beats) >= 2, f"a 0.3 s wait against a 0.05 s interval beat {len(beats)} times"
    assert final_status(card) == "completed" and card[-1].status == "completed"


async def test_a_raising_progress_callback_still_gives_the_answer(tmp_path, monkeypatch):
    def raising_factory(*args: Any, **kwargs: Any):
        def callback(*a: Any, **k: Any) -> None:
            raise RuntimeError("progress callback exploded")

        return callback

    # the server wires its loop through ProgressTurn, whose progress callback is made here
    monkeypatch.setattr(turn_module, "progress_callback", raising_factory)
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings())) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("what is 5+5")])
    assert response.stop_reason == "end_turn"
    assert "5+5 = 10" in client.answer()
    # only the card the server opened as the prompt landed: closed by the first answer text
    ((card_id, card),) = client.think_cards().items()
    assert [u.status for u in card] == ["in_progress", "completed"]
    first_chunk = next(i for i, r in enumerate(client.updates) if isinstance(r.update, AgentMessageChunk))
    last_card = max(
        i for i, r in enumerate(client.updates) if getattr(r.update, "tool_call_id", None) == card_id
    )
    assert last_card < first_chunk


async def test_a_second_concurrent_prompt_in_the_same_session_is_refused_clearly(tmp_path):
    client = RecordingClient()
    async with inprocess_agent(
        client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings(embedded_delay=0.3))
    ) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        first = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=[text_block("hello")]))
        opened = asyncio.Event()  # the first turn is running once its think card opened
        client.on_update = lambda r: opened.set() if isinstance(r.update, ToolCallStart) else None
        await asyncio.wait_for(opened.wait(), 5)
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])
        assert "already running" in str(refused.value.data)
        assert (await first).stop_reason == "end_turn"
        # the session keeps serving
        again = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        assert again.stop_reason == "end_turn"


async def test_cancel_unknown_or_idle_session_is_harmless(tmp_path):
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings())) as conn:
        await conn.cancel(session_id="nope")
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.cancel(session_id=session.session_id)
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
    assert response.stop_reason == "end_turn"


async def test_invalid_params_get_a_clear_error(tmp_path):
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings())) as conn:
        with pytest.raises(RequestError) as missing:
            await conn.new_session(cwd=str(tmp_path / "missing"), mcp_servers=[])
        assert "not an existing directory" in str(missing.value.data)


def test_prompt_to_text_flattens_resources():
    from acp import embedded_text_resource, resource_block, resource_link_block

    text = prompt_to_text(
        [
            text_block("look at this"),
            resource_block(embedded_text_resource("file:///a.py", "print(1)")),
            resource_link_block("b.py", "file:///b.py"),
        ]
    )
    assert (
        "look at this" in text
        and 'uri="file:///a.py"' in text
        and "print(1)" in text
        and "file:///b.py" in text
    )


async def test_connection_closing_mid_turn_cancels_the_worker_and_finalises(tmp_path):
    from acp._transport import memory_transport_pair
    from acp.core import AgentSideConnection, ClientSideConnection

    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(embedded_delay=30))
    agent_end, client_end = memory_transport_pair()
    agent_conn = AgentSideConnection(agent, agent_end)
    client = RecordingClient()
    client_conn = ClientSideConnection(client, client_end)
    await client_conn.initialize(protocol_version=1)
    session = await client_conn.new_session(cwd=str(tmp_path), mcp_servers=[])
    prompt = asyncio.create_task(client_conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if client.think_cards():
            break
    state = agent.sessions.get(session.session_id)
    token = state.cancel
    assert token is not None
    # Closing cancels the prompt handler task, as a vanished client would. prompt() finishes the turn
    # instead of letting CancelledError escape, so the SDK then fails to send its response on the
    # closed transport and close() reports that ConnectionError.
    with contextlib.suppress(ConnectionError):
        await agent_conn.close()
    assert token.cancelled
    for _ in range(100):
        if state.cancel is None:
            break
        await asyncio.sleep(0.01)
    assert state.cancel is None, "the turn was not finalised after the connection closed"
    assert not state.stream.turn_open and state.stream.open_card_ids == []
    prompt.cancel()
    await client_conn.close()
    agent.shutdown()


@pytest.mark.slow
async def test_thousands_of_open_sessions_cost_no_thread_each(tmp_path):
    import threading

    client = RecordingClient()
    agent = ProgressAgent(
        turn_runner=AIAgent, settings=fast_settings(embedded_delay=0.3, heartbeat_interval=0.05)
    )
    async with inprocess_agent(client, agent) as conn:
        sessions = [
            (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id for _ in range(3000)
        ]
        before = threading.active_count()
        busy = sessions[::100]  # 30 of them prompt at once, all heartbeating
        responses = await asyncio.gather(
            *(conn.prompt(session_id=sid, prompt=[text_block("hello")]) for sid in busy)
        )
        after = threading.active_count()
    assert all(r.stop_reason == "end_turn" for r in responses)
    assert after - before <= len(busy) + 2, "threads grew beyond one worker per running turn"
    assert len(agent.sessions) == 3000
    beats = {
        sid: [
            u
            for ups in client.think_cards(sid).values()
            for u in ups
            if u.status == "in_progress" and u.content
        ]
        for sid in busy
    }
    # each turn waits 0.3 s against a 0.05 s interval: the event loop's timers beat for all of them
    # (how many beats each gets depends on the machine's load, so only "every one" is asserted)
    silent = [sid for sid, got in beats.items() if not got]
    assert not silent, f"{len(silent)} waiting turns never heartbeated on the event loop"


async def test_read_card_has_kind_title_and_the_file_location(tmp_path):
    (tmp_path / "notes.md").write_text("# Notes\nhello\n")
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=fast_settings())) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("read notes.md")])
    (card,) = [ups for ups in client.cards().values() if ups[0].kind != "think"]
    start = card[0]
    assert (start.kind, start.title, start.status) == ("read", "Reading notes.md", "in_progress")
    assert [loc.path for loc in start.locations] == [str(tmp_path / "notes.md")]
    assert start.raw_input == {"path": "notes.md"}
    assert final_status(card) == "completed" and card[-1].raw_output == {
        "path": "notes.md",
        "bytes": 14,
        "lines": 2,
    }
    assert "`notes.md` has 2 lines. Its sections: Notes." in client.answer()


async def test_the_server_and_the_callback_api_share_the_connections_one_outbox(tmp_path):
    """One ordered path per connection: a ProgressTurn or callback factory given the server's
    connection finds the outbox the server itself writes to, so neither's updates overtake the
    other's."""
    from acp_adapter.agent.turn import session_stream
    from acp_adapter.events import shared_outbox

    client = RecordingClient()
    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings())
    async with inprocess_agent(client, agent) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        loop = asyncio.get_running_loop()
        assert agent.outbox is shared_outbox(agent._conn, loop)
        stream = session_stream(agent._conn, session.session_id, loop)
        assert stream.outbox is agent.outbox
