"""Every command survives a reader that went away (``acp-progress audit | head -1``): no
``BrokenPipeError`` traceback, no ``Exception ignored`` at exit, a quiet exit.

Each command runs as a real process whose stdout is a pipe with its read end already closed, so
its first write fails: the most hostile timing ``head`` can give, every time. A command that
talks to this project's agent (``watch``) runs it inside its process
(:mod:`tests.helpers.cli_agent_inside`): the agent's own process writes nothing to that stdout."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_adapter.store import open_store
from acp_adapter.store.base import PermissionDecision
from tests.helpers.acp_agent import ROOT, agent_env

pytestmark = pytest.mark.e2e

CLI = [sys.executable, "-m", "acp_adapter.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir(mode=0o700, exist_ok=True)
    return {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_SUMMARY="off"),
        "ACP_PROGRESS_CONFIG_DIR": str(config),
        "ACP_PROGRESS_STATE_DIR": str(tmp_path / "state"),
    }


def _with_closed_stdout(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write
    try:
        return subprocess.run(
            argv, stdout=write_end, stderr=subprocess.PIPE, env=env, cwd=cwd, text=True, timeout=120
        )
    finally:
        os.close(write_end)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory with permission decisions in its store and a console bridge, shared by
    the module's commands: each only reads it (``watch`` and ``run`` add a session, which no
    command's assertion depends on), and building it costs a CLI process."""
    tmp_path = tmp_path_factory.mktemp("closed-stdout")
    env = _env(tmp_path)
    store = open_store(tmp_path / "state", retention_days=0)
    try:
        for i in range(300):
            store.record_permission(
                PermissionDecision(
                    session_id="s1",
                    tool_call_id=f"c{i}",
                    title=f"Running echo {i}",
                    allowed=True,
                    at=time.time(),
                    decided_by="auto",
                    surface="watch",
                )
            )
    finally:
        store.close()
    from tests.helpers.cli_inside import run_cli_inside

    made = run_cli_inside(
        ["bridge", "create", "demo", "--platform", "console", "--cwd", str(tmp_path)], cwd=tmp_path, env=env
    )  # set-up only: its process is not what the module is about
    assert made.returncode == 0, made.stderr
    return tmp_path


COMMANDS = [
    ["audit"],
    ["audit", "--json"],
    ["bridge", "show", "demo"],
    ["bridge", "list"],
    ["sessions"],
    ["sessions", "--json"],
    ["config"],
    ["config", "--json"],
    ["descriptor", "--help"],
    ["--help"],
    ["--version"],
    ["watch", "--help"],
    ["watch", "list the files"],
    ["run", "list the files"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_closed_stdout_ends_a_command_quietly(state: Path, command: list[str]) -> None:
    from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE

    talks_to_the_agent = command[0] == "watch" and "--help" not in command
    cli = [sys.executable, "-m", CLI_AGENT_INSIDE] if talks_to_the_agent else CLI
    done = _with_closed_stdout([*cli, *command], _env(state), ROOT)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr[-3000:]
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 130), (done.returncode, done.stderr[-3000:])
    if command[0] == "config":  # it writes nothing else, so not a word on stderr and a plain exit
        assert done.returncode == 0 and done.stderr == "", (done.returncode, done.stderr[-3000:])
