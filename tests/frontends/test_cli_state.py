"""An unusable state directory is one warning line for every command, and ``config`` shows where
sessions really go. What a command prints is the point, so each command line runs in the test
process (:func:`tests.helpers.cli_inside.run_cli_inside`, ``watch``'s agent inside it too)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from acp_adapter.cli import _state
from acp_adapter.config import Settings
from acp_adapter.store import DATABASE_NAME, default_state_dir
from tests.helpers.acp_agent import ROOT
from tests.helpers.cli_inside import run_cli_inside


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_CONFIG_DIR": os.environ["ACP_PROGRESS_CONFIG_DIR"],
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "ACP_PROGRESS_EMBEDDED_DELAY": "0",
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        **env,
    }
    return run_cli_inside(args, cwd=os.getcwd(), env=full)


def test_watch_with_an_unusable_state_dir_says_so_in_one_line() -> None:
    """One warning line on stderr, not a word-less rc 0 (the store error in --agent-log only)."""
    done = cli("watch", "--no-animation", "hi", ACP_PROGRESS_STATE_DIR="/proc/nope")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("acp-progress watch: warning: the state directory /proc/nope cannot be used")
    assert "sessions are kept in memory only" in lines[0]


@pytest.mark.parametrize("command", [["sessions"], ["run", "hi"]])
def test_every_command_warns(command: list[str]) -> None:
    done = cli(*command, ACP_PROGRESS_STATE_DIR="/proc/nope")
    assert f"acp-progress {command[0]}: warning: the state directory /proc/nope" in done.stderr


def test_a_state_dir_others_may_write_is_named_with_its_fix(tmp_path: Path) -> None:
    shared = tmp_path / "state"
    shared.mkdir()
    shared.chmod(0o777)
    done = cli("sessions", ACP_PROGRESS_STATE_DIR=str(shared))
    assert f"the state directory {shared} may be written by other users" in done.stderr
    assert f"chmod go-w {shared}" in done.stderr


def test_a_usable_state_dir_is_created_private_and_quiet(tmp_path: Path) -> None:
    where = tmp_path / "a" / "b"
    os.umask(0o000)
    try:
        assert _state.check_state_dir(where) is None
    finally:
        os.umask(0o022)
    assert (where.stat().st_mode & 0o777, (tmp_path / "a").stat().st_mode & 0o777) == (0o700, 0o700)
    assert list(where.iterdir()) == []  # the write probe leaves nothing behind


def test_config_shows_the_resolved_state_directory_and_database(tmp_path: Path) -> None:
    where = tmp_path / "st"
    done = cli("config", ACP_PROGRESS_STATE_DIR=str(where))
    assert done.returncode == 0, done.stderr
    assert f"state directory: {where}\n" in done.stdout
    assert f"session database: {where / DATABASE_NAME} (created on first use)" in done.stdout
    data = json.loads(cli("config", "--json", ACP_PROGRESS_STATE_DIR=str(where)).stdout)
    assert (data["stateDir"], data["database"], data["stateEnabled"], data["stateProblem"]) == (
        str(where),
        str(where / DATABASE_NAME),
        True,
        None,
    )
    bad = cli("config", ACP_PROGRESS_STATE_DIR="/proc/nope")
    assert "state directory: /proc/nope (UNUSABLE:" in bad.stdout
    # without ACP_PROGRESS_STATE_DIR: the default, not "(unset)"
    default = cli("config", "--json")
    assert json.loads(default.stdout)["stateDir"] == str(Path(os.environ["XDG_STATE_HOME"]) / "acp-progress")


def test_the_cli_resolves_the_state_dir_as_the_store_does(tmp_path: Path) -> None:
    for env in ({"XDG_STATE_HOME": str(tmp_path)}, {"XDG_STATE_HOME": "relative"}, {}):
        assert _state.default_state_dir(env) == default_state_dir(env)
    assert _state.DATABASE_NAME == DATABASE_NAME
    settings = Settings.load({"ACP_PROGRESS_STATE_DIR": str(tmp_path)}, config_file=False)
    assert _state.state_location(settings).database == tmp_path / DATABASE_NAME
