"""A person approves only what they were shown whole: the permission question on the terminal
front-ends and the bridges shows the command itself — escaped where it hides something — whenever
the card's title does not hold it character for character (a title is cut at 160 characters, drops
line breaks and loses what a reader cannot see)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from acp.schema import ToolCallUpdate

from acp_adapter.cli import main
from acp_adapter.client.permissions import PermissionRequest
from tests.helpers.acp_agent import ROOT
from tests.helpers.console_bridge_process import Bridge


def _request(title: str, command: str | None) -> PermissionRequest:
    raw = {"command": command} if command is not None else None
    return PermissionRequest("s", ToolCallUpdate(tool_call_id="c", title=title, raw_input=raw), [])


def test_the_command_is_shown_beside_the_title_unless_the_title_holds_it_verbatim() -> None:
    assert _request("Running ls -la", "ls -la").command_beside_title is None
    assert _request("Running ls", None).command_beside_title is None
    cut = "echo " + "a" * 200 + "; rm -rf data"
    assert _request(f"Running {cut[:150]}…", cut).command_beside_title == cut
    # joined into one line, two commands read as one harmless echo: the lines are shown
    assert _request("Running echo ok rm -rf data", "echo ok\nrm -rf data").command_beside_title == (
        "echo ok\nrm -rf data"
    )
    # the title lost the override: the command, with it, is shown beside
    hidden = 'echo "x" \u202e; rm -rf data'
    assert _request('Running echo "x" ; rm -rf data', hidden).command_beside_title == hidden
    assert _request("Running ls  -la", "ls -la").command_beside_title == "ls -la"  # not verbatim


@pytest.mark.e2e
def test_a_console_bridge_shows_a_long_disguised_command_whole(tmp_path: Path, monkeypatch) -> None:
    """The console bridge shows the whole command, not only the card's title — cut at 160
    characters, the override dropped — so "y" never runs a hidden tail."""
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    tail = "; touch /tmp/acp-progress-never-made"
    command = "echo " + "a" * 180 + " \u202e" + tail
    bridge = Bridge(tmp_path)
    bridge.say(f"run `{command}`")
    bridge.wait_for("[permission] Allow")
    bridge.say("n")
    bridge.wait_for("[permission] denied")
    bridge.stop(signal.SIGTERM)
    shown = "\n".join(bridge.lines)
    assert "[permission] command: " + command.replace("\u202e", "\\u202e") in shown, shown
    assert "\u202e" not in shown
