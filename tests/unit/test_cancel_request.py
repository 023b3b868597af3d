"""``$/cancel_request``: any request of the agent can be called off by its id.

A slow ``session/list`` or ``session/load`` stops and answers -32800 ("Request cancelled"); a running
prompt ends as a ``session/cancel`` ends it (every card closed, ``stopReason: cancelled``); a
cancel for an id that is not running changes nothing. The client driver sends it when a front-end
gives up on a request. In-process where the wire proves nothing; the driver against a real agent
process over stdio (with a real PostgreSQL server whose table lock makes the load slow) for the
end-to-end case.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, text_block
from acp._transport import memory_transport_pair
from acp.core import ClientSideConnection
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_adapter.agent.routes import agent_connection
from acp_adapter.client.driver import AgentDriver
from acp_adapter.protocol.cancel_request import (
    REQUEST_CANCELLED,
    CancellableRequests,
    OutgoingRequestIds,
    call_off_if_given_up,
    send_cancel_request,
)
from acp_adapter.server import ProgressAgent
from acp_adapter.store import MemoryStore
from run_agent import AIAgent
from tests.helpers.acp_agent import RecordingClient, agent_env, fast_settings, final_status
from tests.helpers.shared_agent import progress_agent

pytestmark = pytest.mark.anyio


class SlowListStore(MemoryStore):
    """A store whose ``list_sessions`` waits until the test lets it go (a database far away)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def list_sessions(self, cwd: str | None = None, cursor: str | None = None, limit: int = 50) -> Any:
        self.entered.set()
        self.release.wait(30)
        return super().list_sessions(cwd, cursor, limit)


@contextlib.asynccontextmanager
async def connected(
    agent: Any, client: Any
) -> AsyncIterator[tuple[ClientSideConnection, OutgoingRequestIds]]:
    """The agent as ``serve`` connects it, and a client whose transport notes its request ids."""
    agent_end, client_end = memory_transport_pair()
    agent_conn = agent_connection(agent, agent_end)
    listening = asyncio.ensure_future(agent_conn.listen())
    requests = OutgoingRequestIds(client_end)
    conn = ClientSideConnection(client, requests)
    try:
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield conn, requests
    finally:
        listening.cancel()
        with contextlib.suppress(BaseException):
            await listening
        with anyio.CancelScope(shield=True):
            await agent.hang_up()
        await conn.close()
        await agent_conn.close()


async def _until(predicate: Any, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


async def test_a_slow_list_given_up_answers_request_cancelled_and_the_agent_serves_on(tmp_path: Path) -> None:
    store = SlowListStore()
    agent = ProgressAgent(fast_settings(state_dir=str(tmp_path)), turn_runner=AIAgent, store=store)
    async with connected(agent, RecordingClient()) as (conn, requests):
        listing = asyncio.ensure_future(call_off_if_given_up(conn, requests, conn.list_sessions()))
        await anyio.to_thread.run_sync(store.entered.wait, 5)
        request_id = requests.sent_by(listing)
        assert request_id is not None
        started = time.monotonic()
        listing.cancel()  # the front-end gives up: the agent is told
        with pytest.raises(asyncio.CancelledError):
            await listing
        await _until(lambda: requests.given_up.get(request_id) is not None)
        assert requests.given_up[request_id] == REQUEST_CANCELLED
        assert time.monotonic() - started < 1.0, "the list went on waiting for the store"
        store.release.set()
        # the agent serves on: the next list answers
        assert (await conn.list_sessions()).sessions == []


async def test_a_prompt_called_off_by_id_ends_as_a_cancel_does(tmp_path: Path) -> None:
    client = RecordingClient()
    agent = progress_agent(fast_settings(state_dir=str(tmp_path), embedded_delay=5.0))
    async with connected(agent, client) as (conn, requests):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        prompting = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("what is 2+2")])
        )
        await _until(lambda: bool(client.think_cards(session_id)))
        request_id = requests.sent_by(prompting)
        assert request_id is not None
        started = time.monotonic()
        assert await send_cancel_request(conn, request_id)
        response = await asyncio.wait_for(prompting, 3)
        assert response.stop_reason == "cancelled"
        assert time.monotonic() - started < 1.0
        for card_id, updates in client.cards(session_id).items():
            assert final_status(updates) in ("completed", "failed"), f"card {card_id} left open"
        assert not requests.given_up, "the client did not give up: it cancelled and read the answer"


async def test_a_cancel_for_no_running_request_changes_nothing(tmp_path: Path) -> None:
    agent = progress_agent(fast_settings(state_dir=str(tmp_path)))
    async with connected(agent, RecordingClient()) as (conn, requests):
        session_id = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        finished = requests.sent_by_current_task()
        assert finished is not None
        for stale in (finished, 10_000, "no-such-id"):
            assert await send_cancel_request(conn, stale)
        # malformed params: ignored, the connection lives
        await conn._conn.send_notification("$/cancel_request", {"requestId": {"nested": [1, 2]}})
        await conn._conn.send_notification("$/cancel_request", None)
        listed = await conn.list_sessions()
        assert [s.session_id for s in listed.sessions] == [session_id]


@pytest.mark.e2e
async def test_the_driver_calls_off_a_slow_load_of_a_real_agent(tmp_path: Path, pg_url: str) -> None:
    """End to end: a stdio agent whose store is a PostgreSQL server; the test holds a lock on the
    events table, so a load waits on the database. The front-end gives up: the driver sends
    ``$/cancel_request``, the agent answers -32800 at once and goes on serving."""
    import psycopg

    env = agent_env(
        ACP_PROGRESS_DATABASE_URL=pg_url,
        ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
        ACP_PROGRESS_EMBEDDED_DELAY="0.02",  # the turn only stores a session to load
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    async with AgentDriver([sys.executable, "-m", "acp_adapter"], env=env, cwd=str(ws)) as driver:
        session_id = await driver.new_session(str(ws))
        turn = driver.prompt(session_id, "what is 2+2")
        assert (await turn.wait()).stop_reason == "end_turn"
        assert await driver.flush_store(5.0)
        with psycopg.connect(pg_url, autocommit=False) as locker:
            locker.execute("LOCK TABLE acp_progress.events IN ACCESS EXCLUSIVE MODE")
            loading = asyncio.ensure_future(driver.load_session(session_id, str(ws)))
            await asyncio.sleep(0.5)  # a load that does not wait answers in milliseconds
            assert not loading.done(), "the load did not wait for the locked table"
            loading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await loading
            requests = driver.link.requests
            assert requests is not None and len(requests.given_up) == 1
            await _until(lambda: None not in requests.given_up.values(), within=3.0)
            assert list(requests.given_up.values()) == [REQUEST_CANCELLED]
            # the agent serves on while the database is still locked for the events
            listed = await asyncio.wait_for(driver.list_sessions(str(ws)), 5)
            assert [s.session_id for s in listed] == [session_id]
            locker.rollback()
        await driver.load_session(session_id, str(ws))  # the lock gone, the load works


async def test_a_load_called_off_mid_replay_leaves_no_half_loaded_session(tmp_path: Path) -> None:
    """The replay is stuck (a client that reads nothing more); the load is called off: it answers
    -32800 and the session is not left live, as if the load had never begun."""
    state = str(tmp_path / "state")
    async with connected(progress_agent(fast_settings(state_dir=state)), RecordingClient()) as (conn, _r):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (
            await conn.prompt(session_id=sid, prompt=[text_block("what is 2+2")])
        ).stop_reason == "end_turn"

    agent = progress_agent(fast_settings(state_dir=state))
    async with connected(agent, RecordingClient()) as (conn, requests):
        stuck = asyncio.Event()

        async def never_delivered() -> None:
            stuck.set()
            await asyncio.Event().wait()

        agent.outbox.flush = never_delivered  # type: ignore[method-assign]
        loading = asyncio.ensure_future(
            call_off_if_given_up(
                conn, requests, conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
            )
        )
        await asyncio.wait_for(stuck.wait(), 5)
        assert agent.sessions.find(sid) is not None  # live while its replay goes out
        request_id = requests.sent_by(loading)
        loading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loading
        await _until(lambda: requests.given_up.get(request_id) is not None)
        assert requests.given_up[request_id] == REQUEST_CANCELLED
        assert agent.sessions.find(sid) is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(params=_json | st.fixed_dictionaries({"requestId": _json}))
def test_any_cancel_params_are_harmless(params: Any) -> None:
    """Whatever a peer puts in a ``$/cancel_request``, the handler answers a bool and cancels
    nothing that is not running (there is nothing running here)."""
    router = CancellableRequests(handler=None)
    assert router.cancel(params) is False and router.running == 0
