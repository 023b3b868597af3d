"""MCP servers from the editor, end to end: a real MCP server built with the ``mcp`` SDK
(tests/mcp_servers/kit.py) over stdio, the SDK's ACP client side. One agent in this process (its
MCP client and its sessions are the same wherever it runs) serves the module's tests (each has its
own session and MCP servers); what it logs, where a leaked secret would show, is checked through
caplog at the level a spawned agent logs at, unformatted (no redacting formatter to hide it)."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator

import anyio
import pytest
from acp.schema import EnvVariable, McpServerStdio

from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import ProgressEvent
from acp_adapter.frontends.bridges.projection import TurnProjection
from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.mcp_kit import SECRET, alive, kit
from tests.helpers.session_requests import delete_session
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess() as shared:
        yield shared


@pytest.fixture
def client() -> RecordingClient:
    """This test's own client: the shared agent routes the test's sessions to it."""
    return RecordingClient()


async def test_stdio_server_starts_its_tools_run_with_progress_and_it_stops_with_the_session(
    tmp_path, agent: SharedAgent, client: RecordingClient, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)  # what the agent logs, at the level a spawned agent logs at
    marker = tmp_path / "started"
    conn = agent.conn
    asked_before = len(client.permission_requests)  # what this session asks is counted from here
    session = await agent.new_session(client, tmp_path, [kit(marker=marker)])
    sid = session.session_id
    # read-only tool: runs unasked; the bare tool name works when it is unique
    response = await prompt_text(conn, sid, 'call peek {"text": "hello"}')
    assert response.stop_reason == "end_turn"
    (card,) = tool_cards(client, sid)
    assert card[0].kind == "read" and card[0].title.startswith("mcp__kit__peek")
    assert final_status(card) == "completed" and "peek: hello" in text_of(card[-1])
    assert client.permission_requests[asked_before:] == []
    # a tool with progress and a presentation descriptor: asks first, title from the descriptor
    response = await prompt_text(
        conn, sid, 'call mcp__kit__slow_count {"steps": 3, "delay": 0.05, "label": "goats"}'
    )
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert card[0].title == "Counting goats" and card[0].kind == "other"
    (asked,) = client.permission_requests[asked_before:]
    assert "kit" in asked.title and "slow_count" in asked.title and asked.raw_input["label"] == "goats"
    values = progress_of(card)
    assert values and values[-1] == {"value": 3, "total": 3, "message": "step 3 of 3"}
    assert final_status(card) == "completed" and "counted 3 goats" in text_of(card[-1])
    # the chat bridges' progress lines come from the same updates: the descriptor's label
    projection = TurnProjection(ProgressConfig(tool_progress="all"))
    lines = [
        e.payload
        for u in client.for_session(sid)
        for e in projection.project(u, 0.0)
        if isinstance(e, ProgressEvent) and e.payload.tool_id == "mcp__kit__slow_count"
    ]
    assert [(p.phase, p.label, p.preview) for p in lines][-1] == ("completed", "Counting", "goats")
    pids = [int(x) for x in marker.read_text().split()]
    assert len(pids) == 1 and alive(pids[0])
    await delete_session(conn, sid)
    for _ in range(100):
        if not alive(pids[0]):
            break
        await anyio.sleep(0.05)
    assert not alive(pids[0])
    assert caplog.records and SECRET not in caplog.text


async def test_failing_server_does_not_fail_the_session_and_is_told_once(
    tmp_path, agent: SharedAgent, client: RecordingClient, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)
    bad = McpServerStdio(
        name="broken",
        command=sys.executable,
        args=["-c", "import sys; sys.exit(2)"],
        env=[EnvVariable(name="API_TOKEN", value="sk-proj-SHOULDNOTAPPEAR0123456789abcdef")],
    )
    conn = agent.conn
    session = await agent.new_session(client, tmp_path, [bad, kit()])
    sid = session.session_id
    first = await prompt_text(conn, sid, 'call peek {"text": "one"}')
    second = await prompt_text(conn, sid, 'call peek {"text": "two"}')
    assert first.stop_reason == second.stop_reason == "end_turn"
    answer = client.answer(sid)
    assert answer.count("MCP server 'broken' is not available") == 1
    assert [final_status(c) for c in tool_cards(client, sid)] == ["completed", "completed"]
    assert caplog.records and "SHOULDNOTAPPEAR" not in caplog.text


async def test_error_crash_and_restart_once_per_turn(tmp_path, agent: SharedAgent, client: RecordingClient):
    marker = tmp_path / "started"
    conn = agent.conn
    session = await agent.new_session(client, tmp_path, [kit(marker=marker)])
    sid = session.session_id
    await prompt_text(conn, sid, 'call fail {"message": "the widget broke"}')
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed" and "the widget broke" in text_of(card[-1])
    response = await prompt_text(conn, sid, "call crash {}")
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed" and "crashed" in text_of(card[-1])
    # the next turn starts the server again and the session goes on
    await prompt_text(conn, sid, 'call peek {"text": "back"}')
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and "peek: back" in text_of(card[-1])
    assert len(marker.read_text().split()) == 2


@pytest.fixture(scope="module")
async def kit_session(agent: SharedAgent, tmp_path_factory: pytest.TempPathFactory) -> str:
    """One session with a plain kit server, shared by the tests that need nothing of it but its
    tools (one may grow them): each routes the session to its own client and checks its own turns."""
    cwd = tmp_path_factory.mktemp("kit")
    return (await agent.new_session(RecordingClient(), cwd, [kit()])).session_id


async def test_tools_list_changed_refreshes_the_offered_tools_between_turns(
    kit_session: str, agent: SharedAgent, client: RecordingClient
):
    conn, sid = agent.conn, kit_session
    agent.router.clients[sid] = client
    await prompt_text(conn, sid, "call grown {}")
    assert tool_cards(client, sid) == []  # not offered yet: the model does not call it
    await prompt_text(conn, sid, "call grow {}")
    await prompt_text(conn, sid, "call grown {}")
    card = tool_cards(client, sid)[-1]
    assert card[0].title.startswith("mcp__kit__grown")
    assert final_status(card) == "completed" and "grown here" in text_of(card[-1])


async def test_invalid_presentation_descriptors_are_dropped(
    kit_session: str, agent: SharedAgent, client: RecordingClient
):
    conn, sid = agent.conn, kit_session
    agent.router.clients[sid] = client
    key = "sk-proj-Hq3ZkT9vW2xY7bN4mP8rL5sD1fG6jK0c"
    await prompt_text(conn, sid, f'call peek_key {{"api_key": "{key}", "note": "n1"}}')
    await prompt_text(conn, sid, 'call peek_escape {"note": "n2"}')
    first, second = tool_cards(client, sid)
    # a descriptor that previews a sensitive field is refused: raw id, safe scalar preview
    assert first[0].title == "mcp__kit__peek_key n1"
    assert second[0].title == "mcp__kit__peek_escape n2"
    assert key not in repr([r.update for r in client.updates])
