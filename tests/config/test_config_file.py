"""The settings file (~/.config/acp-progress/config.toml): location, precedence, closed schema, secrets."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from acp_adapter._config_file import config_file_path
from acp_adapter.config import ConfigError, Settings, SettingSource, StreamSettings


def write(directory: Path, text: str, mode: int = 0o600) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def env_for(directory: Path, **variables: str) -> dict[str, str]:
    return {"ACP_PROGRESS_CONFIG_DIR": str(directory), **variables}


def test_the_file_is_found_by_config_dir_then_xdg_config_home_then_home(tmp_path: Path) -> None:
    assert (
        config_file_path({"ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")}) == tmp_path / "c" / "config.toml"
    )
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "x"), "HOME": str(tmp_path / "h")}
    assert config_file_path(xdg) == tmp_path / "x" / "acp-progress" / "config.toml"
    home = {"XDG_CONFIG_HOME": "relative/ignored", "HOME": str(tmp_path / "h")}
    assert config_file_path(home) == tmp_path / "h" / ".config" / "acp-progress" / "config.toml"
    assert config_file_path({}) is None  # an explicit mapping without a home reads no file
    both = {**xdg, "ACP_PROGRESS_CONFIG_DIR": str(tmp_path / "c")}
    assert config_file_path(both) == tmp_path / "c" / "config.toml"


def test_xdg_config_home_is_honoured_when_loading(tmp_path: Path) -> None:
    write(tmp_path / "x" / "acp-progress", "heartbeat_interval = 4\n")
    assert Settings.from_env({"XDG_CONFIG_HOME": str(tmp_path / "x")}).heartbeat_interval == 4


def test_file_then_environment_then_flags_each_wins_over_the_one_before(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
heartbeat_interval = 5
summary = "embedded"
[openai]
model = "file-model"
timeout = 30
[summary_openai]
timeout = 7
""",
    )
    env = env_for(tmp_path, ACP_PROGRESS_OPENAI_MODEL="env-model", ACP_PROGRESS_HEARTBEAT_INTERVAL="3")
    loaded = Settings.load_with_sources(env, {"heartbeat_interval": "2"})
    s = loaded.settings
    assert (s.heartbeat_interval, s.openai.model, s.openai.timeout, s.summary_openai.timeout) == (
        2,
        "env-model",
        30,
        7,
    )
    assert s.summary == "embedded"
    assert loaded.config_file == path and loaded.config_file_found
    assert loaded.source("heartbeat_interval") == SettingSource("flag", "--heartbeat-interval")
    assert loaded.source("openai.model") == SettingSource("env", "ACP_PROGRESS_OPENAI_MODEL")
    assert loaded.source("openai.timeout") == SettingSource("file", str(path))
    assert loaded.source("max_turns") == SettingSource("default")
    # without the flag the environment wins; without both the file does
    assert Settings.load(env).heartbeat_interval == 3
    assert Settings.load(env_for(tmp_path)).heartbeat_interval == 5
    # and a child process gets the file's values through the environment
    assert Settings.load(env_for(tmp_path)).to_env()["ACP_PROGRESS_OPENAI_TIMEOUT"] == "30.0"


def test_every_section_is_a_table(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
[openai]
base_url = "http://localhost:11434/v1"
context_window = 8192
[summary_openai]
model = "tiny"
[telegram]
answer_retries = 2
[agui]
allowed_hosts = ["a.example", "b.example"]
max_runs = 4
[streams]
max_json_depth = 64
""",
    )
    s = Settings.from_env(env_for(tmp_path))
    assert s.openai.base_url == "http://localhost:11434/v1" and s.openai.context_window == 8192
    assert s.summary_openai.model == "tiny" and s.telegram.answer_retries == 2
    assert s.agui.allowed_hosts == ("a.example", "b.example") and s.agui.max_runs == 4
    assert s.streams.max_json_depth == 64
    # code that reads only the stream limits reads them from the file too, the environment on top
    assert StreamSettings.from_env(env_for(tmp_path)).max_json_depth == 64
    assert StreamSettings.from_env(env_for(tmp_path, ACP_PROGRESS_MAX_JSON_DEPTH="32")).max_json_depth == 32


def test_a_missing_or_empty_file_is_all_defaults(tmp_path: Path) -> None:
    loaded = Settings.load_with_sources(env_for(tmp_path / "nowhere"))
    assert loaded.settings == Settings() and not loaded.config_file_found and loaded.sources == {}
    write(tmp_path, "# nothing yet\n")
    loaded = Settings.load_with_sources(env_for(tmp_path))
    assert loaded.settings == Settings() and loaded.config_file_found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("heartbeat_interval = 'fast'\n", "{path}: heartbeat_interval: expected a number, got 'fast'"),
        ("heartbeat_interval = '5'\n", "{path}: heartbeat_interval: expected a number, got '5'"),
        ("heartbeat_interval = true\n", "{path}: heartbeat_interval: expected a number, got True"),
        ("heartbeat_interval = 0\n", "{path}: heartbeat_interval: must be >= 0.01, got 0"),
        ("heartbeat_disabled = 'yes'\n", "{path}: heartbeat_disabled: expected true or false, got 'yes'"),
        ("model = 'gpt'\n", "{path}: model: expected one of embedded or openai, got 'gpt'"),
        (
            "hearbeat_interval = 5\n",
            "{path}: hearbeat_interval: is not a setting (did you mean heartbeat_interval?)",
        ),
        (
            "ACP_PROGRESS_HEARTBEAT_INTERVAL = 5\n",
            "{path}: ACP_PROGRESS_HEARTBEAT_INTERVAL: is not a setting",
        ),
        ("[openai]\ntimeuot = 5\n", "{path}: [openai] timeuot: is not a setting (did you mean timeout?)"),
        ("[openai]\ntimeout = 'slow'\n", "{path}: [openai] timeout: expected a number, got 'slow'"),
        (
            "[telegram]\nanswer_retries = 2.5\n",
            "{path}: [telegram] answer_retries: expected a whole number, got 2.5",
        ),
        ("[agui]\nallowed_hosts = [1]\n", "{path}: [agui] allowed_hosts.0: expected a string, got 1"),
        ("[streams]\nmax_json_depth = 9999\n", "{path}: [streams] max_json_depth: must be <= 512, got 9999"),
        ("[opnai]\nmodel = 'x'\n", "{path}: [opnai] is not a settings table (did you mean [openai]?)"),
        ("openai = 'x'\n", "{path}: [openai] must be a table, got 'x'"),
        ("[heartbeat_interval]\nx = 1\n", "{path}: heartbeat_interval: expected a value, got a table"),
        ("[openai.model]\nx = 1\n", "{path}: [openai] model: expected a value, got a table"),
    ],
)
def test_the_schema_is_closed_and_errors_name_the_file_table_and_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env_for(tmp_path))
    assert str(info.value) == expected.format(path=path)


def test_invalid_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "heartbeat_interval = 5\nsummary = \n")
    with pytest.raises(ConfigError, match=rf"^{path}: not valid TOML: .*line 2"):
        Settings.from_env(env_for(tmp_path))


def test_an_environment_error_still_names_the_variable_with_a_file_present(tmp_path: Path) -> None:
    write(tmp_path, "heartbeat_interval = 5\n")
    with pytest.raises(ConfigError, match=r"^ACP_PROGRESS_HEARTBEAT_INTERVAL: expected a number, got 'x'$"):
        Settings.from_env(env_for(tmp_path, ACP_PROGRESS_HEARTBEAT_INTERVAL="x"))


def test_an_unreadable_file_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "heartbeat_interval = 5\n", mode=0o000)
    real_open = os.open

    def refuse(file: object, *args: object, **kwargs: object) -> object:
        if Path(str(file)) == path:  # as for any user but root, who reads a mode-0 file anyway
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(ConfigError, match=rf"^{path}: cannot be read \(Permission denied\)$"):
        Settings.from_env(env_for(tmp_path))


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[openai]\napi_key = 'sk-file-secret-123'\n", "openai.api_key"),
        ("[agui]\ntoken = 'x' \n", "agui.token"),
    ],
)
def test_a_secret_in_a_file_others_can_read_is_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, field: str
) -> None:
    caplog.set_level(logging.WARNING, logger="acp_progress.config")
    path = write(tmp_path, text, mode=0o644)
    Settings.from_env(env_for(tmp_path))
    Settings.from_env(env_for(tmp_path))
    (record,) = caplog.records
    message = record.getMessage()
    assert str(path) in message and field in message and "0644" in message and "chmod 600" in message
    assert "sk-file-secret-123" not in message
    caplog.clear()
    path.chmod(0o600)  # private now: silent
    other = write(tmp_path / "private", text, mode=0o600)
    Settings.from_env(env_for(other.parent))
    assert caplog.records == []


def test_a_world_readable_file_without_secrets_is_not_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="acp_progress.config")
    write(tmp_path, "[openai]\nmodel = 'm'\napi_key = ''\n", mode=0o644)
    Settings.from_env(env_for(tmp_path))
    assert caplog.records == []


def test_the_readme_settings_file_example_loads(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    section = (
        (root / "docs" / "configuration.md").read_text().split("## Configuration", 1)[1].split("\n## ", 1)[0]
    )
    write(tmp_path, section.split("```toml\n", 1)[1].split("```", 1)[0])
    loaded = Settings.load_with_sources(env_for(tmp_path))
    assert loaded.settings.openai.model == "llama3.2" and loaded.settings.heartbeat_interval == 10
    assert loaded.settings.agui.allowed_origins == ("https://app.example",)
    assert {s.kind for s in loaded.sources.values()} == {"file"}


def test_a_directory_in_place_of_the_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError, match=rf"^{tmp_path / 'config.toml'}: is a directory"):
        Settings.from_env(env_for(tmp_path))


def test_several_mistakes_are_one_line_each_under_the_path_named_once(tmp_path: Path) -> None:
    """The report is readable: not one long line, not the path before every mistake, and with a
    suggestion."""
    path = write(tmp_path, "[openai]\nbase_ur = 'http://x'\ntimeout = -1\n[streams]\nmax_line_byte = 5\n")
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env_for(tmp_path))
    assert info.value.report("acp-progress").splitlines() == [
        f"acp-progress: 3 mistakes in {path}:",
        "  [openai] base_ur: is not a setting (did you mean base_url?)",
        "  [streams] max_line_byte: is not a setting (did you mean max_line_bytes?)",
        "  [openai] timeout: must be > 0, got -1",
    ]


def test_a_key_far_from_every_setting_gets_no_guess(tmp_path: Path) -> None:
    path = write(tmp_path, "[openai]\nzzzzqqq = 1\n")
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env_for(tmp_path))
    assert info.value.report("acp-progress") == f"acp-progress: {path}: [openai] zzzzqqq: is not a setting"


@pytest.mark.parametrize(
    "url", ["localhost:11434", "ht!tp://x y", "ftp://host/v1", "http://", "http://h:port/v1", "http://a b/v1"]
)
@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL"])
def test_a_malformed_base_url_is_a_setting_error(tmp_path: Path, url: str, variable: str) -> None:
    """Refused here, where the mistake is, rather than accepted and left to fail the agent process
    at start (the front-end exiting 1 with the agent's stderr passed through)."""
    with pytest.raises(ConfigError, match=rf"^{variable}: expected an http:// or https:// URL with a host"):
        Settings.from_env(env_for(tmp_path, **{variable: url}))


def test_a_base_url_error_hides_its_password(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env_for(tmp_path, OPENAI_BASE_URL="http://me:hunter2-secret@host:port/v1"))
    assert "hunter2-secret" not in str(info.value)


@pytest.mark.e2e
def test_watch_with_a_malformed_base_url_exits_2_with_a_direct_message(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "watch", "--model", "openai", "hi"],
        env={**os.environ, **env_for(tmp_path, OPENAI_BASE_URL="localhost:11434", OPENAI_API_KEY="k")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("acp-progress: OPENAI_BASE_URL: expected an http:// or https:// URL")
    assert "agent" not in done.stderr  # the setting is named, not a failed agent start
