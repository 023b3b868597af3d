"""The permission audit says who answered and where, for every front-end (issue 20): ``watch --yes``
is an automatic answer on the watch surface, a person at a console bridge is ``console:<login>``
on the console surface. Real processes, one state directory."""

from __future__ import annotations

import getpass
import json
import signal
import subprocess
import sys
from pathlib import Path

from acp_adapter.cli import main

from .conftest import ROOT, agent_env
from .test_bridge_console_stop import Bridge


def _audit(state: Path) -> list[dict[str, object]]:
    env = {**agent_env(), "ACP_PROGRESS_STATE_DIR": str(state)}
    done = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "audit", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_watch_yes_is_audited_as_automatic_on_the_watch_surface(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**agent_env(), "ACP_PROGRESS_STATE_DIR": str(state)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_adapter.cli",
            "watch",
            "--yes",
            "--cwd",
            str(tmp_path),
            "run `echo audited`",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    (row,) = _audit(state)
    assert (row["allowed"], row["decidedBy"], row["surface"]) == (True, "auto", "watch")
    assert "echo audited" in str(row["title"])


def test_a_console_bridge_approval_names_the_person_and_the_surface(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    bridge = Bridge(tmp_path)
    bridge.say("run `echo approved-here`")
    bridge.wait_for("[permission] Allow")
    bridge.say("y")
    bridge.wait_for("approved-here")
    bridge.say("run `echo refused-here`")
    bridge.wait_for("[permission] Allow Running echo refused-here")
    bridge.say("n")
    bridge.wait_for("[permission] denied")
    bridge.stop(signal.SIGTERM)
    rows = _audit(tmp_path / "state")
    assert [(r["allowed"], r["decidedBy"], r["surface"]) for r in rows] == [
        (False, f"console:{getpass.getuser()}", "console"),
        (True, f"console:{getpass.getuser()}", "console"),
    ]
