"""The client driver against real agent processes (scripted foreign ones: their crashes, garbage,
stalls, refusals and process groups are the point), and against this project's agent served in
this process where the driver's turns and sessions are the point (its process proves nothing
there: :func:`tests.helpers.cli_agent_inside.agent_inside`)."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from acp.schema import AgentMessageChunk, ToolCallProgress, ToolCallStart

from acp_adapter.client.driver import (
    AgentCrashed,
    AgentDriver,
    AgentError,
    AgentStartError,
    PermissionRequest,
    TurnInProgress,
    allow_all,
    parse_agent_command,
    permission_response,
)
from tests.agents.scripted_agent import ScriptedAgent
from tests.helpers.acp_agent import ROOT, agent_env, prompt_text
from tests.helpers.cli_agent_inside import agent_inside
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.piped_agent import piped_agent
from tests.helpers.shared_agent import agent_on

pytestmark = pytest.mark.anyio

SCRIPTED = str(ROOT / "tests" / "agents" / "scripted_agent.py")


def scripted(mode: str, *args: str) -> list[str]:
    return [sys.executable, SCRIPTED, mode, *args]


def scripted_agent(mode: str, arg: str | None = None) -> Callable[[], ScriptedAgent]:
    """What ``scripted(mode, arg)`` runs, served in this process behind a pipe process
    (:func:`~tests.helpers.piped_agent.piped_agent`), where the driver's turns are the point and the
    agent's process proves nothing (its crash and its stdout garbage keep their own process)."""
    return lambda: ScriptedAgent(mode, arg)


def answer_of(updates: list[object]) -> str:
    return "".join(u.content.text for u in updates if isinstance(u, AgentMessageChunk))  # type: ignore[attr-defined]


async def test_a_turn_streams_typed_updates_in_order_then_the_response(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("# TODO: one\n")
    with agent_inside():
        driver = AgentDriver(env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"), permission_policy=allow_all)
    async with driver:
        assert driver.initialize_response is not None
        assert driver.initialize_response.agent_info.name == "acp-progress"
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "search for TODO")
        updates = [u async for u in turn]
    assert turn.response is not None and turn.response.stop_reason == "end_turn"
    starts = [u for u in updates if isinstance(u, ToolCallStart)]
    assert starts[0].kind == "think"
    assert any(s.kind == "search" for s in starts)
    # every card that opened was closed before the response, in arrival order
    closed = {u.tool_call_id for u in updates if isinstance(u, ToolCallProgress) and u.status == "completed"}
    assert {s.tool_call_id for s in starts} <= closed
    assert "TODO" in answer_of(updates)


@pytest.mark.e2e
async def test_a_second_prompt_on_a_busy_session_is_refused_and_the_first_finishes(tmp_path: Path) -> None:
    async with piped_agent(scripted_agent("silent", "0.3")) as argv, AgentDriver(argv) as driver:
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "one")
        with pytest.raises(TurnInProgress):
            driver.prompt(session_id, "two")
        response = await turn.wait()
        assert response.stop_reason == "end_turn"
        again = await driver.prompt(session_id, "three").wait()  # free again after the turn
        assert again.stop_reason == "end_turn"


@pytest.mark.e2e
async def test_cancel_ends_the_turn_cancelled(tmp_path: Path) -> None:
    async with piped_agent(scripted_agent("silent", "30")) as argv, AgentDriver(argv) as driver:
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "wait")
        started = time.monotonic()
        await turn.cancel()
        response = await turn.wait()
    assert response.stop_reason == "cancelled"
    assert time.monotonic() - started < 5


@pytest.mark.e2e
async def test_permission_policy_answers_and_marks_automatic_decisions(tmp_path: Path) -> None:
    seen: list[PermissionRequest] = []

    async def person_says_yes(request: PermissionRequest):  # type: ignore[no-untyped-def]
        seen.append(request)
        return permission_response(request, True)

    (Path("/tmp") / "relay-test.txt").write_text("hello file")
    async with (
        piped_agent(scripted_agent("fs")) as argv,
        AgentDriver(argv, permission_policy=person_says_yes) as driver,
    ):
        session_id = await driver.new_session(str(tmp_path))
        updates = [u async for u in driver.prompt(session_id, "go")]
    assert seen and seen[0].title == "Running rm -rf build"
    # the driver has no fs capability, so the agent's fs call fails and it still reports the permission
    assert "read='error -32601'" in answer_of(updates)
    assert "permission=yes" in answer_of(updates)
    assert permission_response(seen[0], False, automatic=True).field_meta == {
        "acpProgress": {"automatic": True}
    }
    assert permission_response(seen[0], False).outcome.option_id == "no"  # type: ignore[union-attr]


@pytest.mark.e2e
async def test_an_agent_dying_mid_turn_raises_a_clear_error_with_its_stderr(tmp_path: Path) -> None:
    async with AgentDriver(scripted("crash")) as driver:
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "go")
        got: list[object] = []
        with pytest.raises(AgentCrashed) as excinfo:
            async for update in turn:
                got.append(update)
    assert "about to crash" in answer_of(got)
    message = str(excinfo.value)
    assert "exited with code 3" in message and "crashing on purpose" in message
    assert "\n" not in message


@pytest.mark.e2e
async def test_garbage_on_stdout_is_skipped_and_the_turn_goes_on(tmp_path: Path) -> None:
    async with AgentDriver(scripted("garbage")) as driver:
        session_id = await driver.new_session(str(tmp_path))
        updates = [u async for u in driver.prompt(session_id, "go")]
    assert answer_of(updates) == "answer after garbage"


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("definitely-not-a-command-xyz", "command not found"),
        ("cat", "is not an ACP agent"),
        ([sys.executable, "-c", "print(123)"], "non-ACP output on stdout: '123'"),
        (
            [sys.executable, "-c", "import sys; sys.stderr.write('No module named openai\\n'); sys.exit(3)"],
            "exited with code 3 before answering initialize; its stderr ends: No module named openai",
        ),
        ("python -c 'unbalanced", "cannot parse the agent command"),
        ("", "the agent command is empty"),
    ],
)
async def test_start_failures_are_one_line_errors(command: object, expected: str) -> None:
    with pytest.raises(AgentStartError) as excinfo:
        async with AgentDriver(command, init_timeout=10):  # type: ignore[arg-type]
            pass
    assert expected in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


@pytest.mark.e2e
async def test_no_answer_to_initialize_times_out() -> None:
    started = time.monotonic()
    # an agent that reads everything and never answers (it ends on the end of its input, so the
    # close after the time-out needs no signal: what is timed is the initialize alone)
    with pytest.raises(AgentStartError, match=r"did not answer initialize within 0\.5s"):
        async with AgentDriver(["sh", "-c", "cat > /dev/null"], init_timeout=0.5):
            pass
    assert time.monotonic() - started < 5


@pytest.mark.e2e
async def test_close_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    # an "agent" (a shell: its child is there at once) that starts a child ignoring SIGTERM, then
    # never answers
    script = f"sh -c 'trap \"\" TERM; sleep 300' & echo $! > {shlex.quote(str(marker))}; sleep 300"
    started = time.monotonic()
    with pytest.raises(AgentStartError):
        async with AgentDriver(["sh", "-c", script], init_timeout=0.3, close_grace=1.0):
            pass
    # 0.3 s for initialize, 0.5 s (half the grace) for the agent to exit on its closed stdin, then
    # SIGTERM ends the agent at once: the close does not wait out the 1 s grace for the child still
    # holding the agent's stdout and stderr (1.8 s in all), it kills it (0.8 s: half a grace short)
    took = time.monotonic() - started
    pid = int(marker.read_text())
    assert await asyncio.to_thread(_dies_within, pid, 3.0)
    assert took < 1.3, f"the close took {took - 0.3:.2f} s after the initialize time-out"


@pytest.mark.e2e
async def test_a_process_outside_the_group_holding_stderr_does_not_hold_the_close(tmp_path: Path) -> None:
    """An agent that exits on its closed stdin has started a process in a session of its own (out
    of reach of the group's signals) that keeps the agent's stderr open: the close returns once
    the agent has exited, instead of waiting for an end of stderr that never comes."""
    marker = tmp_path / "holder.pid"
    script = (
        "import subprocess, sys; "
        "p = subprocess.Popen(['sleep', '300'], start_new_session=True); "
        f"open({str(marker)!r}, 'w').write(str(p.pid)); sys.stdin.buffer.read()"
    )
    started = time.monotonic()
    try:
        with pytest.raises(AgentStartError):
            async with AgentDriver([sys.executable, "-c", script], init_timeout=0.3):
                pass
        took = time.monotonic() - started
    finally:
        if marker.exists():
            os.kill(int(marker.read_text()), signal.SIGKILL)
    # the close's first wait alone (for the agent's exit on its closed stdin) is 1 s, half the grace
    assert took < 1.3, f"the close took {took - 0.3:.2f} s after the initialize time-out"


def _dies_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_parse_agent_command_defaults_to_this_agent() -> None:
    assert parse_agent_command(None)[1:] == ["-m", "acp_adapter"]
    assert parse_agent_command("npx @zed-industries/claude-code-acp --x 'a b'") == [
        "npx",
        "@zed-industries/claude-code-acp",
        "--x",
        "a b",
    ]


@pytest.mark.e2e
async def test_a_slow_consumer_bounds_the_turn_queue_and_loses_nothing(tmp_path: Path) -> None:
    """``Turn``'s queue stays bounded behind a consumer that does not keep up (every input is
    bounded)."""
    from acp_adapter.protocol import StreamLimits

    limits = StreamLimits(max_queued_updates=5)
    async with (
        piped_agent(scripted_agent("burst", "300")) as argv,
        AgentDriver(argv, env=agent_env(), limits=limits) as driver,
    ):
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "go")
        # nobody consumes: the driver must stop reading the agent once its queue is full; a queue
        # that fills to the bound is looked at again 0.3 s later (the agent sends its 300 at once)
        for _ in range(250):  # 5 s at most
            if turn._queue.qsize() >= limits.max_queued_updates:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        held = turn._queue.qsize()
        updates = [update async for update in turn]
    assert held <= limits.max_queued_updates + 1, f"{held} updates queued behind a stalled consumer"
    progress = [u for u in updates if isinstance(u, ToolCallProgress)]
    assert [u.raw_output["i"] for u in progress if u.raw_output] == list(range(300))  # in order, none lost
    assert answer_of(updates) == "burst done" and turn.response is not None


@pytest.mark.e2e
def test_an_unwritable_agent_log_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess

    missing = tmp_path / "no-such-dir" / "agent.log"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "watch", "--agent-log", str(missing), "hello"],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, **agent_env()},
        cwd=str(tmp_path),
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"acp-progress watch: cannot write the agent log {missing}: No such file or directory"
    ]


async def test_the_driver_lists_and_loads_sessions_and_the_replay_goes_to_its_callback(
    tmp_path: Path,
) -> None:
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    # the stored session: written by the agent alone (in this process, as any client of it would)
    async with agent_on(tmp_path / "state") as (conn, _client):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
    with agent_inside():
        driver = AgentDriver(env=env)
    async with driver:
        assert driver.sessions.can_load and driver.sessions.can_list
        listed = await driver.list_sessions(str(tmp_path))
        assert [s.session_id for s in listed] == [sid] and listed[0].title == "what is 1+1"
        replayed: list[object] = []
        await driver.load_session(sid, str(tmp_path), on_replay=replayed.append)
        assert "2" in answer_of(replayed)
        later = [u async for u in driver.prompt(sid, "what is 2+2")]
        assert "4" in answer_of(later) and not any(u in replayed for u in later)
        with pytest.raises(AgentError, match="could not load session sess_nope"):
            await driver.load_session("sess_nope", str(tmp_path))


@pytest.mark.e2e
async def test_an_agent_without_load_or_list_is_told_apart(tmp_path: Path) -> None:
    async with piped_agent(scripted_agent("stream")) as argv, AgentDriver(argv, env=agent_env()) as driver:
        assert not driver.sessions.can_load
        with pytest.raises(AgentError, match="cannot load sessions"):
            await driver.load_session("s", str(tmp_path))
        with pytest.raises(AgentError, match="cannot list sessions"):
            await driver.list_sessions()


REFUSING = str(ROOT / "tests" / "agents" / "refusing_agent.py")


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("nan", "NaN is not JSON"),
        ("deep", "nested deeper than 256 levels"),
        ("long", "message too long"),
    ],
)
async def test_a_prompt_answer_the_line_reader_refuses_fails_the_turn_instead_of_hanging(
    tmp_path: Path, mode: str, reason: str
) -> None:
    """A refused answer ends the prompt with an error; logging it alone would leave the prompt
    waiting forever."""
    from acp_adapter.client.driver import PromptRefused
    from acp_adapter.protocol import StreamLimits

    limits = StreamLimits(max_line_bytes=100_000)
    env = {"ACP_PROGRESS_MAX_LINE_BYTES": str(limits.max_line_bytes)}
    async with AgentDriver([sys.executable, REFUSING, mode], env=env, limits=limits) as driver:
        session_id = await driver.new_session(str(tmp_path))
        turn = driver.prompt(session_id, "go")
        with pytest.raises(PromptRefused) as excinfo:
            await asyncio.wait_for(turn.wait(), 10)
    refused = excinfo.value
    assert "refused by the line reader" in refused.reason
    assert refused.details is not None and reason in refused.details
    assert "\n" not in str(refused)


@pytest.mark.e2e
async def test_initialize_and_session_new_errors_carry_their_details() -> None:
    """The reason in ``data.details`` is shown, not only the message ("Internal error")."""
    with pytest.raises(AgentStartError) as started:
        async with AgentDriver([sys.executable, REFUSING, "init-error"], init_timeout=10):
            pass
    assert "Internal error: ANTHROPIC_API_KEY is not set; export it or pass --model" in str(started.value)
    async with AgentDriver([sys.executable, REFUSING, "new-error"], init_timeout=10) as driver:
        with pytest.raises(AgentError) as opened:
            await driver.new_session("/tmp")
    assert str(opened.value) == (
        "the agent refused to open a session: Internal error: the workspace /nowhere does not exist"
    )


@pytest.mark.e2e
def test_watch_prints_the_details_of_a_session_new_error(tmp_path: Path) -> None:
    """``watch`` runs in this process (what it prints is the point); the refusing agent is spawned."""
    import os

    agent = f"{sys.executable} {REFUSING} new-error"
    proc = run_cli_inside(
        ["watch", "--agent", agent, "hello"], cwd=tmp_path, env={**os.environ, **agent_env()}
    )
    assert proc.returncode != 0
    assert "the workspace /nowhere does not exist" in proc.stderr, proc.stderr


@pytest.mark.e2e
async def test_an_agent_that_exits_before_initialize_is_reported_while_a_child_holds_its_pipes() -> None:
    """The exit is the agent's own status, not the end of its pipes: a child it left behind keeps
    stdout and stderr open, and the start must still fail at once, saying the agent exited."""
    leaves_a_child = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "sys.stderr.write('leaving a child\\n'); sys.stderr.flush(); time.sleep(0.2); sys.exit(3)\n"
    )
    started = time.monotonic()
    with pytest.raises(AgentStartError) as excinfo:
        async with AgentDriver([sys.executable, "-c", leaves_a_child], init_timeout=10):
            pass
    elapsed = time.monotonic() - started
    assert "exited with code 3 before answering initialize" in str(excinfo.value)
    assert elapsed < 5, f"the failed start took {elapsed:.1f} s (the initialize time-out is 10 s)"
