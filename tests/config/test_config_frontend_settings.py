"""``agui.tool_progress`` and ``telegram.api_url`` are settings like every other.

``ACP_PROGRESS_AGUI_TOOL_PROGRESS`` and ``ACP_PROGRESS_TELEGRAM_API_URL`` are read through the
settings model, not straight from the environment, so the settings file can hold them and
``acp-progress config`` shows them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_adapter.config import AguiSettings, ConfigError, Settings
from tests.helpers.acp_agent import ROOT

FILE = """
[agui]
tool_progress = true

[telegram]
api_url = "http://127.0.0.1:8081"
"""


def _dir_with_file(tmp_path: Path, text: str = FILE) -> Path:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    (tmp_path / "config.toml").chmod(0o600)
    return tmp_path


def test_both_come_from_the_settings_file_and_the_environment_wins(tmp_path: Path) -> None:
    env = {"ACP_PROGRESS_CONFIG_DIR": str(_dir_with_file(tmp_path))}
    s = Settings.from_env(env)
    assert s.agui.tool_progress is True and s.telegram.api_url == "http://127.0.0.1:8081"
    assert AguiSettings.from_env(env).tool_progress is True  # what create_app(settings=...) is given
    over = {
        **env,
        "ACP_PROGRESS_AGUI_TOOL_PROGRESS": "0",
        "ACP_PROGRESS_TELEGRAM_API_URL": "https://bots.example",
    }
    s = Settings.from_env(over)
    assert s.agui.tool_progress is False and s.telegram.api_url == "https://bots.example"
    assert AguiSettings.from_env(over).tool_progress is False


def test_the_defaults_are_off_and_the_public_bot_api() -> None:
    s = Settings.from_env({})
    assert s.agui.tool_progress is False and s.telegram.api_url == "https://api.telegram.org"
    assert AguiSettings.from_env({}).tool_progress is False


def test_bad_values_name_the_variable_or_the_file_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="ACP_PROGRESS_TELEGRAM_API_URL: expected an http:// or https:// URL"
    ):
        Settings.from_env({"ACP_PROGRESS_TELEGRAM_API_URL": "api.telegram.org"})
    with pytest.raises(ConfigError, match="ACP_PROGRESS_AGUI_TOOL_PROGRESS"):
        AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "maybe"})
    bad = _dir_with_file(tmp_path, '[agui]\ntool_progress = "yes please"\n')
    with pytest.raises(ConfigError, match=r"\[agui\] tool_progress"):
        Settings.from_env({"ACP_PROGRESS_CONFIG_DIR": str(bad)})


@pytest.mark.e2e
def test_acp_progress_config_shows_both_with_their_source(tmp_path: Path) -> None:
    directory = _dir_with_file(tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_CONFIG_DIR": str(directory),
        "ACP_PROGRESS_TELEGRAM_API_URL": "https://bots.example",
    }
    shown = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "config", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    settings = json.loads(shown.stdout)["settings"]
    assert settings["agui.tool_progress"] == {
        "value": True,
        "source": "file",
        "from": str(directory / "config.toml"),
        "env": "ACP_PROGRESS_AGUI_TOOL_PROGRESS",
        "secret": False,
    }
    assert settings["telegram.api_url"]["value"] == "https://bots.example"
    assert settings["telegram.api_url"]["source"] == "env"
    assert settings["telegram.api_url"]["from"] == "ACP_PROGRESS_TELEGRAM_API_URL"


def test_the_agui_app_takes_its_settings_and_reads_no_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create_app`` is given its options (``acp-progress agui`` builds them from ``Settings.agui``
    and its flags) like the other front-ends; a variable in its own process changes nothing, a bad
    one included."""
    from acp_adapter.frontends.agui.app import create_app
    from acp_adapter.frontends.agui.endpoint import AguiOptions

    monkeypatch.setenv("ACP_PROGRESS_AGUI_TOOL_PROGRESS", "1")
    assert create_app(AguiOptions(cwd=tmp_path)).state.agui.tool_progress is False
    monkeypatch.setenv("ACP_PROGRESS_AGUI_TOOL_PROGRESS", "maybe")
    assert create_app(AguiOptions(cwd=tmp_path)).state.agui.tool_progress is False
    given = AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "1"}, config_file=False)
    on = AguiOptions(cwd=tmp_path, tool_progress=given.tool_progress)
    assert create_app(on).state.agui.tool_progress is True
    assert create_app(AguiOptions(cwd=tmp_path, tool_progress=False)).state.agui.tool_progress is False
