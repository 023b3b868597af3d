"""``acp-progress watch`` on the client driver: clear one-line failures and honest exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from acp_adapter.cli import main
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.cli_agent_inside import agent_inside

pytestmark = pytest.mark.e2e

SCRIPTED = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'scripted_agent.py'}"


@pytest.fixture
def fast_agent_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05").items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("no-such-agent-binary", "cannot start the agent 'no-such-agent-binary': command not found"),
        ("cat", "cat is not an ACP agent"),
        (f"{sys.executable} -c 'print(123)'", "non-ACP output on stdout: '123'"),
        ("python -c 'oops", "cannot parse the agent command"),
    ],
)
def test_agent_failures_are_one_clear_line(
    agent: str, expected: str, fast_agent_env: None, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    code = main(["watch", "--agent", agent, "--cwd", str(tmp_path), "hello"])
    err = capsys.readouterr().err
    assert code == 1
    assert expected in err
    assert "Traceback" not in err


def test_a_silent_command_times_out_at_initialize(
    fast_agent_env: None, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    started = time.monotonic()
    # it reads everything and never answers; it ends on the end of its input, so the close after
    # the time-out needs no signal
    silent = "sh -c 'cat > /dev/null'"
    code = main(["watch", "--agent", silent, "--init-timeout", "0.5", "--cwd", str(tmp_path), "hi"])
    assert code == 1
    assert "did not answer initialize within 0.5s" in capsys.readouterr().err
    assert time.monotonic() - started < 6


def test_an_agent_crash_mid_turn_exits_non_zero_with_its_stderr(
    fast_agent_env: None, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    code = main(["watch", "--agent", f"{SCRIPTED} crash", "--cwd", str(tmp_path), "hi"])
    err = capsys.readouterr().err
    assert code == 1
    assert "exited with code 3 during the turn" in err and "crashing on purpose" in err


def test_a_model_error_exits_non_zero(
    fast_agent_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    monkeypatch.setenv("ACP_PROGRESS_OPENAI_MAX_RETRIES", "0")
    with agent_inside():  # what watch prints and its exit status are the point, not the agent's process
        code = main(["watch", "--model", "openai", "--cwd", str(tmp_path), "hello"])
    out = capsys.readouterr().out
    assert "❌ 💭 Thinking..." in out
    assert code == 1


def test_a_good_turn_exits_zero(fast_agent_env: None, capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    with agent_inside():  # what watch prints and its exit status are the point, not the agent's process
        assert main(["watch", "--cwd", str(tmp_path), "what is 2^10"]) == 0
    out = capsys.readouterr().out
    assert "2^10 = 1024" in out and "— stop reason: end_turn" in out


def test_ctrl_c_cancels_the_turn_and_exits_130_in_one_press(tmp_path) -> None:
    env = {**os.environ, **agent_env()}
    agent_log = tmp_path / "agent.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from acp_adapter.cli import main; sys.exit(main(sys.argv[1:]))",
            "watch",
            "--agent",
            f"{SCRIPTED} silent 60",
            "--agent-log",
            str(agent_log),
            "--cwd",
            str(tmp_path),
            "wait forever",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30  # wait until the prompt is outstanding, however slow the start
    while "prompt received" not in (agent_log.read_text() if agent_log.exists() else ""):
        assert proc.poll() is None and time.monotonic() < deadline, "the agent never got the prompt"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert "cancelled" in out
    assert "Traceback" not in err
