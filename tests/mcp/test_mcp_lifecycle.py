"""MCP servers live as long as their session: no orphan when the agent
exits, a server that never answers initialize is given up after the start timeout and stopped,
and a stored session remembers its servers' names (never their secrets) so ``session/load``
reconnects to the servers the client passes now and says which ones it no longer has.

The agent runs as a real process where its process is the point (it exits: its servers go with
it, also mid-call); elsewhere it runs in this process over the SDK's in-memory transports, which
take the same session/MCP decisions, and a "restarted" agent is a new ProgressAgent on the same
state directory. The MCP servers are always real processes."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from acp.schema import HttpMcpServer, McpServerStdio

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text, spawn_agent
from tests.helpers.mcp_kit import SECRET, alive, http_kit, kit
from tests.helpers.session_requests import close_session
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.tool_cards import text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FAST = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")


@pytest.fixture(scope="module")
def web_kit() -> Iterator[str]:
    """The kit over streamable HTTP, one process for the module's tests that need a server that
    works and need nothing of its process (each agent's session has its own MCP session with it)."""
    with http_kit() as port:
        yield f"http://127.0.0.1:{port}/mcp"


async def gone(pid: int, within: float = 6.0) -> bool:
    for _ in range(int(within / 0.05)):
        if not alive(pid):
            return True
        await anyio.sleep(0.05)
    return not alive(pid)


async def test_servers_stop_when_the_agent_exits(tmp_path):
    marker = tmp_path / "started"
    client = RecordingClient()
    async with spawn_agent(client, env=FAST) as (conn, _p, _log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit(marker=marker)])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "x"}')
        (pid,) = [int(x) for x in marker.read_text().split()]
        assert alive(pid)
    assert await gone(pid)


MUTE_SERVER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(3600)"


async def test_a_server_that_never_initializes_is_given_up_and_stopped(tmp_path, web_kit: str):
    marker = tmp_path / "started"
    # a stdio process that never speaks MCP; plain Python (no SDK import), so it has written its
    # pid long before the start timeout (a second: it is waited out, so it is kept short)
    mute = McpServerStdio(
        name="mute",
        command=sys.executable,
        args=["-c", MUTE_SERVER, str(marker)],
        env=[],
    )
    # the working server is already up (HTTP), so a short start timeout cannot fail it on a
    # loaded machine: the wait this test pays is the timeout the mute server is given
    client = RecordingClient()
    web = HttpMcpServer(name="web", url=web_kit, headers=[], type="http")
    # it never exits on its closed input either: its group is terminated after the stop grace
    agent = progress_agent(mcp={"start_timeout": 1, "stop_grace": 0.2})
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[mute, web])).session_id
        response = await prompt_text(conn, sid, 'call peek {"text": "x"}')
        assert response.stop_reason == "end_turn"
        assert "MCP server 'mute' is not available: did not start within 1 s" in client.answer(sid)
        assert final_status(tool_cards(client, sid)[-1]) == "completed"
        pid = int(marker.read_text())
        assert await gone(pid)


async def test_a_stdio_server_that_ignores_its_closed_input_is_terminated_after_the_stop_grace(tmp_path):
    """Closing its stdin is the polite stop; a server with a timer pending may never exit on it,
    so its process group is terminated once the stop grace (``[mcp] stop_grace``) is over."""
    from acp_adapter.mcp.connection import McpServer

    marker = tmp_path / "started"
    mute = McpServerStdio(name="mute", command=sys.executable, args=["-c", MUTE_SERVER, str(marker)], env=[])
    server = McpServer(mute, str(tmp_path), start_timeout=30, stop_grace=0.2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        for _ in range(600):
            if marker.exists() and marker.read_text():
                break
            await anyio.sleep(0.02)
        pid = int(marker.read_text())
        started = time.monotonic()
        await server.stop(within=10)
        took = time.monotonic() - started
    assert not alive(pid)
    assert took < 1.5, f"the stop waited {took:.2f} s, not the 0.2 s grace it was given"


async def test_load_reconnects_to_the_servers_passed_now_and_names_the_missing_ones(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[kit()])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "first"}')
    client = RecordingClient()  # a new agent on the same state directory: the session is stored
    async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        await prompt_text(conn, sid, "hello")
        assert (
            "MCP server 'kit' is not available: the editor did not pass this server again"
            in client.answer(sid)
        )
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[kit()])
        client.updates.clear()
        await prompt_text(conn, sid, 'call peek {"text": "again"}')
        card = tool_cards(client, sid)[-1]
        assert final_status(card) == "completed" and "peek: again" in text_of(card[-1])
        assert "not available" not in client.answer(sid)
    stored = b"".join(p.read_bytes() for p in Path(state).rglob("*") if p.is_file())
    assert b"kit" in stored and SECRET.encode() not in stored
    assert os.fsencode(sys.executable) not in stored or b"tests.mcp_servers.kit" not in stored


async def test_session_close_stops_its_servers_and_a_per_call_timeout_fails_the_card(tmp_path):
    marker = tmp_path / "started"
    client = RecordingClient()
    # the hung call keeps the kit from exiting on its closed input: it is terminated after the grace
    agent = progress_agent(mcp={"call_timeout": 0.5, "stop_grace": 0.2})
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit(marker=marker)])).session_id
        response = await prompt_text(conn, sid, "call hang {}")
        assert response.stop_reason == "end_turn"
        card = tool_cards(client, sid)[-1]
        assert final_status(card) == "failed" and "timed out" in text_of(card[-1]).lower()
        (pid,) = [int(x) for x in marker.read_text().split()]
        await close_session(conn, sid)
        assert await gone(pid)


async def test_an_idle_session_is_freed_with_its_servers_and_says_so_when_it_comes_back(tmp_path):
    marker = tmp_path / "started"
    client = RecordingClient()
    agent = progress_agent(session_idle_timeout=1.0)
    ahead = [0.0]  # how far the session table's clock runs ahead of the real one
    agent.sessions._clock = lambda: time.monotonic() + ahead[0]
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit(marker=marker)])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "x"}')
        (pid,) = [int(x) for x in marker.read_text().split()]
        ahead[0] = 1.3  # 1.3 s pass for the session table, none for the test
        await conn.new_session(cwd=str(tmp_path), mcp_servers=[])  # its sweep frees the idle session
        assert await gone(pid)
        await prompt_text(conn, sid, "hello")
        told = "MCP server 'kit' is not available: it was stopped with the idle session"
        assert client.answer(sid).count(told) == 1


async def test_session_resume_is_advertised_and_reconnects_without_a_replay(tmp_path, web_kit: str):
    from acp.meta import AGENT_METHODS
    from acp.schema import ResumeSessionRequest, ResumeSessionResponse
    from acp.utils import request_model_from_dict

    ws = tmp_path / "ws"
    ws.mkdir()
    state = str(tmp_path / "state")
    # the module's kit over HTTP, which both agents connect to: the reconnect is the point, not a
    # stdio start
    web = HttpMcpServer(name="kit", url=web_kit, headers=[], type="http")
    async with served_inprocess(RecordingClient(), progress_agent(state_dir=state)) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[web])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "one"}')
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(state_dir=state)) as conn:
        init = await conn.initialize(protocol_version=1)
        assert init.agent_capabilities.session_capabilities.resume is not None
        request = ResumeSessionRequest(session_id=sid, cwd=str(ws), mcp_servers=[web])
        await request_model_from_dict(
            conn._conn, AGENT_METHODS["session_resume"], request, ResumeSessionResponse
        )
        assert client.for_session(sid) == []  # no replay
        assert len(client.commands) == 1  # only the commands the agent answers, as after every resume
        await prompt_text(conn, sid, 'call peek {"text": "two"}')
        card = tool_cards(client, sid)[-1]
        assert final_status(card) == "completed" and "peek: two" in text_of(card[-1])


async def test_the_agent_exits_in_time_and_leaves_no_server_while_a_call_hangs(tmp_path):
    marker = tmp_path / "started"
    client = RecordingClient()
    hanging = anyio.Event()

    def watch(item) -> None:
        if "hanging" in text_of(item.update):
            hanging.set()

    client.on_update = watch
    # the hung call keeps the kit from exiting on its closed input: it is terminated after the
    # stop grace, which need not be the default 2 s for the exit to be timed
    env = {**FAST, "ACP_PROGRESS_MCP_STOP_GRACE": "0.2"}
    async with spawn_agent(client, env=env) as (conn, process, _log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit(marker=marker)])).session_id
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                with contextlib.suppress(Exception):
                    await prompt_text(conn, sid, "call hang {}")

            tg.start_soon(ask)
            with anyio.fail_after(15):
                await hanging.wait()
            (pid,) = [int(x) for x in marker.read_text().split()]
            started = time.monotonic()
            process.stdin.close()  # the editor goes away mid-call
            with anyio.fail_after(15):
                await process.wait()
            tg.cancel_scope.cancel()
        assert time.monotonic() - started < 10
    assert await gone(pid, within=1.0)
