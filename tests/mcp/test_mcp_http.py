"""A streamable-HTTP MCP server (the ``mcp`` SDK's, in its own process) passed in session/new:
``mcpCapabilities.http`` is advertised, its tools run with progress, its header token stays secret.
One agent in this process (its MCP client is the same wherever it runs) serves the module's tests,
each with a session of its own; what it logs (where a leaked token would show) is checked through
caplog, at the level a spawned agent logs at, unformatted (no redacting formatter to hide it)."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ClientCapabilities, HttpHeader, HttpMcpServer

from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.mcp_kit import http_kit
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = pytest.mark.anyio

TOKEN = "Bearer hdr-token-9f8e7d6c5b4a3f2e1d0c"


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess() as shared:
        yield shared


@pytest.mark.e2e  # the HTTP server is a process; the agent runs in this process
async def test_http_server_tools_run_with_progress_and_the_header_stays_secret(
    tmp_path, agent: SharedAgent, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)  # what the agent logs, at the level a spawned agent logs at
    client, conn = RecordingClient(), agent.conn
    with http_kit() as port:
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
        )
        assert init.agent_capabilities.mcp_capabilities.http is True
        server = HttpMcpServer(
            name="web",
            url=f"http://127.0.0.1:{port}/mcp",
            headers=[HttpHeader(name="Authorization", value=TOKEN)],
            type="http",
        )
        sid = (await agent.new_session(client, tmp_path, [server])).session_id
        response = await prompt_text(
            conn, sid, 'call slow_count {"steps": 2, "delay": 0.05, "label": "sheep"}'
        )
        assert response.stop_reason == "end_turn"
        card = tool_cards(client, sid)[-1]
        assert card[0].title == "Counting sheep"
        assert progress_of(card)[-1] == {"value": 2, "total": 2, "message": "step 2 of 2"}
        assert final_status(card) == "completed" and "counted 2 sheep" in text_of(card[-1])
        await agent.close_session(sid)  # what the agent logs as it stops the server counts too
    assert caplog.records and "hdr-token" not in caplog.text
    assert "hdr-token" not in repr([r.update for r in client.updates])


async def test_an_http_server_that_cannot_be_reached_is_told_once_without_its_token(
    tmp_path, agent: SharedAgent, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = HttpMcpServer(
        name="down",
        url=f"http://127.0.0.1:{port}/mcp",
        headers=[HttpHeader(name="Authorization", value=TOKEN)],
        type="http",
    )
    client = RecordingClient()
    conn = agent.conn
    sid = (await agent.new_session(client, tmp_path, [down])).session_id
    first = await prompt_text(conn, sid, "hello")
    await prompt_text(conn, sid, "hello again")
    assert first.stop_reason == "end_turn"
    answer = client.answer(sid)
    assert answer.count("MCP server 'down' is not available: ") == 1
    await agent.close_session(sid)
    assert caplog.records and "hdr-token" not in caplog.text
    assert "hdr-token" not in repr([r.update for r in client.updates])
