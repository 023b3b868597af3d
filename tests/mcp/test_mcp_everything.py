"""The reference MCP server ``@modelcontextprotocol/server-everything`` (npm, stdio) behind the agent:
its progress reaches the card and AG-UI TOOL_PROGRESS as value/total, read-only tools run unasked,
the others ask, cancel mid-operation ends the turn in time, its env secrets stay hidden.

server-everything is pinned in tests/mcp_everything (package.json and its lock file) and installed
there when missing; node_modules is never committed. The server is a real process; the agent runs in
this process (its MCP client is the same wherever it runs): what it logs is checked through caplog
at the level a spawned agent logs at, unformatted, and the canary is put in this process's
environment, which is the agent's."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from acp_adapter.frontends.agui.policy import none_policy
from acp_adapter.frontends.agui.projection import RunProjection
from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.agui_checks import wire
from tests.helpers.mcp_kit import EVERYTHING_TOKEN as TOKEN
from tests.helpers.mcp_kit import everything
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

#: in the agent's env, never the server's (a stdio server inherits only PATH, HOME …)
CANARY = "agent-canary-7f6e5d"


@pytest.fixture(scope="module")
def canary_env() -> Iterator[None]:
    """The canary in this process's environment (the in-process agent's) while the module runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_ONLY_CANARY", CANARY)
        yield


@pytest.fixture(scope="module")
async def agent(canary_env: None) -> AsyncIterator[SharedAgent]:
    """One agent in this process for the module's tests. server-everything keeps running on a
    closed stdin while a timer of its own is pending (a task's time to live, an operation it was
    told to stop): the agent terminates it after a short grace."""
    async with shared_agent_inprocess(mcp={"stop_grace": 0.2}) as shared:
        yield shared


@pytest.fixture(scope="module")
async def everything_session(agent: SharedAgent, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One session with server-everything, shared by the module's tests: each routes it to its own
    client (:func:`on_everything`) and checks its own turns, so one server start serves them all."""
    cwd = tmp_path_factory.mktemp("everything")
    return (await agent.new_session(RecordingClient(), cwd, [everything()])).session_id


def on_everything(agent: SharedAgent, sid: str, client: RecordingClient) -> str:
    """The shared session's updates go to ``client`` from now on (this test's turns)."""
    agent.router.clients[sid] = client
    return sid


@pytest.fixture
def client() -> RecordingClient:
    """This test's own client: the shared agent routes the test's sessions to it."""
    return RecordingClient()


async def test_long_running_operation_progress_reaches_the_card_and_agui(
    everything_session: str, agent: SharedAgent, client: RecordingClient, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)  # what the agent logs, at the level a spawned agent logs at
    conn = agent.conn
    asked_before = len(client.permission_requests)  # what this session asks is counted from here
    sid = on_everything(agent, everything_session, client)
    ask = 'call trigger-long-running-operation {"duration": 0.6, "steps": 3}'  # 0.2 s a step
    response = await prompt_text(conn, sid, ask)
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert card[0].title.startswith("mcp__everything__trigger-long-running-operation")
    values = progress_of(card)
    assert values[-1] == {"value": 3, "total": 3} and len(values) >= 2
    assert final_status(card) == "completed" and "Long running operation completed" in text_of(card[-1])
    # the same updates through the AG-UI projection (a host that publishes progress values):
    # TOOL_PROGRESS snapshots with value/total
    projection = RunProjection("t", "r", emit_tool_progress=True, policy=none_policy)
    events = projection.start()
    for update in client.for_session(sid):
        events += projection.project(update)
    events += projection.finish(stop_reason="end_turn")
    shots = [e for e in wire(events) if e.get("activityType") == "TOOL_PROGRESS"]
    assert shots and shots[-1]["content"]["progress"] == {"value": 3, "total": 3}
    # read-only echo runs unasked; toggle-simulated-logging (not read-only) asks first
    await prompt_text(conn, sid, 'call echo {"message": "hi"}')
    assert final_status(tool_cards(client, sid)[-1]) == "completed"
    assert client.permission_requests[asked_before:] == []
    client.permission = "reject"
    await prompt_text(conn, sid, "call toggle-simulated-logging {}")
    (asked,) = client.permission_requests[asked_before:]
    assert "everything" in asked.title and "toggle-simulated-logging" in asked.title
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed" and "denied" in text_of(card[-1]).lower()
    # its env token, echoed by get-env, never shows
    await prompt_text(conn, sid, "call get-env {}")
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and "EVERYTHING_API_TOKEN" in text_of(card[-1])
    assert "agent-canary" not in text_of(card[-1])  # a stdio server inherits only PATH, HOME …
    assert TOKEN not in repr([r.update for r in client.updates])
    assert caplog.records and TOKEN not in caplog.text


async def test_cancel_mid_operation_ends_the_turn_within_two_seconds(
    everything_session: str, agent: SharedAgent, client: RecordingClient
):
    conn = agent.conn
    sid = on_everything(agent, everything_session, client)
    first = anyio.Event()

    def watch(item) -> None:
        if progress_of([item.update]):
            first.set()

    client.on_update = watch
    answers = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            # 20 s long, its first progress (what the cancel waits for) after 0.2 s, not a second
            call = 'call trigger-long-running-operation {"duration": 20, "steps": 100}'
            answers.append(await prompt_text(conn, sid, call))

        tg.start_soon(ask)
        with anyio.fail_after(15):
            await first.wait()
        at = time.monotonic()
        await conn.cancel(session_id=sid)
    assert time.monotonic() - at < 2.0
    assert answers[0].stop_reason == "cancelled"
    assert final_status(tool_cards(client, sid)[-1]) != "in_progress"
