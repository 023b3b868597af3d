"""One size limit for every MCP transport: an answer past ``ACP_PROGRESS_MCP_MAX_LINE`` is cut off
while it arrives — from a streamable-HTTP server as a JSON body, as an event stream or gzip-
compressed, and from an SSE server — the call fails saying so, the agent keeps serving and its
memory stays bounded. Real processes: a hostile HTTP server on loopback that streams its answer
without ever holding it (one per mode, shared by the module's tests) and, where its peak memory is
measured, the agent over stdio; elsewhere the agent runs in this process (the limit is its MCP
client's, wherever it runs)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from acp.schema import HttpMcpServer, SseMcpServer

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text, spawn_agent
from tests.helpers.http_servers import http_server
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LIMIT = 2 << 20  # the test's cap: answers of a few times this are sent
ENV = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_MCP_MAX_LINE=str(LIMIT))
TOO_LARGE = "larger than the 2 MiB limit (ACP_PROGRESS_MCP_MAX_LINE); it was cut off"


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess(mcp={"max_message_bytes": LIMIT}) as shared:
        yield shared


@pytest.fixture(scope="module")
def hostile() -> Iterator[Callable[[str], int]]:
    """The port of the module's hostile server in a mode, started the first time a test asks."""
    with contextlib.ExitStack() as stack:
        ports: dict[str, int] = {}

        def port(mode: str) -> int:
            if mode not in ports:
                ports[mode] = stack.enter_context(http_server("tests.mcp_servers.hostile_http", mode))
            return ports[mode]

        yield port


def _server(mode: str, port: int) -> HttpMcpServer | SseMcpServer:
    if mode == "sse":
        return SseMcpServer(name="hostile", url=f"http://127.0.0.1:{port}/sse", headers=[], type="sse")
    return HttpMcpServer(name="hostile", url=f"http://127.0.0.1:{port}/mcp", headers=[], type="http")


@pytest.mark.parametrize("mode", ["json", "events", "gzip", "sse"])
async def test_an_answer_past_the_limit_fails_the_call_and_the_agent_goes_on(
    mode: str, tmp_path, agent: SharedAgent, hostile: Callable[[str], int]
):
    client = RecordingClient()
    port = hostile(mode)
    sid = (await agent.new_session(client, tmp_path, [_server(mode, port)])).session_id
    fits = await prompt_text(agent.conn, sid, 'call huge {"mb": 1}')  # half the cap: it fits
    assert fits.stop_reason == "end_turn"
    assert final_status(tool_cards(client, sid)[-1]) == "completed"
    response = await prompt_text(agent.conn, sid, 'call huge {"mb": 8}')  # four times the cap
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed"
    assert TOO_LARGE in text_of(card[-1]), text_of(card[-1])
    await prompt_text(agent.conn, sid, "call small {}")  # the same server serves on
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and "ok" in text_of(card[-1])


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


@pytest.mark.parametrize("mode", ["json", "gzip"])
async def test_memory_stays_bounded_for_an_answer_fifty_times_the_limit(
    mode: str, tmp_path, hostile: Callable[[str], int]
):
    client = RecordingClient()
    port = hostile(mode)
    async with spawn_agent(client, env=ENV) as (conn, process, _log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[_server(mode, port)])).session_id
        await prompt_text(conn, sid, "call small {}")
        before = _peak_rss_kib(process.pid)
        await prompt_text(conn, sid, 'call huge {"mb": 100}')
        assert _peak_rss_kib(process.pid) - before < 30 * 1024  # never near the 100 MiB sent
        card = tool_cards(client, sid)[-1]
        assert final_status(card) == "failed" and TOO_LARGE in text_of(card[-1])
