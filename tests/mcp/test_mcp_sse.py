"""MCP servers over SSE (the older HTTP transport many hosted servers still speak): advertised as
``mcpCapabilities.sse``, connected, their tools run with cards, progress and cancel, end to end
through the agent; and a server the agent cannot use is refused in ``session/new``, never
ignored. The server is a real process: the ``mcp`` SDK's server (MCPServer, formerly FastMCP) with
its SSE transport on loopback; the agent runs in this process (its MCP client is the same wherever
it runs), where it also answers the refusals in ``session/new``."""

from __future__ import annotations

import logging

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import AcpMcpServer, ClientCapabilities, HttpHeader, McpServerStdio, SseMcpServer

from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.http_servers import http_server
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = pytest.mark.anyio

TOKEN = "Bearer sse-token-5e4d3c2b1a0f9e8d"


@pytest.mark.e2e  # the SSE server is a process; the agent runs in this process (its process proves nothing)
async def test_an_sse_server_runs_tools_with_cards_progress_and_cancel(tmp_path, caplog):
    caplog.set_level(logging.INFO)  # what the agent logs, at the level a spawned agent logs at
    cancelled = tmp_path / "cancelled"
    client = RecordingClient()
    with http_server("tests.mcp_servers.kit", "sse", env={"MCP_KIT_CANCELLED": str(cancelled)}) as port:
        async with served_inprocess(client, progress_agent()) as conn:
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
            )
            assert init.agent_capabilities.mcp_capabilities.sse is True
            server = SseMcpServer(
                name="web",
                url=f"http://127.0.0.1:{port}/sse",
                headers=[HttpHeader(name="Authorization", value=TOKEN)],
                type="sse",
            )
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
            response = await prompt_text(
                conn, sid, 'call slow_count {"steps": 3, "delay": 0.05, "label": "sheep"}'
            )
            assert response.stop_reason == "end_turn"
            card = tool_cards(client, sid)[-1]
            assert card[0].title == "Counting sheep"
            assert progress_of(card)[-1] == {"value": 3, "total": 3, "message": "step 3 of 3"}
            assert final_status(card) == "completed" and "counted 3 sheep" in text_of(card[-1])

            waiting = anyio.Event()
            client.on_update = lambda item: (
                waiting.set() if "waiting for cancel" in text_of(item.update) else None
            )
            answers = []
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    answers.append(await prompt_text(conn, sid, "call wait_cancel {}"))

                tg.start_soon(ask)
                with anyio.fail_after(15):
                    await waiting.wait()
                started = anyio.current_time()
                await conn.cancel(session_id=sid)
            assert answers[0].stop_reason == "cancelled" and anyio.current_time() - started < 2
            card = tool_cards(client, sid)[-1]  # ACP has no "cancelled" status: the card ends failed
            assert final_status(card) == "failed" and "ancel" in repr(card[-1]), card[-1]
            for _ in range(100):  # the server's handler was cancelled by notifications/cancelled
                if cancelled.exists() and cancelled.read_text():  # created is not yet written
                    break
                await anyio.sleep(0.05)
            assert cancelled.read_text() == "cancelled\n"
        assert caplog.records and "sse-token" not in caplog.text
        assert "sse-token" not in repr([r.update for r in client.updates])


def _stdio(name: str) -> McpServerStdio:
    return McpServerStdio(name=name, command="true", args=[], env=[])


@pytest.mark.parametrize(
    ("servers", "said"),
    [
        (
            [AcpMcpServer(name="inline", server_id="x", type="acp")],
            "'inline': the 'acp' transport is not supported",
        ),
        ([_stdio("s__a")], "'s__a' contains '__'"),
        ([_stdio("s._a")], "'s._a' contains '__'"),  # '.' becomes '_' in a tool name
        ([_stdio("s"), _stdio("s_")], "'s_' and 's' both give tool names mcp__s__"),
        ([_stdio("s"), _stdio("s")], "'s' is given twice"),
    ],
)
async def test_a_server_the_agent_cannot_use_is_refused_in_session_new(servers, said, tmp_path):
    async with served_inprocess(RecordingClient(), progress_agent()) as conn:
        with pytest.raises(RequestError) as refused:
            await conn.new_session(cwd=str(tmp_path), mcp_servers=servers)
        assert refused.value.code == -32602 and said in str(refused.value.data), refused.value.data
        ok = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])  # the agent serves on
        assert ok.session_id
