"""Settings validation, the hook-site check script and the plain-terminal program."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from acp_adapter.config import ConfigError, Settings
from acp_adapter.timefmt import format_elapsed

from .conftest import ROOT, agent_env


def test_defaults():
    s = Settings.from_env({})
    assert (s.heartbeat_interval, s.heartbeat_disabled, s.model, s.embedded_delay) == (
        30.0,
        False,
        "embedded",
        2.0,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "soon"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: expected a number"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "0"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be > 0"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "nan"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be > 0"),
        ({"ACP_PROGRESS_HEARTBEAT_DISABLED": "maybe"}, "ACP_PROGRESS_HEARTBEAT_DISABLED: expected one of"),
        ({"ACP_PROGRESS_MODEL": "gpt"}, "ACP_PROGRESS_MODEL: expected one of embedded, openai"),
        ({"ACP_PROGRESS_EMBEDDED_DELAY": "-1"}, "ACP_PROGRESS_EMBEDDED_DELAY: must be >= 0"),
        ({"ACP_PROGRESS_MAX_TURNS": "0"}, "ACP_PROGRESS_MAX_TURNS: must be >= 1"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], message: str):
    with pytest.raises(ConfigError) as err:
        Settings.from_env(env)
    assert message in str(err.value)


def test_good_settings_parse():
    s = Settings.from_env(
        {
            "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.5",
            "ACP_PROGRESS_HEARTBEAT_DISABLED": "yes",
            "ACP_PROGRESS_MODEL": "Embedded",
        }
    )
    assert (s.heartbeat_interval, s.heartbeat_disabled, s.model) == (0.5, True, "embedded")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.04, "0.0s"), (2.06, "2.1s"), (30, "30s"), (60, "1m 0s"), (61.9, "1m 1s"), (3723, "1h 2m 3s")],
)
def test_format_elapsed(seconds: float, text: str):
    assert format_elapsed(seconds) == text


def test_hook_site_check_passes_on_run_agent_and_fails_on_broken_copies(tmp_path):
    script = ROOT / "scripts" / "check_hook_sites.py"
    ok = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    source = (ROOT / "run_agent.py").read_text()

    unguarded = source.replace(
        '            except Exception as exc:\n                log.warning("agent_progress_callback(start)',
        '            except ValueError as exc:\n                log.warning("agent_progress_callback(start)',
    )
    assert unguarded != source
    (tmp_path / "unguarded.py").write_text(unguarded)
    bad = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "unguarded.py")], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "is not inside a try" in bad.stderr

    extra = source.replace(
        '            self._safe(self.thinking_callback, "Thinking...")',
        '            self.agent_progress_callback("start", "llm_response", {})',
    )
    assert extra != source
    (tmp_path / "extra.py").write_text(extra)
    bad = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "extra.py")], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "expected 3 hook sites" in bad.stderr


def test_plain_terminal_program_prints_progress_and_the_answer(tmp_path):
    env = {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.3", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1"),
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "run_agent.py"), "what is 7*6"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Thinking..." in proc.stdout and "Still thinking…" in proc.stdout
    assert "7*6 = 42" in proc.stdout


def test_bad_config_stops_the_server_with_a_clear_message():
    env = {**os.environ, **agent_env(ACP_PROGRESS_HEARTBEAT_INTERVAL="fast")}
    proc = subprocess.run(
        [sys.executable, "-m", "acp_adapter"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=30
    )
    assert proc.returncode == 2
    assert "ACP_PROGRESS_HEARTBEAT_INTERVAL: expected a number" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.skipif(shutil.which("acp-progress") is None, reason="console script not installed")
def test_console_script_watch_renders_cards_and_answer(tmp_path):
    env = {**os.environ, **agent_env()}
    proc = subprocess.run(
        ["acp-progress", "watch", "--embedded-delay", "0.4", "--heartbeat-interval", "0.1", "what is 2^10"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "▶ 💭 Thinking..." in out and "Still thinking…" in out and "✅ 💭 Thinking... — Thought for" in out
    assert "2^10 = 1024" in out and "stop reason: end_turn" in out


def test_descriptor_command_validates_and_renders(tmp_path, capsys):
    from acp_adapter.cli import main

    mcp = tmp_path / "tool.json"
    mcp.write_text(
        '{"name": "issue_lookup", '
        '"_meta": {"agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey"}}'
    )
    assert main(["descriptor", str(mcp), "--input", '{"issueKey": "BUG-456"}']) == 0
    assert capsys.readouterr().out.strip() == "⚙️ Looking up BUG-456"

    manifest = tmp_path / "manifest.toml"
    manifest.write_text('friendly_verb = "Looking up"\npreview = "arg:issueKey"\n')
    assert main(["descriptor", str(manifest), "--input", '{"issueKey": "BUG-456"}']) == 0
    assert capsys.readouterr().out.strip() == "⚙️ Looking up BUG-456"

    bad = tmp_path / "bad.toml"
    bad.write_text('friendly_verb = "Looking\\nup"\npreview = "arg:password"\n')
    assert main(["descriptor", str(bad)]) == 1
    assert "invalid descriptor: friendly_verb: must be one line" in capsys.readouterr().err

    wrong_type = tmp_path / "wrong.json"
    wrong_type.write_text('{"_meta": {"agh/preview": 7}}')
    assert main(["descriptor", str(wrong_type)]) == 1
    assert "agh/preview: must be a string, got int" in capsys.readouterr().err
