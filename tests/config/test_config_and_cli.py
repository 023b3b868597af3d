"""Settings validation, the hook-site check script and the plain-terminal program.

Command lines that end before any agent or server starts (help, version, a refused flag or
setting, ``config``, ``descriptor``) run ``acp_adapter.cli.main`` in this process (the ``cli``
fixture): their output and exit code are the point, and a process would only add its start. The
program and console script a user runs, a server stopping at start-up and a closed pipe keep their
real process."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_adapter.config import ConfigError, Settings
from acp_adapter.text import format_elapsed
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.shared_servers import cli_in_process


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
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "0"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be >= 0.01"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "nan"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be a finite"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "inf"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be a finite"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "1e-9"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be >= 0.01"),
        ({"ACP_PROGRESS_HEARTBEAT_INTERVAL": "1e9"}, "ACP_PROGRESS_HEARTBEAT_INTERVAL: must be <= 86400"),
        ({"ACP_PROGRESS_LOG_LEVEL": "LOUD"}, "ACP_PROGRESS_LOG_LEVEL: expected one of DEBUG, INFO"),
        ({"ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "x"}, "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY: expected a number"),
        ({"ACP_PROGRESS_MAX_WORKERS": "1.5"}, "ACP_PROGRESS_MAX_WORKERS: expected a whole number"),
        ({"ACP_PROGRESS_MAX_WORKERS": "100000"}, "ACP_PROGRESS_MAX_WORKERS: must be <= 4096"),
        ({"ACP_PROGRESS_OPENAI_TIMEOUT": "0"}, "ACP_PROGRESS_OPENAI_TIMEOUT: must be > 0"),
        ({"ACP_PROGRESS_OPENAI_MAX_RETRIES": "-1"}, "ACP_PROGRESS_OPENAI_MAX_RETRIES: must be >= 0"),
        ({"ACP_PROGRESS_HEARTBEAT_DISABLED": "maybe"}, "ACP_PROGRESS_HEARTBEAT_DISABLED: expected one of"),
        ({"ACP_PROGRESS_MODEL": "gpt"}, "ACP_PROGRESS_MODEL: expected one of embedded or openai"),
        ({"ACP_PROGRESS_EMBEDDED_DELAY": "-1"}, "ACP_PROGRESS_EMBEDDED_DELAY: must be >= 0"),
        ({"ACP_PROGRESS_MAX_TURNS": "0"}, "ACP_PROGRESS_MAX_TURNS: must be >= 1"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], message: str):
    with pytest.raises(ConfigError) as err:
        Settings.from_env(env)
    assert message in str(err.value)


def test_every_problem_is_reported_at_once_and_unrelated_variables_are_ignored():
    with pytest.raises(ConfigError) as err:
        Settings.from_env(
            {"ACP_PROGRESS_MAX_TURNS": "0", "ACP_PROGRESS_OPENAI_TIMEOUT": "soon", "ACP_PROGRESS_NOPE": "x"}
        )
    message = str(err.value)
    assert "ACP_PROGRESS_MAX_TURNS: must be >= 1, got '0'" in message
    assert "ACP_PROGRESS_OPENAI_TIMEOUT: expected a number, got 'soon'" in message
    assert "NOPE" not in message


def test_empty_variables_count_as_unset_and_case_is_folded():
    s = Settings.from_env(
        {"ACP_PROGRESS_HEARTBEAT_INTERVAL": " ", "ACP_PROGRESS_LOG_LEVEL": "debug", "OPENAI_BASE_URL": ""}
    )
    assert (s.heartbeat_interval, s.log_level, s.openai.base_url) == (
        30.0,
        "DEBUG",
        "https://api.openai.com/v1",
    )


def test_only_the_declared_variables_are_read(monkeypatch: pytest.MonkeyPatch):
    """The environment source (pydantic-settings') reads each setting from the variable it
    declares and nothing else: not a bare field name, not another case, and a list's text is
    split on commas, never decoded as JSON. Building ``Settings(...)`` reads no environment."""
    stray = {
        "STATE": "0",
        "MODEL": "openai",
        "state": "0",
        "acp_progress_model": "openai",
        "ACP_PROGRESS_OPENAI_BASE_URL": "http://wrong.example/v1",  # openai.base_url is OPENAI_BASE_URL
        "OPENAI_MODEL": "wrong",  # openai.model is ACP_PROGRESS_OPENAI_MODEL
        "ACP_PROGRESS_STREAMS_MAX_LINE_BYTES": "2048",  # it is ACP_PROGRESS_MAX_LINE_BYTES
        "ACP_PROGRESS_TELEGRAM_NOPE": "1",
    }
    assert Settings.from_env(stray, config_file=False) == Settings()
    s = Settings.from_env(
        {
            "OPENAI_BASE_URL": "http://localhost:11434/v1",
            "ACP_PROGRESS_OPENAI_MODEL": " llama3.2 ",
            "ACP_PROGRESS_MAX_LINE_BYTES": "2048",
            "ACP_PROGRESS_AGUI_ALLOWED_HOSTS": 'a.example, ["b.example"]',
        },
        config_file=False,
    )
    assert (s.openai.base_url, s.openai.model, s.streams.max_line_bytes) == (
        "http://localhost:11434/v1",
        "llama3.2",
        2048,
    )
    assert s.agui.allowed_hosts == ("a.example", '["b.example"]')
    monkeypatch.setenv("ACP_PROGRESS_MODEL", "openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://elsewhere.example/v1")
    assert (Settings().model, Settings().openai.base_url) == ("embedded", "https://api.openai.com/v1")
    assert Settings.from_env(config_file=False).model == "openai"


def test_flags_override_the_environment_and_errors_name_the_flag():
    env = {"ACP_PROGRESS_HEARTBEAT_INTERVAL": "5", "ACP_PROGRESS_MODEL": "openai"}
    s = Settings.load(env, flags={"heartbeat_interval": "0.5", "model": None})
    assert (s.heartbeat_interval, s.model) == (0.5, "openai")
    with pytest.raises(ConfigError, match=r"^--heartbeat-interval: must be a finite number, got 'inf'$"):
        Settings.load(env, flags={"heartbeat_interval": "inf"})
    with pytest.raises(ConfigError, match=r"^embedded_delay: must be >= 0, got -1$"):
        Settings().replace(embedded_delay=-1)


def test_settings_round_trip_through_the_child_environment():
    s = Settings.load(
        {"ACP_PROGRESS_OPENAI_CONTEXT_WINDOW": "4096", "ACP_PROGRESS_LOG_LEVEL": "info"},
        flags={"heartbeat_disabled": True, "embedded_delay": "0.25"},
    )
    env = s.to_env()
    assert env["ACP_PROGRESS_HEARTBEAT_DISABLED"] == "1" and env["ACP_PROGRESS_EMBEDDED_DELAY"] == "0.25"
    assert Settings.from_env(env) == s


def test_a_new_field_is_a_one_place_change():
    """A subclass adding one ``setting(...)`` gets env parsing, bounds, messages and a CLI flag."""
    from acp_adapter.config import setting

    class More(Settings):
        widgets: int = setting(3, env="ACP_PROGRESS_WIDGETS", flag="--widgets", help="how many", ge=1)

    assert More.from_env({"ACP_PROGRESS_WIDGETS": "7"}).widgets == 7
    with pytest.raises(ConfigError, match="ACP_PROGRESS_WIDGETS: must be >= 1, got '0'"):
        More.from_env({"ACP_PROGRESS_WIDGETS": "0"})
    assert "--widgets" in [flag for _, flag, *_ in More.flag_fields()]
    assert More.from_env({}).to_env()["ACP_PROGRESS_WIDGETS"] == "3"


@dataclass(frozen=True)
class Shown:
    """What a command line printed and its exit code."""

    returncode: int
    stdout: str
    stderr: str


Cli = Callable[..., Shown]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``acp-progress ARGV…`` run by ``acp_adapter.cli.main`` in this process, in the environment a
    spawned command would get (the suite's agent settings, then ``env``)."""

    def run(*argv: str, env: dict[str, str] | None = None) -> Shown:
        with monkeypatch.context() as patched, cli_in_process() as main:
            for name, value in {**agent_env(), **(env or {})}.items():
                patched.setenv(name, value)
            capsys.readouterr()
            try:
                code = main(list(argv))
            except SystemExit as exit_:  # argparse's own exits (--help, --version, a bad flag)
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
            shown = capsys.readouterr()
        return Shown(code, shown.out, shown.err)

    return run


def test_version_and_bare_command_prints_help_without_markup(cli: Cli):
    from acp_adapter import __version__

    version = cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"acp-progress {__version__}"
    bare = cli()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: acp-progress")
    for command in ("serve", "watch", "run", "descriptor"):
        assert command in bare.stdout
    helps = [bare.stdout] + [cli(c, "--help").stdout for c in ("serve", "watch", "run", "descriptor")]
    for text in helps:
        assert "``" not in text and ":class:" not in text and ":func:" not in text
    assert "ACP_PROGRESS_HEARTBEAT_INTERVAL" in helps[1]


def test_bad_flag_and_bad_log_level_stop_with_the_name(cli: Cli):
    flag = cli("run", "--heartbeat-interval", "inf", "hi")
    assert flag.returncode == 2 and "--heartbeat-interval: must be a finite number, got 'inf'" in flag.stderr
    tiny = cli("serve", "--heartbeat-interval", "1e-9")
    assert tiny.returncode == 2 and "--heartbeat-interval: must be >= 0.01" in tiny.stderr
    loud = cli("run", "hi", env={"ACP_PROGRESS_LOG_LEVEL": "LOUD"})
    assert loud.returncode == 2 and "ACP_PROGRESS_LOG_LEVEL: expected one of" in loud.stderr
    assert loud.stdout == "" and "Traceback" not in loud.stderr


def test_descriptor_ignores_unrelated_bad_environment(tmp_path, cli: Cli):
    mcp = tmp_path / "tool.json"
    mcp.write_text('{"_meta": {"agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey"}}')
    proc = cli(
        "descriptor",
        str(mcp),
        "--input",
        '{"issueKey": "BUG-456"}',
        env={"ACP_PROGRESS_HEARTBEAT_INTERVAL": "fast", "ACP_PROGRESS_LOG_LEVEL": "LOUD"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "⚙️ Looking up BUG-456"


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


@pytest.mark.e2e
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
        "            self._safe(self.thinking_callback, THINKING_TITLE)",
        '            self.agent_progress_callback("start", "llm_response", {})',
    )
    assert extra != source
    (tmp_path / "extra.py").write_text(extra)
    bad = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "extra.py")], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "expected 3 hook sites" in bad.stderr


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_bad_config_stops_the_server_with_a_clear_message():
    env = {**os.environ, **agent_env(ACP_PROGRESS_HEARTBEAT_INTERVAL="fast")}
    proc = subprocess.run(
        [sys.executable, "-m", "acp_adapter"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=30
    )
    assert proc.returncode == 2
    assert "ACP_PROGRESS_HEARTBEAT_INTERVAL: expected a number" in proc.stderr
    assert proc.stdout == ""


def console_script() -> str:
    """The installed ``acp-progress`` entry point: beside this interpreter (a venv that is not
    activated), else on ``PATH``. The README installs the package, so a missing one is a failure."""
    found = shutil.which("acp-progress", path=str(Path(sys.executable).parent)) or shutil.which(
        "acp-progress"
    )
    assert found, "the acp-progress console script is not installed (pip install -e .)"
    return found


@pytest.mark.e2e
def test_console_script_watch_renders_cards_and_answer(tmp_path):
    env = {**os.environ, **agent_env()}
    proc = subprocess.run(
        [console_script(), "watch", "--embedded-delay", "0.4", "--heartbeat-interval", "0.1", "what is 2^10"],
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

    wrong_type = tmp_path / "wrong.json"
    wrong_type.write_text('{"_meta": {"agh/preview": 7}}')
    assert main(["descriptor", str(wrong_type)]) == 1
    assert "agh/preview: must be a string, got int" in capsys.readouterr().err


README_MANIFEST = '[resources.tools.issue_lookup]\nfriendly_verb = "Looking up"\npreview = "arg:issueKey"\n'
README_MCP = '{ "_meta": { "agh/friendly_verb": "Looking up", "agh/preview": "arg:issueKey" } }'


@pytest.mark.parametrize(("name", "text"), [("manifest.toml", README_MANIFEST), ("tool.json", README_MCP)])
def test_descriptor_accepts_both_readme_forms(tmp_path, capsys, name, text):
    from acp_adapter.cli import main

    path = tmp_path / name
    path.write_text(text)
    argv = ["descriptor", str(path), "--tool-id", "issue_lookup", "--input", '{"issueKey": "BUG-456"}']
    assert main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == "⚙️ Looking up BUG-456"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("m.toml", README_MANIFEST.replace("issueKey", "api_key"), "resources.tools.issue_lookup.preview:"),
        ("m.toml", README_MANIFEST.replace("friendly_verb", "friendly_verbb"), "friendly_verbb: unknown key"),
        ("m.toml", "[resources.tools.issue_lookup]\n", "resources.tools.issue_lookup: empty descriptor"),
        ("m.toml", "", "(file): empty"),
        ("m.toml", 'friendly_verb = "Looking up"\n', "friendly_verb: unknown key: expected [resources"),
        ("m.toml", README_MANIFEST + "[resources.prompts.x]\n", "resources.prompts: unknown key"),
        ("t.json", '{"_meta": {"agh/friendly_verbb": "x"}}', "_meta.agh/friendly_verbb: unknown key"),
        ("t.json", '{"_meta": {"other/thing": 1}}', "_meta: empty descriptor"),
        ("t.json", '{"nmae": "x", "_meta": {"agh/preview": "query"}}', "nmae: unknown key"),
        ("t.json", "{}", "(file): empty"),
    ],
)
def test_descriptor_rejects_unknown_keys_and_empty_descriptors_naming_the_field(
    tmp_path, capsys, name, text, message
):
    from acp_adapter.cli import main

    path = tmp_path / name
    path.write_text(text)
    assert main(["descriptor", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("invalid descriptor: ") and message in err, err


def test_descriptor_blames_a_bad_input_or_tool_id_not_the_descriptor(tmp_path, capsys):
    from acp_adapter.cli import main

    path = tmp_path / "manifest.toml"
    path.write_text(README_MANIFEST)
    assert main(["descriptor", str(path), "--input", "{not json"]) == 2
    err = capsys.readouterr().err
    assert "--input is not valid JSON" in err and "invalid descriptor" not in err
    assert main(["descriptor", str(path), "--input", "[1]"]) == 2
    assert "--input must be a JSON object" in capsys.readouterr().err
    assert main(["descriptor", str(path), "--tool-id", "nope"]) == 2
    assert "--tool-id 'nope' is not in" in capsys.readouterr().err
    assert main(["descriptor", str(tmp_path / "missing.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_packaging_truths():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT", "an SPDX string, not the deprecated table"
    assert "rich" in " ".join(project["project"]["dependencies"])
    ci = (ROOT / ".ci" / "run").read_text()
    assert not [line for line in ci.splitlines() if "--upgrade pip" in line and not line.startswith("#")]
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m venv .venv" in readme.split("<!-- ci:test -->")[0]
    # a figure, not "a few minutes": the suite's measured duration on the CI machine's 2 cores
    assert "a few minutes" not in readme and re.search(r"about\s+\d+(½)?\s+minutes\s+on\s+2\s+cores", readme)


def _subcommands() -> dict[str, str]:
    """Every subcommand the parser registers, with its help line (from the parser, not a list)."""
    import argparse

    from acp_adapter.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: helps.get(name, "") for name in action.choices}


def test_the_top_level_help_names_every_command_in_its_description(cli: Cli):
    commands = _subcommands()
    assert {"serve", "watch", "run", "relay", "bridge", "agui", "descriptor", "audit", "config"} <= set(
        commands
    )
    shown = cli("--help")
    assert shown.returncode == 0
    description = " ".join(shown.stdout.split("positional arguments:")[0].split("\n")[1:])
    listing = shown.stdout.split("positional arguments:")[1]
    for name, help_text in commands.items():
        assert re.search(rf"\b{re.escape(name)}\b", description), f"{name} missing from the description"
        assert help_text and re.search(rf"^\s+{re.escape(name)}\b", listing, re.M), f"{name} not listed"


def _config_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"ACP_PROGRESS_CONFIG_DIR": str(tmp_path), "ACP_PROGRESS_HEARTBEAT_INTERVAL": "", **extra}


SECRETS = ("sk-file-secret-0123456789abcdef", "sk-env-secret-abcdef0123456789", "agui-token-0123456789abcdef")


def _secret_config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f"""heartbeat_interval = 5
[openai]
api_key = "{SECRETS[0]}"
model = "from-file"
base_url = "http://user:{SECRETS[0]}@127.0.0.1:9/v1"
[agui]
token = "{SECRETS[2]}"
""",
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


def test_config_shows_each_value_and_where_it_came_from_never_a_secret(tmp_path, cli: Cli):
    path = _secret_config(tmp_path)
    env = _config_env(
        tmp_path, ACP_PROGRESS_OPENAI_MODEL="from-env", ACP_PROGRESS_SUMMARY_OPENAI_API_KEY=SECRETS[1]
    )
    shown = cli("config", "--summary-interval", "3", env=env)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.splitlines()
    rows = {
        line.split()[0]: line
        for line in out[out.index(next(x for x in out if x.startswith("SETTING"))) + 1 :]
    }
    assert shown.stdout.splitlines()[0] == f"settings file: {path} (read)"
    assert rows["heartbeat_interval"].split()[1:] == ["5.0", "file", str(path)]
    assert rows["openai.model"].split()[1:] == ['"from-env"', "env", "ACP_PROGRESS_OPENAI_MODEL"]
    assert rows["summary_interval"].split()[1:] == ["3.0", "flag", "--summary-interval"]
    assert rows["max_turns"].split()[1:] == ["8", "default"]
    assert rows["openai.api_key"].split()[1:] == ["[hidden]", "file", str(path)]
    assert rows["summary_openai.api_key"].split()[1:] == [
        "[hidden]",
        "env",
        "ACP_PROGRESS_SUMMARY_OPENAI_API_KEY",
    ]
    assert rows["agui.token"].split()[1] == "[hidden]"
    assert rows["openai.base_url"].split()[1] == '"http://user:[REDACTED]@127.0.0.1:9/v1"'
    assert set(rows) == set(_settings_names())
    for secret in SECRETS:
        assert secret not in shown.stdout + shown.stderr


def _settings_names() -> list[str]:
    return [name for name, _ in Settings.fields()]


def test_config_json_is_one_object_for_machines_without_secrets(tmp_path, cli: Cli):
    import json

    path = _secret_config(tmp_path)
    shown = cli("config", "--json", env=_config_env(tmp_path, OPENAI_API_KEY=SECRETS[1]))
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["configFile"] == str(path) and report["configFileFound"] is True
    settings = report["settings"]
    assert list(settings) == _settings_names()
    assert settings["heartbeat_interval"] == {
        "value": 5.0,
        "source": "file",
        "from": str(path),
        "env": "ACP_PROGRESS_HEARTBEAT_INTERVAL",
        "secret": False,
    }
    assert settings["openai.api_key"]["value"] == "[hidden]" and settings["openai.api_key"]["source"] == "env"
    assert settings["state_dir"]["value"] is None and settings["state_dir"]["source"] == "default"
    for secret in SECRETS:
        assert secret not in shown.stdout


def test_config_reports_a_bad_file_naming_it_and_exits_2(tmp_path, cli: Cli):
    (tmp_path / "config.toml").write_text("[openai]\ntimeuot = 5\n", encoding="utf-8")
    shown = cli("config", env=_config_env(tmp_path))
    assert shown.returncode == 2 and shown.stdout == ""
    assert (
        shown.stderr.strip()
        == f"acp-progress config: {tmp_path / 'config.toml'}: [openai] timeuot: is not a setting"
        " (did you mean timeout?)"
    )
    # every command reads the same file: serve stops at start-up with the same message
    serve = cli("serve", env=_config_env(tmp_path))
    assert serve.returncode == 2 and "[openai] timeuot: is not a setting" in serve.stderr


def test_the_store_flush_timeout_is_a_bounded_setting_shown_by_config(tmp_path, cli: Cli):
    import json

    (tmp_path / "config.toml").write_text("[store]\nflush_timeout = 0.5\n", encoding="utf-8")
    shown = cli("config", "--json", env=_config_env(tmp_path))
    assert shown.returncode == 0, shown.stderr
    row = json.loads(shown.stdout)["settings"]["store.flush_timeout"]
    assert (
        row["value"] == 0.5 and row["source"] == "file" and row["env"] == "ACP_PROGRESS_STORE_FLUSH_TIMEOUT"
    )
    overridden = cli("config", "--json", env=_config_env(tmp_path, ACP_PROGRESS_STORE_FLUSH_TIMEOUT="0"))
    row = json.loads(overridden.stdout)["settings"]["store.flush_timeout"]
    assert row["value"] == 0 and row["source"] == "env"
    for bad, said in (("-1", "must be >= 0"), ("301", "must be <= 300"), ("soon", "expected a number")):
        serve = cli("serve", env=_config_env(tmp_path, ACP_PROGRESS_STORE_FLUSH_TIMEOUT=bad))
        assert serve.returncode == 2, (bad, serve.stderr)
        assert f"ACP_PROGRESS_STORE_FLUSH_TIMEOUT: {said}" in serve.stderr, serve.stderr
