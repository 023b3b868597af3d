"""A streamable-HTTP MCP server (the ``mcp`` SDK's, in its own process) passed in session/new:
``mcpCapabilities.http`` is advertised, its tools run with progress, its header token stays secret."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ClientCapabilities, HttpHeader, HttpMcpServer

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text, spawn_agent
from tests.helpers.http_servers import http_server
from tests.mcp.test_mcp_e2e import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

TOKEN = "Bearer hdr-token-9f8e7d6c5b4a3f2e1d0c"


@contextlib.contextmanager
def http_kit() -> Iterator[int]:
    """The SDK's test kit over streamable HTTP in its own process; yields its port."""
    with http_server("tests.mcp_servers.kit", "http") as port:
        yield port


async def test_http_server_tools_run_with_progress_and_the_header_stays_secret(tmp_path):
    client = RecordingClient()
    with http_kit() as port:
        async with spawn_agent(client, env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")) as (conn, _p, log):
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
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
            response = await prompt_text(
                conn, sid, 'call slow_count {"steps": 2, "delay": 0.05, "label": "sheep"}'
            )
            assert response.stop_reason == "end_turn"
            card = tool_cards(client, sid)[-1]
            assert card[0].title == "Counting sheep"
            assert progress_of(card)[-1] == {"value": 2, "total": 2, "message": "step 2 of 2"}
            assert final_status(card) == "completed" and "counted 2 sheep" in text_of(card[-1])
        assert "hdr-token" not in log.read_text()
        assert "hdr-token" not in repr([r.update for r in client.updates])


async def test_an_http_server_that_cannot_be_reached_is_told_once_without_its_token(tmp_path):
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
    async with spawn_agent(client, env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")) as (conn, _p, log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[down])).session_id
        first = await prompt_text(conn, sid, "hello")
        await prompt_text(conn, sid, "hello again")
        assert first.stop_reason == "end_turn"
        answer = client.answer(sid)
        assert answer.count("MCP server 'down' is not available: ") == 1
    assert "hdr-token" not in log.read_text() and "hdr-token" not in repr([r.update for r in client.updates])
