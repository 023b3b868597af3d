"""``--help`` and ``--version`` are fast (issue 31 point 6): they import no command module, so
neither the settings model nor the protocol schema; the listed help is each command's own."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from acp_adapter.cli import COMMANDS, build_parser

from .conftest import agent_env

HEAVY = ("acp", "pydantic", "acp_adapter.config", "rich", "anyio")


def test_the_listed_help_is_each_commands_own() -> None:
    sub = argparse.ArgumentParser().add_subparsers()
    for name in COMMANDS:
        importlib.import_module(f"acp_adapter.cli.{name}").add_parser(sub)
    assert {a.dest: a.help for a in sub._choices_actions} == COMMANDS


@pytest.mark.parametrize("words", [["--version"], ["--help"], []])
def test_the_top_level_imports_no_command(words: list[str]) -> None:
    probe = (
        "import sys\n"
        "from acp_adapter.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *words], capture_output=True, text=True, env=agent_env(), timeout=60
    )
    assert "LOADED []" in done.stdout, done.stdout + done.stderr
    assert "acp-progress" in done.stdout


def test_a_command_gets_its_own_flags_and_the_others_are_listed() -> None:
    parser = build_parser(["watch", "--yes", "hi"])
    args = parser.parse_args(["watch", "--yes", "hi"])
    assert args.command == "watch" and args.yes
    assert "sessions" in parser.format_help() and "serve ACP over stdio" in parser.format_help()
