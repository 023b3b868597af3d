"""A command that backgrounds a job does not leave it running after the agent exits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, prompt_text, spawn_agent

pytestmark = pytest.mark.e2e

PROMPT = "run `tail -f /dev/null & echo $! > job.pid`"
#: the job holds the command's output pipe, so the command's answer waits this long for its end
#: (the setting's default, 2 s, waited out by every such prompt, proves nothing here)
QUICK_OUTPUT = {"ACP_PROGRESS_COMMAND_OUTPUT_WAIT": "0.1"}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.anyio
async def test_serve_kills_background_jobs_when_it_shuts_down(tmp_path):
    client = RecordingClient(permission="allow")
    async with spawn_agent(client, env=agent_env(**QUICK_OUTPUT)) as (conn, _process, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, PROMPT)
        assert response.stop_reason == "end_turn"
        pid = int((tmp_path / "job.pid").read_text())
        assert _alive(pid), "the job should run while the agent does"
    try:
        assert _gone_within(pid, 5), "the background job outlived the agent"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


def test_plain_run_kills_background_jobs_when_it_exits(tmp_path):
    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0", **QUICK_OUTPUT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "run_agent.py"), "--yes", "--cwd", str(tmp_path), PROMPT],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    pid = int((tmp_path / "job.pid").read_text())
    try:
        assert _gone_within(pid, 5), "the background job outlived the run"
    finally:
        if _alive(pid):
            os.kill(pid, 9)


# ------------------------------------------------ process groups are forgotten when their command ends


def _run_command(tmp_path: Path, command: str) -> None:
    from acp_adapter.cancel import CancelToken
    from acp_adapter.tooling.builtin import run_command
    from acp_adapter.tooling.calls import ToolCall
    from acp_adapter.tooling.toolbox import ToolContext

    ctx = ToolContext(ToolCall("c", "run_command", {}), cwd=tmp_path, cancel=CancelToken(), report=print)
    run_command({"command": command}, ctx)


def test_a_command_that_leaves_nothing_behind_is_forgotten_at_once(tmp_path):
    from acp_adapter.tooling import builtin as builtin_tools

    builtin_tools.kill_started_processes()
    _run_command(tmp_path, "true")
    assert builtin_tools._GROUPS == {}  # nothing to kill at shutdown, nothing to mistake later


def test_a_recycled_process_group_number_is_never_killed_at_shutdown(tmp_path):
    """A remembered group whose members are all gone may have had its number reused by a stranger."""
    from acp_adapter.tooling import builtin as builtin_tools

    builtin_tools.kill_started_processes()
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        # as if an earlier command's group had this number: same pgid, a member that no longer exists
        builtin_tools._GROUPS[stranger.pid] = frozenset({(stranger.pid, 1)})
        assert builtin_tools.kill_started_processes() == 0
        assert stranger.poll() is None, "a stranger's process group was killed"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_background_job_keeps_its_group_remembered_and_is_killed(tmp_path):
    from acp_adapter.tooling import builtin as builtin_tools

    builtin_tools.kill_started_processes()
    _run_command(tmp_path, "sleep 30 >/dev/null 2>&1 & echo $! > job.pid")
    pid = int((tmp_path / "job.pid").read_text())
    assert _alive(pid)
    assert builtin_tools.kill_started_processes() == 1
    assert _gone_within(pid, 5)


# ------------------------------------------------ a job holding the output pipe holds the answer only so long


def test_a_job_holding_the_output_pipe_delays_the_answer_by_command_output_wait_only(tmp_path):
    """The agent loop hands the setting to run_command: the answer comes after the setting's wait
    (the job never closes the pipe), with the output read before it, not after the default 2 s."""
    from acp_adapter.config import Settings
    from acp_adapter.tooling import builtin as builtin_tools
    from acp_adapter.tooling.calls import ToolCall
    from run_agent import AIAgent

    settings = Settings.from_env({"ACP_PROGRESS_COMMAND_OUTPUT_WAIT": "0.3"}, config_file=False)
    assert settings.command_output_wait == 0.3
    agent = AIAgent(
        settings=settings,
        toolbox=builtin_tools.default_toolbox(tmp_path),
        permission_callback=lambda _call, _tool: True,
    )
    command = "sleep 30 & echo $! > job.pid; echo started"
    began = time.monotonic()
    try:
        answer = agent._run_tool(ToolCall("c", "run_command", {"command": command}))
        took = time.monotonic() - began
    finally:
        builtin_tools.kill_started_processes()
    assert "started" in answer.content  # the output written before the job's wait is kept
    assert 0.3 <= took < 1.5, took  # the setting's wait, not the default 2 s
