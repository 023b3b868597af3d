"""Summary settings: variables, flags, the per-front-end default, start-up errors that name the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from acp_adapter.cli import build_parser
from acp_adapter.config import ConfigError, Settings
from acp_adapter.summary import EmbeddedGenerator, ModelGenerator, SummaryFactory, from_settings, resolve_mode
from tests.helpers.acp_agent import ROOT, agent_env


def test_defaults() -> None:
    s = Settings.from_env({})
    assert (s.summary, s.summary_interval, s.summary_max_length, s.summary_guidance) == (
        "auto",
        10.0,
        180,
        None,
    )
    assert s.summary_openai.timeout == 20.0 and s.summary_openai.api_key == ""


def test_the_default_mode_differs_per_front_end() -> None:
    auto = Settings.from_env({})
    assert resolve_mode(auto, "embedded") == "embedded"  # watch, bridges, AG-UI
    assert resolve_mode(auto, "off") == "off"  # serve, relay
    assert SummaryFactory.from_settings(auto, default_mode="off") is None
    chosen = Settings.from_env({"ACP_PROGRESS_SUMMARY": "Embedded"})
    assert resolve_mode(chosen, "off") == "embedded"
    assert resolve_mode(Settings.from_env({"ACP_PROGRESS_SUMMARY": "off"}), "embedded") == "off"


def test_values_reach_the_factory() -> None:
    s = Settings.from_env(
        {
            "ACP_PROGRESS_SUMMARY": "embedded",
            "ACP_PROGRESS_SUMMARY_INTERVAL": "0",
            "ACP_PROGRESS_SUMMARY_MAX_LENGTH": "60",
            "ACP_PROGRESS_SUMMARY_GUIDANCE": "Mention the file names.",
        }
    )
    factory = SummaryFactory.from_settings(s, default_mode="off")
    assert factory is not None and isinstance(factory.generator, EmbeddedGenerator)
    summary = factory.create(user_text="x")
    assert (summary.interval, summary.max_length) == (0.0, 60)
    assert factory.prompt.system.endswith("Mention the file names.")


def test_the_summary_model_is_configured_on_its_own() -> None:
    s = Settings.from_env(
        {
            "ACP_PROGRESS_SUMMARY": "openai",
            "OPENAI_BASE_URL": "http://primary.invalid/v1",
            "OPENAI_API_KEY": "primary-key",
            "ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "ACP_PROGRESS_SUMMARY_OPENAI_MODEL": "tiny-summarizer",
            "ACP_PROGRESS_SUMMARY_OPENAI_API_KEY": "summary-key",
            "ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT": "3",
        }
    )
    factory = SummaryFactory.from_settings(s)
    assert factory is not None
    gen = factory.generator
    assert isinstance(gen, ModelGenerator)
    assert (gen.base_url, gen.model, gen._key, gen.timeout) == (
        "http://127.0.0.1:9/v1",
        "tiny-summarizer",
        "summary-key",
        3.0,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"ACP_PROGRESS_SUMMARY": "on"},
            "ACP_PROGRESS_SUMMARY: expected one of auto, off, embedded or openai, got 'on'",
        ),
        ({"ACP_PROGRESS_SUMMARY_INTERVAL": "soon"}, "ACP_PROGRESS_SUMMARY_INTERVAL: expected a number"),
        ({"ACP_PROGRESS_SUMMARY_INTERVAL": "-1"}, "ACP_PROGRESS_SUMMARY_INTERVAL: must be >= 0"),
        (
            {"ACP_PROGRESS_SUMMARY_INTERVAL": "0.001"},
            "ACP_PROGRESS_SUMMARY_INTERVAL: must be 0 (event-driven) or at least",
        ),
        ({"ACP_PROGRESS_SUMMARY_INTERVAL": "nan"}, "ACP_PROGRESS_SUMMARY_INTERVAL: must be a finite number"),
        ({"ACP_PROGRESS_SUMMARY_MAX_LENGTH": "5"}, "ACP_PROGRESS_SUMMARY_MAX_LENGTH: must be >= 20"),
        ({"ACP_PROGRESS_SUMMARY_MAX_LENGTH": "100000"}, "ACP_PROGRESS_SUMMARY_MAX_LENGTH: must be <= 1000"),
        (
            {"ACP_PROGRESS_SUMMARY_MAX_LENGTH": "1.5"},
            "ACP_PROGRESS_SUMMARY_MAX_LENGTH: expected a whole number",
        ),
        (
            {"ACP_PROGRESS_SUMMARY_GUIDANCE": "x" * 2001},
            "ACP_PROGRESS_SUMMARY_GUIDANCE: must be at most 2000 characters",
        ),
        ({"ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT": "0"}, "ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT: must be > 0"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert str(info.value).startswith(message)


def test_flag_errors_name_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"^--summary-interval: must be >= 0, got '-2'$"):
        Settings.load({}, flags={"summary_interval": "-2"})
    with pytest.raises(ConfigError, match=r"^--summary-max-length: must be >= 20"):
        Settings.load({}, flags={"summary_max_length": "3"})


def test_a_bad_summary_url_is_a_start_up_error() -> None:
    with pytest.raises(ConfigError, match=r"^ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL: expected an http"):
        Settings.from_env(
            {"ACP_PROGRESS_SUMMARY": "openai", "ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL": "localhost:11434"}
        )


def test_the_flags_are_on_serve_watch_and_relay_not_on_run() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["serve", "--summary", "embedded", "--summary-interval", "0", "--summary-max-length", "90"]
    )
    assert (args.summary, args.summary_interval, args.summary_max_length) == ("embedded", "0", "90")
    args = parser.parse_args(["watch", "--summary", "off", "hi"])
    assert args.summary == "off"
    args = parser.parse_args(["relay", "--summary", "openai", "--summary-interval", "5", "--", "agent"])
    assert (args.summary, args.summary_interval) == ("openai", "5")
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--summary", "embedded", "hi"])


def test_from_settings_is_none_when_off_and_cheap_per_turn() -> None:
    off = Settings.from_env({"ACP_PROGRESS_SUMMARY": "off"})
    assert from_settings(off) is None
    on = Settings.from_env({"ACP_PROGRESS_SUMMARY": "embedded"})
    a, b = from_settings(on, user_text="a"), from_settings(on, user_text="b")
    assert a is not None and b is not None and a is not b
    assert a.generator is b.generator, "one generator per distinct settings"


def test_watch_keeps_the_agent_from_running_a_second_summarizer() -> None:
    from acp_adapter.frontends.watch.watcher import agent_env

    env = agent_env(Settings.from_env({"ACP_PROGRESS_SUMMARY": "openai"}))
    assert env["ACP_PROGRESS_SUMMARY"] == "off"


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["serve", "relay"])
def test_a_bad_variable_stops_start_up_with_its_name(command: str) -> None:
    argv = [sys.executable, "-m", "acp_adapter.cli", command] + (["--", "cat"] if command == "relay" else [])
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env={**os.environ, **agent_env(), "ACP_PROGRESS_SUMMARY_MAX_LENGTH": "lots"},
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "ACP_PROGRESS_SUMMARY_MAX_LENGTH: expected a whole number, got 'lots'" in proc.stderr
