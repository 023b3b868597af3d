"""A real ACP client lists this agent's stored sessions: the npm ``acpx`` CLI.

``acpx --agent "<python> -m acp_adapter" sessions list`` starts the agent, initialises it, sends
``session/list`` (``--filter-cwd`` sets its ``cwd`` filter) and prints what it got. The sessions
were stored by an earlier agent (a ProgressAgent in the test's process: what acpx reads is the
store it wrote) in the same ``ACP_PROGRESS_STATE_DIR``. acpx keeps its own records under
``~/.acpx``, so ``HOME`` is a temporary directory.

acpx 0.19.1 declares ``engines: node >= 22.13``; its CLI runs on Node 20 too, which is what this
machine has.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.helpers.acp_agent import RecordingClient, agent_env, prompt_text
from tests.helpers.npm_client import CLIENT_DIR, node_with_packages
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.shared_servers import cli_in_process

pytestmark = pytest.mark.e2e

ACPX = CLIENT_DIR / "node_modules" / ".bin" / "acpx"


@pytest.fixture(scope="module")
def acpx() -> Path:
    node_with_packages("acpx")
    return ACPX


def _acpx(acpx: Path, env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    agent = f"{shlex.quote(sys.executable)} -m acp_adapter"
    return subprocess.run(
        [str(acpx), "--agent", agent, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.anyio
async def test_acpx_lists_the_sessions_an_earlier_agent_process_stored(acpx: Path, tmp_path: Path) -> None:
    ws, elsewhere, home = tmp_path / "ws", tmp_path / "elsewhere", tmp_path / "home"
    for folder in (ws, elsewhere, home):
        folder.mkdir()
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    async with served_inprocess(RecordingClient(), progress_agent(state_dir=str(tmp_path / "state"))) as conn:
        here = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await prompt_text(conn, here, "what is 2+2")
        there = (await conn.new_session(cwd=str(elsewhere), mcp_servers=[])).session_id
        await prompt_text(conn, there, "what is 3+3")

    acpx_env = {**env, "HOME": str(home), "PATH": os.environ["PATH"]}
    listed = await anyio.to_thread.run_sync(lambda: _acpx(acpx, acpx_env, ws, "sessions", "list"))
    assert listed.returncode == 0, listed.stderr
    assert here in listed.stdout and "what is 2+2" in listed.stdout, listed.stdout

    filtered = await anyio.to_thread.run_sync(
        lambda: _acpx(acpx, acpx_env, ws, "--format", "json", "sessions", "list", "--filter-cwd", str(ws))
    )
    assert filtered.returncode == 0, filtered.stderr
    answer = json.loads(filtered.stdout)
    assert answer["source"] == "agent"  # from the agent's session/list, not acpx's own records
    assert [(s["sessionId"], s["title"], s["cwd"]) for s in answer["sessions"]] == [
        (here, "what is 2+2", str(ws))
    ]
    assert answer["sessions"][0]["updatedAt"].endswith("Z")


@pytest.mark.anyio
async def test_acpx_switches_the_mode_prompts_through_resume_and_closes_the_session(
    acpx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """acpx calls session/set_config_option (``set mode auto``), continues a session in a new agent
    process with session/resume, and closes it with session/close, as the agent advertises them."""
    ws, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for folder in (ws, home):
        folder.mkdir()
    env = {
        **agent_env(ACP_PROGRESS_STATE_DIR=str(state), ACP_PROGRESS_EMBEDDED_DELAY="0.05"),
        "HOME": str(home),
        "PATH": os.environ["PATH"],
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = _acpx(acpx, env, ws, "--ttl", "0.1", *args)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    sid = (await anyio.to_thread.run_sync(lambda: run("sessions", "new", "--name", "work"))).stdout.split()[
        -1
    ]
    await anyio.to_thread.run_sync(lambda: run("set", "-s", "work", "mode", "auto"))
    # --deny-all: only the session's auto mode lets the command run, nobody is asked (--no-terminal:
    # the command runs in the agent, as acpx denies its own terminal under --deny-all)
    said = await anyio.to_thread.run_sync(
        lambda: run("--deny-all", "--no-terminal", "prompt", "-s", "work", "run echo via-acpx")
    )
    assert "via-acpx" in said.stdout, said.stdout
    await anyio.to_thread.run_sync(lambda: run("sessions", "close", "work"))

    # what acpx made the agent record, read by ``acp-progress audit`` run in this process (a
    # process of its own proves nothing about the record)
    with monkeypatch.context() as patched, cli_in_process() as main:
        patched.setenv("ACP_PROGRESS_STATE_DIR", str(state))
        capsys.readouterr()
        assert main(["audit", "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (row["sessionId"], row["allowed"], row["rule"]) == (sid, True, "mode auto")
    # closed, still stored
    async with served_inprocess(RecordingClient(), progress_agent(state_dir=str(state))) as conn:
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [sid]
        loaded = await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        assert loaded.modes.current_mode_id == "auto"
