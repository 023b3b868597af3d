"""``with_progress`` as a third-party author uses it: ``acp.run_agent(with_progress(agent))`` in the
agent's own process (``tests/agents/wrapped_agent.py``), driven over stdio by the SDK's client side —
a slow SDK agent's heartbeats, and a hang-up mid-think. What the wrapper does with the ACP SDK's
example agent, an agent that raises, a cancel and a pydantic-acp agent whose pydantic-ai model thinks
before it streams is its own decision whatever the transport: those serve the agent
``wrapped_agent.py`` builds, wrapped as it wraps it and with the environment its process gets, by
the SDK's agent side in this process (:func:`served_wrapped`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from acp import RequestError
from acp.schema import AgentMessageChunk, ToolCallProgress, ToolCallStart

from tests.helpers.acp_agent import ROOT, RecordingClient, final_status, prompt_text, spawn_agent

pytestmark = pytest.mark.anyio

WRAPPED = str(ROOT / "tests" / "agents" / "wrapped_agent.py")
OURS = "progress-think-"


def ours(client: RecordingClient) -> dict[str, list[Any]]:
    return {cid: ups for cid, ups in client.think_cards().items() if cid.startswith(OURS)}


def order_of(client: RecordingClient) -> list[str]:
    out = []
    for received in client.updates:
        update = received.update
        if isinstance(update, ToolCallStart):
            out.append(f"{update.kind}:start")
        elif isinstance(update, ToolCallProgress):
            out.append(f"card:{update.status}")
        elif isinstance(update, AgentMessageChunk):
            out.append("msg")
    return out


def argv(kind: str, *args: str, bare: bool = False, think_after: str = "0.1") -> list[str]:
    return [WRAPPED, *(["--bare"] if bare else []), "--think-after", think_after, kind, *args]


@contextlib.asynccontextmanager
async def served_wrapped(
    client: RecordingClient, monkeypatch: pytest.MonkeyPatch, kind: str, *args: str
) -> AsyncIterator[Any]:
    """What ``wrapped_agent.py KIND ARGS`` serves (``--think-after 0.1``, as :func:`argv`), with the
    environment :func:`spawn_agent` gives its process (the test agent settings, no other
    ``ACP_PROGRESS_*``), served to ``client`` in this process; initialised."""
    from acp_adapter import with_progress
    from tests.agents.wrapped_agent import make_agent
    from tests.helpers.acp_agent import agent_env, sdk_served

    env = agent_env()
    for key in [k for k in os.environ if k.startswith("ACP_PROGRESS_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    async with sdk_served(with_progress(make_agent(kind, list(args)), think_after=0.1), client) as conn:
        yield conn


async def test_the_sdk_example_echo_agent_streams_with_no_card(tmp_path, monkeypatch):
    client = RecordingClient()
    async with served_wrapped(client, monkeypatch, "echo") as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "hello there")
        await asyncio.sleep(0.3)  # past think_after: nothing arrives after the answer
    assert response.stop_reason == "end_turn"
    assert ours(client) == {}
    assert client.answer() == "hello there"


@pytest.mark.e2e
async def test_a_slow_sdk_agent_over_stdio_gets_a_card_with_heartbeats_closed_before_its_answer(tmp_path):
    client = RecordingClient()
    # the heartbeat interval comes from the settings, as for the relay (agent_env: 0.05 s)
    async with spawn_agent(client, argv=argv("slow", "0.8")) as (conn, _p, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sent = time.monotonic()
        response = await prompt_text(conn, session.session_id, "think hard")
    assert response.stop_reason == "end_turn"
    ((card_id, ups),) = ours(client).items()
    start = next(r for r in client.updates if getattr(r.update, "tool_call_id", None) == card_id)
    assert start.at - sent < 0.1 + 0.3, "the card opens within think_after"
    assert ups[0].title == "Thinking..." and ups[0].status == "in_progress"
    assert len([u for u in ups[1:] if u.status == "in_progress"]) >= 5
    assert final_status(ups) == "completed"
    assert order_of(client) == ["think:start"] + ["card:in_progress"] * (len(ups) - 2) + [
        "card:completed",
        "msg",
    ]


async def test_an_agent_that_raises_fails_the_card_and_the_editor_gets_the_error(tmp_path, monkeypatch):
    client = RecordingClient()
    # silent twice think_after (both are timers of one loop: the card opens first)
    async with served_wrapped(client, monkeypatch, "slow-raise", "0.2") as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError):
            await prompt_text(conn, session.session_id, "think hard")
        await asyncio.sleep(0.15)  # three heartbeat intervals: nothing after the error answer
    ((_card, ups),) = ours(client).items()
    assert final_status(ups) == "failed"
    assert order_of(client)[-1] == "card:failed", "nothing after the error answer"


async def test_cancel_fails_the_card_and_the_agent_answers_cancelled(tmp_path, monkeypatch):
    card_shown = asyncio.Event()
    client = RecordingClient(on_update=lambda received: card_shown.set())
    async with served_wrapped(client, monkeypatch, "slow", "30") as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        answer = asyncio.ensure_future(prompt_text(conn, session.session_id, "think hard"))
        await asyncio.wait_for(card_shown.wait(), 10)  # the first update is our card's start
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(answer, 10)
        count = len(client.updates)
        await asyncio.sleep(0.3)
    assert response.stop_reason == "cancelled"
    ((_card, ups),) = ours(client).items()
    assert final_status(ups) == "failed"
    assert len(client.updates) == count, "no heartbeat after the cancel"


# ---------------------------------------------------------------------- pydantic-acp


async def test_a_pydantic_acp_agent_gets_a_card_closed_before_its_streamed_answer(tmp_path, monkeypatch):
    pytest.importorskip("pydantic_acp", reason="the pydantic-acp extra is not installed")
    client = RecordingClient()
    async with served_wrapped(client, monkeypatch, "pydantic", "0.3") as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "hello")
    assert response.stop_reason == "end_turn"
    assert client.answer() == "hello after thinking"
    ((_card, ups),) = ours(client).items()
    assert final_status(ups) == "completed"
    shown = order_of(client)
    assert shown.index("card:completed") < shown.index("msg")


async def test_a_pydantic_acp_agent_in_process_sends_the_same_updates_bare_and_wrapped():
    pytest.importorskip("pydantic_acp", reason="the pydantic-acp extra is not installed")
    from acp import PROTOCOL_VERSION, text_block
    from acp._transport import memory_transport_pair
    from acp.core import AgentSideConnection, ClientSideConnection

    from acp_adapter import with_progress
    from tests.agents.slow_agent import pydantic_agent

    async def drive(agent: Any) -> RecordingClient:
        client = RecordingClient()
        agent_end, client_end = memory_transport_pair()
        agent_conn = AgentSideConnection(agent, agent_end)
        client_conn = ClientSideConnection(client, client_end)
        try:
            await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await client_conn.new_session(cwd=str(ROOT), mcp_servers=[])
            response = await client_conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            assert response.stop_reason == "end_turn"
        finally:
            await client_conn.close()
            await agent_conn.close()
        return client

    bare = await drive(pydantic_agent(0.2))
    wrapped = await drive(
        with_progress(pydantic_agent(0.2), think_after=0.025, heartbeat=0.025, summary=None)
    )
    assert ours(bare) == {}
    ((_card, ups),) = ours(wrapped).items()
    assert len(ups) >= 4 and final_status(ups) == "completed"

    def theirs(client: RecordingClient) -> list[Any]:
        return [
            r.update.model_dump(exclude={"message_id"})  # a fresh uuid per run
            for r in client.updates
            if not getattr(r.update, "tool_call_id", "").startswith(OURS)
            and r.update.session_update != "session_info_update"  # carries the session's timestamps
        ]

    assert theirs(wrapped) == theirs(bare)
    assert wrapped.answer() == "hello after thinking"


def test_pydantic_acp_keeps_the_pydantic_ai_it_supports():
    """The extra must not drag in a pydantic-ai newer than pydantic-acp supports."""
    pytest.importorskip("pydantic_acp", reason="the pydantic-acp extra is not installed")
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    wanted = next(Requirement(r) for r in requires("pydantic-acp") or [] if r.startswith("pydantic-ai-slim"))
    assert version("pydantic-ai-slim") in wanted.specifier


@pytest.mark.e2e
def test_a_hang_up_mid_think_ends_the_wrapped_agents_process_promptly():
    """The editor closes the agent's stdin while our card is open: the SDK cancels the prompt, the
    wrapper lets that cancellation through (an answer now would wait on a sender that is gone) and
    the process exits as the bare agent would."""
    from tests.helpers.acp_agent import agent_env
    from tests.helpers.rawpipes import RawProcess, answers, request

    agent = RawProcess([sys.executable, *argv("slow", "60")], agent_env(), str(ROOT))
    agent.send(request(1, "initialize", {"protocolVersion": 1}))
    agent.messages_until(answers(1))
    agent.send(request(2, "session/new", {"cwd": str(ROOT), "mcpServers": []}))
    session_id = agent.messages_until(answers(2))[-1]["result"]["sessionId"]
    agent.send(
        request(3, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]})
    )
    agent.messages_until(lambda m: m.get("params", {}).get("update", {}).get("kind") == "think")
    started = time.monotonic()
    assert agent.finish(timeout=10) == 0
    assert time.monotonic() - started < 5, "the 60 s think does not hold the process"
