"""The relay with real agent processes: session/load and session/list pass through (a load's replay
never gets a spinner), it never doubles an agent's own spinner, its errors say what happened, and its
summary heartbeats carry the real elapsed time. The relay's code runs in this process on a socket
(:func:`tests.helpers.relay_inside.relay_inside`) where what it forwards is the point (a foreign
agent it wraps is then served in this process too, behind a process that pipes its bytes); a dead
agent's error comes through a relay process, as an editor sees it."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ToolCallProgress, ToolCallStart

from acp_adapter.client.driver import AgentDriver, AgentStartError
from acp_adapter.config import Settings
from tests.agents.scripted_agent import ScriptedAgent
from tests.agents.thinking_agent import ThinkingAgent
from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.relay_inside import injected, relay_argv, relay_inside
from tests.helpers.shared_agent import agent_on, progress_agent

pytestmark = pytest.mark.anyio


def thinking_agent(seconds: float, *, meta: bool = False) -> Callable[[], ThinkingAgent]:
    """The agent ``tests/agents/thinking_agent.py [--meta] SECONDS`` runs, for :func:`relay_inside`
    to serve behind its pipe process (what the relay forwards and injects is the point)."""
    return lambda: ThinkingAgent(meta, seconds)


def this_agent(env: dict[str, str]) -> Callable[[], Any]:
    """This project's agent with the settings ``env`` gives, as ``python -m acp_adapter`` would run
    it, for :func:`relay_inside` to serve behind its pipe process (what the relay passes is the
    point, not the agent's process)."""
    return lambda: progress_agent(Settings.from_env(env))


def agents_own(client: RecordingClient, session_id: str | None = None) -> dict[str, list]:
    return {c: u for c, u in client.think_cards(session_id).items() if not c.startswith("relay-think-")}


@pytest.mark.e2e
async def test_an_agent_that_opened_a_think_card_gets_none_injected_in_that_session(tmp_path):
    client = RecordingClient()
    argv = relay_argv(think_after="0.1")
    async with relay_inside(client, argv=argv, agent=thinking_agent(0.4)) as (conn, _relay):
        thinking = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, thinking, "think hard")  # its card stays quiet 0.4 s > think-after
        await prompt_text(conn, thinking, "quiet now")  # silent, in a session that has shown its own
        other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, other, "quiet elsewhere")
    assert len(agents_own(client, thinking)) == 1
    assert injected_in(client, thinking) == {}
    # a session where the agent never showed one still gets the relay's card
    (card,) = injected_in(client, other).values()
    assert final_status(card) == "completed"


def injected_in(client: RecordingClient, session_id: str) -> dict[str, list]:
    return {c: u for c, u in client.think_cards(session_id).items() if c.startswith("relay-think-")}


@pytest.mark.e2e
async def test_an_agent_that_says_it_shows_its_own_think_cards_gets_none(tmp_path):
    client = RecordingClient()
    argv = relay_argv(think_after="0.1")
    async with relay_inside(client, argv=argv, agent=thinking_agent(0.25, meta=True)) as (conn, _relay):
        session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        response = await prompt_text(conn, session, "quiet")
    assert response.stop_reason == "end_turn"
    assert injected(client) == {} and client.answer() == "answer to quiet"


@pytest.mark.e2e
async def test_this_projects_agent_through_the_relay_shows_one_card_per_thinking_phase(tmp_path):
    """The issue's ``watch --agent "acp-progress relay -- acp-progress serve" "search for TODO"``:
    the agent's own card beats rarely (5 s), far beyond --think-after; still no second card."""
    (tmp_path / "notes.py").write_text("# TODO: once\n")
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.3", ACP_PROGRESS_HEARTBEAT_INTERVAL="5")
    client = RecordingClient(permission="allow")
    argv = relay_argv(think_after="0.1")
    async with relay_inside(client, env=env, argv=argv, agent=this_agent(env)) as (conn, _relay):
        session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        response = await prompt_text(conn, session, "search for TODO")
    assert response.stop_reason == "end_turn"
    assert len(agents_own(client)) >= 2  # two thinking phases: before the tool and after it
    assert injected(client) == {}
    starts = [
        r.update for r in client.updates if isinstance(r.update, ToolCallStart) and r.update.kind == "think"
    ]
    open_at_once = max_open(client)
    assert len(starts) == len(agents_own(client)) and open_at_once == 1


def max_open(client: RecordingClient) -> int:
    think = set(client.think_cards())
    open_cards: set[str] = set()
    most = 0
    for r in client.updates:
        u = r.update
        if isinstance(u, ToolCallStart) and u.tool_call_id in think:
            open_cards.add(u.tool_call_id)
        elif isinstance(u, ToolCallProgress) and u.status in ("completed", "failed"):
            open_cards.discard(u.tool_call_id)
        most = max(most, len(open_cards))
    return most


async def test_this_projects_agent_says_it_shows_its_own_think_cards(tmp_path):
    # what its initialize answers (through the relay, the whole path is the reload test below)
    async with agent_on(tmp_path / "state") as (conn, _client):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
    assert init.field_meta == {"acpProgress": {"thinkCards": True, "storeFlush": True}}


@pytest.mark.e2e
async def test_load_and_list_pass_through_and_a_slow_replay_gets_no_spinner(tmp_path):
    client = RecordingClient()
    argv = relay_argv(think_after="0.1")
    async with relay_inside(client, argv=argv, agent=thinking_agent(0.4)) as (conn, _relay):
        session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        listed = await conn.list_sessions(cwd=str(tmp_path))
        before = len(client.updates)
        await conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])  # quiet 0.4 s
        replay = client.updates[before:]
        # a prompt after the load still gets its card: the load left no turn behind
        await prompt_text(conn, session, "after the load")
    assert [s.session_id for s in listed.sessions] == [session]
    assert [type(r.update).__name__ for r in replay] == ["AgentMessageChunk"]
    assert len(injected(client)) == 1  # the prompt's, none for the load
    assert all(final_status(ups) == "completed" for ups in injected(client).values())


@pytest.mark.e2e
async def test_a_session_stored_by_this_projects_agent_reloads_through_a_new_relay(tmp_path):
    """The relay passes session/list and session/load through to this project's agent, and its
    replay gets no spinner. The session is stored by the agent alone (in this process: what it
    writes is the same whoever its client is); the agent the relay wraps is a new one on that
    store, behind the process the relay spawns."""
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    argv = relay_argv(think_after="0.01")
    async with agent_on(tmp_path / "state", embedded_delay=0.05) as (conn, first):
        session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, session, "hello")
    assert first.answer()
    second = RecordingClient()
    async with relay_inside(second, env=env, argv=argv, agent=this_agent(env)) as (conn, _relay):
        listed = await conn.list_sessions(cwd=str(tmp_path))
        await conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])
        replayed = len(second.updates)
        response = await prompt_text(conn, session, "again")
    assert session in [s.session_id for s in listed.sessions]
    assert replayed > 0 and second.answer().startswith(first.answer())
    assert response.stop_reason == "end_turn"
    assert injected(second) == {}


@pytest.mark.e2e
async def test_a_dead_agent_is_named_in_the_error_message_itself(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "acp_adapter.cli",
        "relay",
        "--",
        sys.executable,
        "-c",
        "import sys; sys.exit(3)",
    ]
    driver = AgentDriver(argv, env=agent_env(), cwd=str(tmp_path), init_timeout=15)
    with pytest.raises(AgentStartError) as excinfo:
        await driver.start()
    assert "the wrapped agent exited with code 3" in str(excinfo.value)
    assert "Internal error" not in str(excinfo.value)


@pytest.mark.e2e
async def test_the_relays_summary_heartbeats_carry_the_real_elapsed_time(tmp_path):
    client = RecordingClient()
    argv = relay_argv(think_after="0.15", heartbeat="0.1", extra=("--summary", "embedded"))
    env = agent_env(ACP_PROGRESS_SUMMARY_INTERVAL="0.05")
    silent = lambda: ScriptedAgent("silent", "0.6")  # noqa: E731
    async with relay_inside(client, env=env, argv=argv, agent=silent) as (conn, _relay):
        session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, session, "go")
    (card,) = injected(client).values()
    lines = [
        block.content.text
        for u in card
        if isinstance(u, ToolCallProgress) and u.status == "in_progress"
        for block in (u.content or [])
    ]
    with_summary = [line for line in lines if " — " in line]
    assert with_summary, lines
    for line in lines:
        match = re.match(r"Still thinking… (\d+(?:\.\d+)?)s", line)
        assert match, line
        assert float(match.group(1)) >= 0.15, line  # the silence began think-after before the card
