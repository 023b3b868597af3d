"""examples/embed_own_agent.py as a person runs it: the README command from another directory, and
heartbeats at the configured interval (30 s by default), not at every poll of its loop.

The heartbeats are the example agent's own decision from its environment: it is built as its
process would build it (:mod:`tests.helpers.example_agent`) and served by the SDK's agent side in
this process."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ToolCallProgress

from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, prompt_text, sdk_served
from tests.helpers.example_agent import example_agent


def _readme_command() -> list[str]:
    section = (
        (ROOT / "docs" / "embedding.md")
        .read_text()
        .split("## Embedding the callbacks in your own agent", 1)[1]
    )
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


@pytest.mark.e2e
def test_the_readme_command_runs_the_example_from_another_directory(tmp_path: Path) -> None:
    in_clone, from_anywhere = _readme_command()
    assert "acp-progress watch" in from_anywhere
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    script = f"set -e\ncd {ROOT}\n{in_clone}\ncd {elsewhere}\n{from_anywhere}\n"
    bindir = str(Path(sys.executable).parent)  # the venv's python and acp-progress
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # nothing but the installed package
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "ACP_PROGRESS_CONFIG_DIR": str(tmp_path),  # an empty settings directory
        "ACP_PROGRESS_HEARTBEAT_INTERVAL": "",
    }
    done = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=elsewhere,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "You said: hello there" in done.stdout
    # the default interval is 30 s: a 0.3 s think shows no "Still thinking…" line at all
    assert "Still thinking" not in done.stdout


def _agent(monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    """The example's agent built with the test settings and ``env`` (its heartbeat settings are read
    as its module runs, so agents built with different settings can serve side by side)."""
    base = {k: v for k, v in agent_env().items() if k != "ACP_PROGRESS_HEARTBEAT_INTERVAL"}
    with monkeypatch.context() as patched:
        return example_agent(patched, {**base, **env})


async def _heartbeats(agent: Any) -> int:
    client = RecordingClient()
    async with sdk_served(agent, client) as conn:
        session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "hello there")
    assert response.stop_reason == "end_turn"
    return sum(
        1
        for r in client.updates
        if isinstance(r.update, ToolCallProgress) and r.update.status == "in_progress"
    )


@pytest.mark.anyio
async def test_the_example_heartbeats_at_the_configured_interval_not_every_poll(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    disabled = {"ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.05", "ACP_PROGRESS_HEARTBEAT_DISABLED": "1"}
    default, short, off = await asyncio.gather(  # three agents, each thinking 0.3 s, at once
        _heartbeats(_agent(monkeypatch)),
        _heartbeats(_agent(monkeypatch, ACP_PROGRESS_HEARTBEAT_INTERVAL="0.12")),
        _heartbeats(_agent(monkeypatch, **disabled)),
    )
    # default: 30 s, so a 0.3 s think has none (it had one every 0.1 s poll: 50 lines in 5 s)
    assert default == 0
    # a short interval from the environment: about think time / interval of them
    assert 1 <= short <= 2
    # disabled: none, whatever the interval
    assert off == 0
