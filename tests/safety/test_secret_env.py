"""Secrets stay with their owner: a front-end's tokens never reach the agent it
starts, and a command a tool runs gets none of the package's secrets unless passed through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_adapter.safety.secret_env import agent_environment, command_environment
from tests.helpers.acp_agent import agent_env

SECRETS = {
    "TELEGRAM_BOT_TOKEN": "tg-value-7Hq2Lm4Np6",
    "ACP_PROGRESS_AGUI_TOKEN": "agui-value-8Jr3Kn5Mp7",
    "OPENAI_API_KEY": "openai-value-9Ks4Lo6Nq8",
}


def test_the_rules() -> None:
    base = {**SECRETS, "PATH": "/bin", "ACP_PROGRESS_DATABASE_URL": "postgresql://u:pw@h/db"}
    agent = agent_environment(base, {"ACP_PROGRESS_SUMMARY": "off"})
    assert "TELEGRAM_BOT_TOKEN" not in agent and "ACP_PROGRESS_AGUI_TOKEN" not in agent
    assert agent["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"] and agent["ACP_PROGRESS_SUMMARY"] == "off"
    command = command_environment(base)
    assert set(command) == {"PATH"}
    passed = command_environment({**base, "ACP_PROGRESS_PASS_ENV": "OPENAI_API_KEY, OTHER"})
    assert passed["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"] and "TELEGRAM_BOT_TOKEN" not in passed


@pytest.mark.e2e
def test_neither_the_agent_nor_its_commands_see_what_is_not_theirs(tmp_path: Path) -> None:
    """``watch --yes "run printenv"`` prints none of the bot token, the endpoint token and the
    model key the front-end's environment holds (secrets never leave)."""
    log = tmp_path / "agent.log"
    fast = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_SUMMARY="off")
    env = {**os.environ, **fast, **SECRETS}
    env.pop("ACP_PROGRESS_PASS_ENV", None)
    probe = tmp_path / "probe.py"  # an agent that says what it got, then serves as ours does
    probe.write_text(
        "import os, sys, runpy\n"
        "sys.stderr.write('AGENT-ENV ' + ' '.join(sorted(k for k in os.environ if k in "
        f"{sorted(SECRETS)!r})) + '\\n')\n"
        "sys.argv = ['acp_adapter']\nrunpy.run_module('acp_adapter', run_name='__main__')\n"
    )
    done = subprocess.run(
        [
            *(sys.executable, "-m", "acp_adapter.cli", "watch", "--yes", "--agent-log", str(log)),
            *("--agent", f"{sys.executable} {probe}", "--cwd", str(tmp_path), "run `printenv`"),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "AGENT-ENV OPENAI_API_KEY\n" in log.read_text()  # its model key; not the front-end's tokens
    assert "PATH=" in done.stdout  # the command ran and printed its environment
    for value in SECRETS.values():
        assert value not in done.stdout, value
