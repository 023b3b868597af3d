"""Hostile MCP servers must not kill, hang or flood the agent: a call that never
answers ends cancelled within 2 s, a 5 MB result, 5,000 tools, a progress flood, escapes and secrets.
Real processes: the agent over stdio, servers built with the ``mcp`` SDK. One agent process serves
the module (each test has sessions of its own, but for the tests that need nothing of the plain
kit server but its tools: they share one session, each with its own client); the test that
measures the agent's peak memory starts its own."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import AsyncIterator

import anyio
import pytest
from acp.schema import McpServerStdio

from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, final_status, prompt_text, spawn_agent
from tests.helpers.mcp_kit import SECRET, kit
from tests.helpers.shared_agent import SharedAgent, shared_agent_process
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

FAST = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_MCP_STOP_GRACE="0.2")


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    async with shared_agent_process(env=FAST) as shared:
        yield shared


@pytest.fixture(scope="module")
def kit_dir(tmp_path_factory: pytest.TempPathFactory):
    """The shared kit session's folder; its server writes ``cancelled`` there when a call is cancelled."""
    return tmp_path_factory.mktemp("kit")


@pytest.fixture(scope="module")
async def kit_session(agent: SharedAgent, kit_dir) -> AsyncIterator[str]:
    """One session with a plain kit server, shared by the tests that need nothing of it but its
    tools (each routes the session to its own client and checks its own turns): one server start
    serves them all. A call it ignores (``hang``) holds it past its closed input: it is ended here,
    before the agent is stopped, so it never outlives the module."""
    marker = kit_dir / "started"
    server = kit(marker=marker, cancelled=kit_dir / "cancelled")
    yield (await agent.new_session(RecordingClient(), kit_dir, [server])).session_id
    for pid in marker.read_text().split() if marker.exists() else []:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def on_kit(agent: SharedAgent, sid: str, client: RecordingClient) -> str:
    """The shared kit session's updates go to ``client`` from now on (this test's turns)."""
    agent.router.clients[sid] = client
    return sid


@pytest.fixture
def client() -> RecordingClient:
    """This test's own client: the shared agent routes the test's sessions to it."""
    return RecordingClient()


async def test_cancel_ends_a_call_the_server_ignores_within_two_seconds(
    kit_session: str, agent: SharedAgent, client: RecordingClient
):
    conn = agent.conn
    sid = on_kit(agent, kit_session, client)
    hanging = anyio.Event()

    def watch(item) -> None:  # the card shows the server's "hanging" progress: it is mid-call
        if "hanging" in text_of(item.update):
            hanging.set()

    client.on_update = watch
    async with anyio.create_task_group() as tg:
        answers = []

        async def ask() -> None:
            answers.append(await prompt_text(conn, sid, "call hang {}"))

        tg.start_soon(ask)
        with anyio.fail_after(15):
            await hanging.wait()
        cancelled_at = time.monotonic()
        await conn.cancel(session_id=sid)
    assert time.monotonic() - cancelled_at < 2.0
    assert answers[0].stop_reason == "cancelled"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) in ("failed", "cancelled", "completed")
    assert final_status(card) != "in_progress"
    # the session goes on; the server, still busy with the ignored call, answers others
    client.on_update = None
    await prompt_text(conn, sid, 'call peek {"text": "still here"}')
    assert final_status(tool_cards(client, sid)[-1]) == "completed"


async def test_huge_result_and_progress_flood_leave_the_agent_working(
    kit_session: str, agent: SharedAgent, client: RecordingClient
):
    conn = agent.conn
    sid = on_kit(agent, kit_session, client)
    response = await prompt_text(conn, sid, 'call huge {"mb": 5}')
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed"
    assert len(text_of(card[-1])) < 20_000  # the card shows a capped excerpt
    started = time.monotonic()
    response = await prompt_text(conn, sid, 'call flood {"count": 3000}')
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and "flooded 3000" in text_of(card[-1])
    values = progress_of(card)
    # coalesced: the client got far fewer updates than the server sent, in order, the last seen
    assert 1 <= len(values) < 3000
    assert [v["value"] for v in values] == sorted(v["value"] for v in values)
    assert time.monotonic() - started < 15


async def test_five_thousand_tools_are_cut_to_one_thousand_and_said_once(
    tmp_path, agent: SharedAgent, client: RecordingClient
):
    many = McpServerStdio(
        name="many", command=sys.executable, args=["-m", "tests.mcp_servers.many", "5000"], env=[]
    )
    many.env.append(type(kit().env[0])(name="PYTHONPATH", value=str(ROOT)))
    conn = agent.conn
    sid = (await agent.new_session(client, tmp_path, [many])).session_id
    await prompt_text(conn, sid, "call t00007 {}")
    await prompt_text(conn, sid, "call t04000 {}")
    cards = tool_cards(client, sid)
    assert final_status(cards[0]) == "completed" and "ran t00007" in text_of(cards[0][-1])
    assert len(cards) == 1  # t04000 is not offered: the embedded model does not call it
    assert client.answer(sid).count("4000 of its 5000 tools were left out") == 1


async def test_escapes_and_secrets_from_a_server_never_reach_the_client_or_the_log(
    kit_session: str, agent: SharedAgent, client: RecordingClient
):
    conn = agent.conn
    mark = agent.log_mark()
    sid = on_kit(agent, kit_session, client)
    await prompt_text(conn, sid, "call leak_0_pwned_31m {}")
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed"
    assert card[0].title.startswith("mcp__kit__leak_0_pwned_31m")
    everything = repr([r.update for r in client.updates])
    assert SECRET not in everything
    assert "Hq3ZkT9vW2xY7bN4mP8rL5sD1fG6jK0a" not in everything
    assert "\\x1b" not in everything and "\x1b" not in everything
    assert "red token=[REDACTED]" in text_of(card[-1])
    assert SECRET not in agent.log_since(mark)


async def test_session_cancel_sends_mcp_notifications_cancelled_to_the_server(
    kit_session: str, kit_dir, agent: SharedAgent, client: RecordingClient
):
    cancelled = kit_dir / "cancelled"
    cancelled.unlink(missing_ok=True)  # what the server hears from this test's turn on
    conn = agent.conn
    sid = on_kit(agent, kit_session, client)
    waiting = anyio.Event()

    def watch(item) -> None:
        if "waiting for cancel" in text_of(item.update):
            waiting.set()

    client.on_update = watch
    answers = []
    async with anyio.create_task_group() as tg:

        async def ask() -> None:
            answers.append(await prompt_text(conn, sid, "call wait_cancel {}"))

        tg.start_soon(ask)
        with anyio.fail_after(15):
            await waiting.wait()
        await conn.cancel(session_id=sid)
    assert answers[0].stop_reason == "cancelled"
    for _ in range(100):  # the server's handler was cancelled by notifications/cancelled
        if cancelled.exists() and cancelled.read_text():  # created is not yet written
            break
        await anyio.sleep(0.05)
    assert cancelled.read_text() == "cancelled\n"


async def test_a_result_that_breaks_its_output_schema_fails_the_card_and_the_session_goes_on(
    tmp_path, agent: SharedAgent, client: RecordingClient
):
    server = McpServerStdio(
        name="many",
        command=sys.executable,
        args=["-m", "tests.mcp_servers.many", "2"],
        env=[type(kit().env[0])(name="PYTHONPATH", value=str(ROOT))],
    )
    conn = agent.conn
    sid = (await agent.new_session(client, tmp_path, [server])).session_id
    await prompt_text(conn, sid, "call bad_output {}")
    await prompt_text(conn, sid, "call t00001 {}")
    bad, good = tool_cards(client, sid)
    assert final_status(bad) == "failed" and "structured content" in text_of(bad[-1])
    assert final_status(good) == "completed" and "ran t00001" in text_of(good[-1])


async def test_lines_that_are_not_json_rpc_neither_flood_the_log_nor_leak_the_servers_secret(
    tmp_path, agent: SharedAgent, client: RecordingClient
):
    conn = agent.conn
    mark = agent.log_mark()
    sid = (await agent.new_session(client, tmp_path, [kit(garbage=2000)])).session_id
    await prompt_text(conn, sid, 'call peek {"text": "after"}')
    assert final_status(tool_cards(client, sid)[-1]) == "completed"
    text = agent.log_since(mark)
    assert "Failed to parse JSONRPC message" in text  # the SDK did see the lines
    assert SECRET not in text and "Traceback" not in text and "\x1b" not in text
    assert len(text.splitlines()) < 60, text[-3000:]


def _peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


async def test_a_line_that_never_ends_is_cut_off_and_memory_stays_bounded(tmp_path):
    client = RecordingClient()
    env = {**FAST, "ACP_PROGRESS_MCP_MAX_LINE": str(2 << 20)}
    async with spawn_agent(client, env=env) as (conn, process, _log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit()])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "warm"}')
        before = _peak_rss_kib(process.pid)
        response = await prompt_text(conn, sid, 'call endless {"mb": 60}')
        assert response.stop_reason == "end_turn"
        card = tool_cards(client, sid)[-1]
        said = "larger than the 2 MiB limit (ACP_PROGRESS_MCP_MAX_LINE); it was cut off; its connection was"
        assert final_status(card) == "failed" and f"{said} closed" in text_of(card[-1])
        assert _peak_rss_kib(process.pid) - before < 30 * 1024  # never near the 60 MB it was sent
        await prompt_text(conn, sid, 'call peek {"text": "again"}')  # started again, this turn
        assert final_status(tool_cards(client, sid)[-1]) == "completed"
