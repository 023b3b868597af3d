"""Stopping a console ``bridge run`` with stdin left open: real processes, real signals.

Reading stdin in an executor thread the loop waits for would make Ctrl-C and SIGTERM do nothing
until stdin gives a line or ends, and a turn running then would keep its ``⏳ Working on long
task`` line open for ever (no ❌), with a WARNING about an abandoned prompt.

The bridge's process and its signals are the point; its agent runs inside that process
(:mod:`tests.helpers.cli_agent_inside`): a second process per test proves nothing here.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from acp_adapter.cli import main
from tests.helpers.acp_agent import ROOT
from tests.helpers.console_bridge_process import Bridge

pytestmark = pytest.mark.e2e


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    return tmp_path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_idle_console_bridge_stops_on_a_signal_within_2s(cfg: Path, sig: signal.Signals) -> None:
    """And before that: a console bridge on a terminal says it is ready before anyone types, not
    silent until a line is typed."""
    bridge = Bridge(cfg)
    assert bridge.proc.stderr is not None
    first = bridge.proc.stderr.readline()  # stdin stays open: nothing was typed yet
    assert first.strip() == "bridge con: ready — type a message (end of input ends the run, Ctrl-C stops it)"
    bridge.say("search for TODO")
    bridge.wait_for("I searched")  # the agent runs; now the bridge waits for the next line
    time.sleep(0.3)
    took, err = bridge.stop(sig)
    print(f"{sig.name} idle: stopped in {took:.2f}s")
    assert took < 6, f"stopped after {took:.1f}s"  # the 2 s promise, generous for a loaded machine
    assert bridge.proc.returncode == 128 + sig, err  # 130 / 143, as every front-end
    assert "Traceback" not in err and "WARNING" not in err, err
    assert "delivery metrics" in err  # a clean end: the run's metrics are recorded


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_turn_ends_the_open_line_with_the_reason_within_2s(
    cfg: Path, sig: signal.Signals
) -> None:
    bridge = Bridge(cfg)
    bridge.say("wait 10 seconds")
    bridge.wait_for("⏳ Working on long task")
    time.sleep(0.5)
    took, err = bridge.stop(sig)
    print(f"{sig.name} mid-turn: stopped in {took:.2f}s")
    assert took < 6, f"stopped after {took:.1f}s"  # the 2 s promise, generous for a loaded machine
    assert bridge.proc.returncode == 128 + sig, err
    text = "\n".join(bridge.lines)
    assert "edited] ❌ Working on long task — the bridge stopped" in text, text
    assert "⏹ Stopped: the bridge stopped." in text, text
    assert "Traceback" not in err and "abandoned" not in err, err


def test_a_signal_while_a_question_is_pending_says_nobody_answered(cfg: Path) -> None:
    bridge = Bridge(cfg)
    bridge.say("run echo bridged")
    bridge.wait_for("[permission] Allow Running echo bridged?")
    time.sleep(0.3)
    took, err = bridge.stop(signal.SIGINT)
    assert took < 6, f"stopped after {took:.1f}s"  # the 2 s promise, generous for a loaded machine
    assert bridge.proc.returncode == 130, err
    text = "\n".join(bridge.lines)
    assert "[permission] the bridge stopped; nobody answered" in text, text
    assert "[permission] denied" not in text and "Permission denied" not in text, text  # not a "no"
    assert "Traceback" not in err, err
