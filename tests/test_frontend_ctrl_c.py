"""Ctrl-C always works (issue 21 point 4): ``watch``, ``chat`` and ``run`` as real processes, a real
SIGINT at 0.1, 0.3 and 1 s — before the agent is spawned, while it starts, during the turn — and
each exits 130 within 2 s; a turn that was running ends ``⏹ cancelled`` (its cards drained)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from .conftest import agent_env

COMMANDS = {
    "watch": ["watch", "--summary", "off", "wait 10 seconds"],
    "chat": ["chat", "--summary", "off"],
    "run": ["run", "wait 10 seconds"],
}


@pytest.mark.parametrize("delay", [0.1, 0.3, 1.0])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigint_exits_130_within_two_seconds(tmp_path, command: str, delay: float) -> None:
    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.1")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter.cli", *COMMANDS[command]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert proc.stdin is not None
        if command == "chat":
            proc.stdin.write(b"wait 10 seconds\n")  # stdin stays open: the conversation goes on
            proc.stdin.flush()
        time.sleep(delay)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
        took = time.monotonic() - sent
        out = proc.stdout.read().decode() if proc.stdout else ""
        err = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130, (code, out[-400:], err[-800:])
    assert took < 2.0, took
    assert "Traceback" not in err, err
    assert "wait` finished" not in out and "stop reason: end_turn" not in out, out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigint_during_the_tool_cancels_the_turn_and_closes_its_cards(tmp_path, command: str) -> None:
    """Signalled once the tool's card is on the screen: the turn is cancelled (the card ends ❌ or
    the printer's line is closed), nothing after it runs, and the exit is 130 within 2 s."""
    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.1")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter.cli", *COMMANDS[command]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        if command == "chat":
            proc.stdin.write(b"wait 10 seconds\n")
            proc.stdin.flush()
        seen = b""
        while b"step 1 of" not in seen:  # the tool runs and reports progress
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
        took = time.monotonic() - sent
        out = (seen + proc.stdout.read()).decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130 and took < 2.0, (code, took, out)
    assert "wait` finished" not in out and "step 3 of" not in out, out
    if command != "run":
        assert "❌ 🧰 Working on long task" in out and "⏹  cancelled" in out, out
