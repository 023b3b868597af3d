"""Bridges across a crash or restart: real ``acp-progress bridge run`` processes, killed and restarted.

Telegram against the strict fake Bot API (it keeps its state, pending updates included, across
the bridge restart): a turn running when the bridge is SIGKILLed is reported interrupted and
never re-sent; a prompt accepted behind it runs after the restart; nothing is processed twice;
the chat goes on in its stored session. The console bridge carries its session across a
restart too (two runs in this process: the store carries the session), and ``bridge show`` lists
the chats' sessions. The bridge's process is the point (killed, restarted, its pipe closed); its
agent is only "an agent to talk to", so it runs inside that process
(:mod:`tests.helpers.cli_agent_inside`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.cli import main
from acp_adapter.frontends.bridges.state import INTERRUPTED
from acp_adapter.store import SqliteStore
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.acp_progress_command import AGENT_INSIDE
from tests.helpers.console_bridge import run_console_bridge
from tests.helpers.shared_servers import use_in_process_agents

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
CHAT = 4242


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def env(cfg: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"),  # nothing here is timed against the model
        "ACP_PROGRESS_CONFIG_DIR": str(cfg / "config"),
        "ACP_PROGRESS_STATE_DIR": str(cfg / "state"),
        "ACP_PROGRESS_SUMMARY": "off",
        **extra,
    }


def show(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["bridge", "show", name]) == 0
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.e2e
def test_telegram_sigkill_mid_turn_then_restart(cfg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("telegram")
    from tests.helpers.fake_telegram import FakeTelegram

    fake = FakeTelegram(TOKEN).start()
    fake.max_poll_seconds = 0.5  # an empty long poll is held 0.5 s, not 5 s
    args = ["bridge", "create", "tg", "--platform", "telegram", "--chat-id", str(CHAT), "--cwd", str(ROOT)]
    assert main([*args, "--delivery-progress", "all"]) == 0
    e = env(cfg, TELEGRAM_BOT_TOKEN=TOKEN, ACP_PROGRESS_TELEGRAM_API_URL=fake.api_url)
    run = [*AGENT_INSIDE, "bridge", "run", "tg"]
    first = subprocess.Popen(run, env=e, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        fake.wait_until(lambda: bool(fake.calls_of("getUpdates")), within=20)
        fake.user_says(CHAT, "search for TODO")
        fake.wait_until(lambda: any("I searched" in t for t in fake.chat_view(CHAT)), within=20)
        session = show("tg", capsys)["chats"][0]["session_id"]
        fake.user_says(CHAT, "wait 20 seconds")
        fake.wait_until(lambda: any(t.startswith("⏳ Working on") for t in fake.chat_view(CHAT)), within=20)
        fake.user_says(CHAT, "read README.md")  # accepted, queued behind the running turn
        read = fake.last_update_id
        fake.wait_until(lambda: fake.taken(read), within=10)  # it took (and stored) the update
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
        before = len(fake.calls)

        second = subprocess.Popen(
            run, env=e, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        fake.wait_until(lambda: any(t.startswith(INTERRUPTED) for t in fake.chat_view(CHAT)), within=20)
        fake.wait_until(lambda: any("README" in t and t.startswith("✅") for t in fake.chat_view(CHAT)), 20)
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=10)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
        fake.stop()
    view = fake.chat_view(CHAT)
    notice = next(t for t in view if t.startswith(INTERRUPTED))
    assert notice.endswith("↳ wait 20 seconds"), notice
    # the interrupted prompt never went to the agent again: one ⏳ line, from the first run
    assert sum(1 for t in view if "Working on" in t) == 1, view
    # nothing twice: the second run polled from the stored offset and "search" ran once
    after = fake.calls[before:]
    offsets = [int(c.params.get("offset") or 0) for c in after if c.method == "getUpdates"]
    assert offsets and offsets[0] == 4, offsets
    assert sum(1 for t in view if "I searched" in t) == 1, view
    # the chat went on in its stored session (loaded, replay not posted, no "new conversation")
    assert not any("new conversation" in t for t in view), view
    assert show("tg", capsys)["chats"][0]["session_id"] == session
    # the final answer went out with a notification, the progress lines silently
    sends = [c for c in fake.calls_of("sendMessage") if c.params.get("chat_id") in (CHAT, str(CHAT))]
    silent = {str(c.params.get("text")): c.params.get("disable_notification") for c in sends}
    assert any(t.startswith("🔎") and v in (True, "true", "True") for t, v in silent.items()), silent
    assert any("I searched" in t and v in (None, False, "false", "False") for t, v in silent.items()), silent
    assert "Traceback" not in err, err


def test_console_bridge_restart_goes_on_in_the_same_session(
    cfg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of the bridge one after the other on one state directory, in this process with
    this project's agent in process too: what carries the session is the store, not a process."""
    use_in_process_agents(monkeypatch)
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    one = run_console_bridge("con", "search for TODO\n", monkeypatch, capsys, env(cfg))
    assert one.returncode == 0, one.stderr
    session = show("con", capsys)["chats"][0]
    assert session["chat"] == "console"
    two = run_console_bridge("con", "read README.md\n", monkeypatch, capsys, env(cfg))
    assert two.returncode == 0, two.stderr
    assert "new conversation" not in two.stdout, two.stdout
    assert show("con", capsys)["chats"][0]["session_id"] == session["session_id"]
    # the agent's stored conversation holds both prompts: the second went into the loaded session
    store = SqliteStore(cfg / "state")
    try:
        stored = store.load(session["session_id"])
    finally:
        store.close()
    assert stored is not None
    text = json.dumps(stored.events)
    assert "search for TODO" in text and "read README.md" in text
    # replay is not posted: the second run's chat shows only its own prompt's answer
    assert "search for TODO" not in two.stdout and "I searched" not in two.stdout, two.stdout


def test_a_console_bridge_whose_agent_cannot_load_says_it_started_a_new_conversation(
    cfg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent answers ``loadSession: false``: after a restart the chat cannot go on in its
    stored session, so the bridge opens a new one and says so in the chat, once. The two runs are
    in this process, the agent (tests/agents/progress_agent.py) too, a new one per run, as each
    run would start it: what carries the chat is the store, not a process."""
    import shlex
    import sys

    from acp_adapter.frontends.bridges.chat_turn import NEW_CONVERSATION
    from acp_adapter.frontends.bridges.runner import BridgeRunner
    from tests.agents.progress_agent import ProgressAgent
    from tests.helpers.shared_servers import drive_own_agent_in_process

    script = str(ROOT / "tests" / "agents" / "progress_agent.py")
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(script)}"
    argv = (sys.executable, script)
    drive_own_agent_in_process(
        monkeypatch, BridgeRunner, lambda runner: runner.instance.agent == argv, ProgressAgent
    )
    assert (
        main(["bridge", "create", "nl", "--platform", "console", "--cwd", str(ROOT), "--agent", agent]) == 0
    )
    one = run_console_bridge("nl", "hello\n", monkeypatch, capsys, env(cfg))
    assert one.returncode == 0, one.stderr
    assert "echo: hello" in one.stdout and "new conversation" not in one.stdout, one.stdout
    first = show("nl", capsys)["chats"][0]["session_id"]
    two = run_console_bridge("nl", "again\n", monkeypatch, capsys, env(cfg))
    assert two.returncode == 0, two.stderr
    notice = NEW_CONVERSATION.format(why="the agent cannot reload the earlier one")
    assert two.stdout.count(notice) == 1, two.stdout
    assert "echo: again" in two.stdout, two.stdout
    assert two.stdout.index(notice) < two.stdout.index("echo: again")  # said before the answer
    # one chat, its session the new one (this agent numbers its sessions from one in every run)
    assert [c["session_id"] for c in show("nl", capsys)["chats"]] == [first]


@pytest.mark.e2e
def test_a_closed_stdout_pipe_is_quiet(cfg: Path) -> None:
    """``… | head`` prints no ``typing failed: [Errno 32] Broken pipe``."""
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    proc = subprocess.Popen(
        [*AGENT_INSIDE, "bridge", "run", "con"],
        env=env(cfg),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("search for TODO\n")
    proc.stdin.flush()
    assert proc.stdout.readline().startswith("[#1 you]")
    proc.stdout.close()  # the reader (head) went away
    proc.stdin.close()
    assert proc.stderr is not None
    proc.wait(timeout=30)
    err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert "Broken pipe" not in err and "Errno 32" not in err and "Exception ignored" not in err, err


def test_a_prompt_answered_with_an_error_shows_the_reason_short() -> None:
    from acp_adapter.client.driver import AgentError
    from acp_adapter.frontends.bridges.chat_turn import _short_reason

    exc = AgentError("the agent answered the prompt with an error: The model request failed:\n HTTP 500")
    assert _short_reason(exc) == "The model request failed: HTTP 500"
