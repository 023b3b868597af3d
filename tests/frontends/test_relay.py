"""``acp-progress relay`` between a real editor-side SDK client and real agent processes. What the
relay forwards and injects is tested with the relay's code in this process on a socket
(:func:`tests.helpers.relay_inside.relay_inside`, the wrapped agent spawned as the relay spawns it:
the scripted agent's code served in this process behind a process that pipes its bytes);
its crash handling, its stderr, its exit and the editor hanging up use a relay process."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    FileSystemCapabilities,
    ReadTextFileResponse,
    ToolCallProgress,
    ToolCallStart,
)

from acp_adapter.config import Settings
from tests.agents.scripted_agent import ScriptedAgent
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, final_status, prompt_text, spawn_agent
from tests.helpers.piped_agent import piped_agent_thread
from tests.helpers.relay_inside import injected, relay_argv, relay_inside
from tests.helpers.shared_agent import progress_agent, served_inprocess

pytestmark = pytest.mark.anyio

SCRIPTED = [sys.executable, str(ROOT / "tests" / "agents" / "scripted_agent.py")]


def scripted(mode: str, arg: str | None = None) -> Callable[[], ScriptedAgent]:
    """The scripted agent ``SCRIPTED MODE ARG`` would run, for :func:`relay_inside` to serve behind
    its pipe process (what the relay forwards and injects is the point, not the agent's process)."""
    return lambda: ScriptedAgent(mode, arg)


def order_of(client: RecordingClient) -> list[str]:
    """A compact view of the update stream: 'think:start', 'think:completed', 'msg' …"""
    out = []
    for r in client.updates:
        u = r.update
        if isinstance(u, ToolCallStart):
            out.append(f"{u.kind}:start")
        elif isinstance(u, ToolCallProgress):
            out.append(f"card:{u.status}")
        elif isinstance(u, AgentMessageChunk):
            out.append("msg")
    return out


@pytest.mark.e2e
async def test_a_silent_agent_gets_a_think_card_that_beats_and_closes_before_its_first_update(tmp_path):
    client = RecordingClient()
    async with relay_inside(client, argv=relay_argv(heartbeat="0.05"), agent=scripted("silent", "1")) as (
        conn,
        _relay,
    ):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sent = time.monotonic()
        response = await prompt_text(conn, session.session_id, "think hard")
    assert response.stop_reason == "end_turn"
    cards = injected(client)
    assert len(cards) == 1
    ((card_id, ups),) = cards.items()
    start = next(r for r in client.updates if getattr(r.update, "tool_call_id", None) == card_id)
    assert start.at - sent < 0.3 + 0.2, "the card must open within think-after + 0.2 s"
    assert ups[0].kind == "think" and ups[0].status == "in_progress" and ups[0].title == "Thinking..."
    beats = [u for u in ups[1:] if u.status == "in_progress"]
    assert len(beats) >= 5, f"heartbeats every 0.05 s over ~0.7 s, got {len(beats)}"
    assert final_status(ups) == "completed"
    assert order_of(client)[-2:] == ["card:completed", "msg"], "closed just before the agent's first update"


@pytest.mark.e2e
async def test_an_agent_that_streams_at_once_gets_nothing_injected(tmp_path):
    client = RecordingClient()
    async with relay_inside(client, argv=relay_argv(), agent=scripted("stream")) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "go")
        await asyncio.sleep(0.5)  # nothing may arrive after the response either
    assert response.stop_reason == "end_turn"
    assert injected(client) == {}
    assert client.answer() == "streamed right away"


@pytest.mark.e2e
async def test_each_silent_gap_within_a_turn_gets_its_own_card(tmp_path):
    client = RecordingClient()
    async with relay_inside(client, argv=relay_argv(think_after="0.15"), agent=scripted("gaps", "0.5")) as (
        conn,
        _relay,
    ):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await prompt_text(conn, session.session_id, "go")
    cards = injected(client)
    assert len(cards) == 2
    assert all(final_status(ups) == "completed" for ups in cards.values())
    stream = [x for x in order_of(client) if x != "card:in_progress"]
    assert stream == ["msg", "think:start", "card:completed", "msg", "think:start", "card:completed", "msg"]


class FsClient(RecordingClient):
    """An editor that serves fs/read_text_file and records extension notifications."""

    def __init__(self) -> None:
        super().__init__(permission="allow")
        self.reads: list[str] = []
        self.ext: list[tuple[str, dict[str, Any]]] = []

    async def read_text_file(self, path: str, session_id: str, **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        return ReadTextFileResponse(content="contents from the editor")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext.append((method, params))


@pytest.mark.e2e
async def test_client_methods_of_the_wrapped_agent_reach_the_editor_and_back(tmp_path):
    from acp import PROTOCOL_VERSION
    from acp.schema import Implementation

    client = FsClient()
    async with relay_inside(client, argv=relay_argv(), agent=scripted("fs")) as (conn, _relay):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="pytest", version="0"),
        )
        assert init.agent_info.name == "scripted"
        assert init.field_meta == {"scripted": {"mode": "fs"}}, "_meta passes unchanged"
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "go")
        await asyncio.sleep(0.1)
    assert response.stop_reason == "end_turn"
    assert client.reads == ["/tmp/relay-test.txt"]
    assert len(client.permission_requests) == 1
    assert client.answer() == "read='contents from the editor' permission=yes"
    assert client.ext == [("scripted/hello", {"from": "agent"})]
    assert injected(client) == {}, "waiting on the person is not thinking"


@pytest.mark.e2e
async def test_cancel_mid_silence_closes_the_injected_card_and_is_forwarded(tmp_path):
    opened = asyncio.Event()
    client = RecordingClient(
        on_update=lambda r: opened.set() if isinstance(r.update, ToolCallStart) else None
    )
    async with relay_inside(client, argv=relay_argv(), agent=scripted("silent", "30")) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        task = asyncio.ensure_future(prompt_text(conn, session.session_id, "wait"))
        await asyncio.wait_for(opened.wait(), 5)
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(task, 5)
        count = len(client.updates)
        await asyncio.sleep(0.4)  # longer than a heartbeat: nothing after the end
        assert len(client.updates) == count
    assert response.stop_reason == "cancelled"
    (ups,) = injected(client).values()
    assert final_status(ups) == "failed"


@pytest.mark.e2e
async def test_a_crash_mid_turn_fails_the_card_errors_the_prompt_and_stops_the_relay(tmp_path):
    client = RecordingClient()
    async with spawn_agent(client, argv=relay_argv(*SCRIPTED, "crash", think_after="0.01")) as (
        conn,
        process,
        log,
    ):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError) as excinfo:
            await prompt_text(conn, session.session_id, "go")
        code = await asyncio.wait_for(process.wait(), 10)
    assert "the wrapped agent exited with code 3" in str(excinfo.value.data)
    assert code == 1
    cards = injected(client)
    assert cards and all(final_status(ups) in ("completed", "failed") for ups in cards.values())
    assert final_status(list(cards.values())[-1]) == "failed"
    stderr = Path(log).read_text()
    assert "crashing on purpose" in stderr and "the wrapped agent exited with code 3" in stderr


@pytest.mark.e2e
async def test_garbage_from_the_agent_is_dropped_and_the_editor_stream_stays_valid(tmp_path):
    client = RecordingClient()
    async with spawn_agent(client, argv=relay_argv(*SCRIPTED, "garbage")) as (conn, _p, log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "go")
    assert response.stop_reason == "end_turn"
    assert client.answer() == "answer after garbage"
    assert "dropped a non-JSON-RPC line from the agent: this is not json" in Path(log).read_text()


def _normalised(client: RecordingClient) -> list[tuple[Any, ...]]:
    """The stream an editor renders, minus think-card heartbeats and tool progress, and with a
    tool's consecutive in-progress updates as one (how many of these a run sends depends on timing)."""
    think = set(client.think_cards())
    out: list[tuple[Any, ...]] = []
    for r in client.updates:
        u = r.update
        if isinstance(u, ToolCallStart):
            out.append(("start", u.kind, u.title, u.status))
        elif isinstance(u, ToolCallProgress):
            if (u.tool_call_id in think and u.status == "in_progress") or u.status is None:
                continue  # heartbeats, and progress (replaced while queued: its count is timing)
            entry = ("update", u.status, u.tool_call_id in think)
            if entry == ("update", "in_progress", False) and out and out[-1] == entry:
                continue
            out.append(entry)
        elif isinstance(u, AgentMessageChunk):
            out.append(("msg",))
        else:
            out.append((type(u).__name__,))
    return out


@pytest.mark.e2e
async def test_this_projects_agent_looks_the_same_through_the_relay(tmp_path):
    (tmp_path / "notes.py").write_text("# TODO: relay\n")
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    prompt = "search for TODO and run ls"
    direct = RecordingClient(permission="allow")  # the reference: the agent, in this process
    async with served_inprocess(direct, progress_agent(Settings.from_env(env))) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        direct_response = await prompt_text(conn, session.session_id, prompt)
    relayed = RecordingClient(permission="allow")
    # think-after well above the agent's 0.1 s heartbeat: a loaded machine must not make a gap
    # the same agent behind the process the relay spawns (what the relay passes is the point)
    argv = relay_argv(think_after="2")
    this_agent = lambda: progress_agent(Settings.from_env(env))  # noqa: E731
    async with relay_inside(relayed, env=env, argv=argv, agent=this_agent) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        relayed_response = await prompt_text(conn, session.session_id, prompt)
    assert relayed_response.stop_reason == direct_response.stop_reason == "end_turn"
    assert injected(relayed) == {}
    assert _normalised(relayed) == _normalised(direct)
    assert relayed.answer() == direct.answer()
    assert [p.title for p in relayed.permission_requests] == [p.title for p in direct.permission_requests]
    assert len(relayed.permission_requests) == 1


@pytest.mark.e2e
async def test_no_think_forwards_only(tmp_path):
    client = RecordingClient()
    argv = relay_argv(think_after="0.15", extra=("--no-think",))
    async with relay_inside(client, argv=argv, agent=scripted("silent", "0.4")) as (conn, _relay):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        await prompt_text(conn, session.session_id, "go")
    assert injected(client) == {}
    assert client.answer() == "done after silence"


def test_relay_without_a_command_is_a_usage_error(capsys):
    from acp_adapter.cli import main

    with pytest.raises(SystemExit) as excinfo:
        main(["relay"])
    assert excinfo.value.code == 2
    assert "give the agent to wrap after --" in capsys.readouterr().err


def test_the_relays_stop_grace_comes_from_its_setting() -> None:
    from acp_adapter.cli import build_parser
    from acp_adapter.cli.relay import relay_options

    words = ["relay", "--", "some-agent"]
    chosen = relay_options(build_parser(words).parse_args(words), Settings(relay_stop_grace=0.25))
    assert not isinstance(chosen, int)
    assert chosen[1].stop_grace == 0.25
    default = relay_options(build_parser(words).parse_args(words), Settings())
    assert not isinstance(default, int) and default[1].stop_grace == 2.0


@pytest.mark.e2e
def test_relay_stdout_is_protocol_only_and_unknown_commands_fail_clearly(tmp_path):
    import subprocess

    env = {**os.environ, **agent_env()}
    proc = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "relay", "--", "no-such-agent-xyz"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=30,
        input="",
    )
    assert proc.returncode == 127
    assert proc.stdout == ""
    assert "cannot start the agent 'no-such-agent-xyz'" in proc.stderr


@pytest.mark.e2e
def test_the_relay_exits_promptly_when_the_editor_hangs_up(tmp_path):
    import subprocess

    env = {**os.environ, **agent_env()}
    # the scripted agent behind the process the relay spawns (the relay's process is the point)
    with piped_agent_thread(scripted("silent", "60")) as agent:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "acp_adapter.cli", "relay", "--", *agent],
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=30,
            input=b"",
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    # the agent would sleep 60 s: a generous bound (two process start-ups on a loaded machine)
    assert time.monotonic() - started < 15
