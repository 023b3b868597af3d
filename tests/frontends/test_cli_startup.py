"""``--help`` and ``--version`` are fast: they import no command module, so
neither the settings model nor the protocol schema; the listed help is each command's own."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

import pytest

from acp_adapter.cli import COMMANDS, build_parser
from tests.helpers.acp_agent import agent_env

HEAVY = ("acp", "pydantic", "acp_adapter.config", "rich", "anyio")


def test_the_listed_help_is_each_commands_own() -> None:
    sub = argparse.ArgumentParser().add_subparsers()
    for name in COMMANDS:
        importlib.import_module(f"acp_adapter.cli.{name}").add_parser(sub)
    assert {a.dest: a.help for a in sub._choices_actions} == COMMANDS


@pytest.mark.e2e
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


# ------------------------------------------------------------- the collector paused during start-up

_GC_PROBE = (
    "import gc, sys\n"
    "from acp_adapter.cli import main, _gc\n"
    "seen = []\n"
    "real_resume = _gc.resume\n"
    "def resume(command=None):\n"
    "    seen.append(gc.isenabled())\n"
    "    real_resume(command)\n"
    "_gc.resume = resume\n"
    "try:\n    code = main(sys.argv[2:], own_process=sys.argv[1] == 'own')\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "print('STATE', code, seen[0] if seen else None, gc.isenabled(), gc.get_freeze_count() > 0)\n"
)


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("words", "code"),
    [(["config"], 0), (["--help"], 0), (["watch", "--heartbeat-interval", "-1", "hi"], 2)],
)
def test_a_commands_own_process_imports_with_the_collector_paused_then_resumes_it(
    words: list[str], code: int
) -> None:
    """Started as a command, the process imports with automatic collection off, then freezes what
    start-up built and collects again — whether the command runs, prints its help or stops at a
    bad setting. Called inside another process, main() leaves that process's collector alone."""
    for mode, expected in (("own", f"STATE {code} False True True"), ("in", f"STATE {code} True True False")):
        done = subprocess.run(
            [sys.executable, "-c", _GC_PROBE, mode, *words],
            capture_output=True,
            text=True,
            env=agent_env(),
            timeout=60,
        )
        assert expected in done.stdout, f"{mode}: {done.stdout}{done.stderr}"


@pytest.mark.e2e
def test_serve_prepares_its_imports_before_the_collector_resumes() -> None:
    """``serve``'s prepare() loads the server and the agent loop, so their imports (the protocol
    schema among them) run with the collector paused; a Ctrl-C while they load still restarts it."""
    probe = (
        "import gc, sys\n"
        "from acp_adapter.cli import _gc, serve\n"
        "_gc.pause()\n"
        "_gc.resume(serve)\n"
        "print('LOADED', 'acp_adapter.server' in sys.modules, 'run_agent' in sys.modules, gc.isenabled())\n"
        "class Interrupting:\n"
        "    @staticmethod\n"
        "    def prepare():\n"
        "        raise KeyboardInterrupt\n"
        "_gc.pause()\n"
        "try:\n    _gc.resume(Interrupting)\nexcept KeyboardInterrupt:\n    pass\n"
        "print('AFTER CTRL-C', gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=agent_env(), timeout=60
    )
    assert "LOADED True True True" in done.stdout and "AFTER CTRL-C True" in done.stdout, (
        done.stdout + done.stderr
    )


#: what ``serve`` leaves for later: the MCP SDK (until a session has a server), the summary package,
#: the terminal printer and the redactor's compiled patterns (until the first redaction)
DEFERRED = (
    "mcp",
    "acp_adapter.summary",
    "acp_adapter.frontends.plain.printer",
    "acp_adapter.safety.redact.engine",
    "acp_adapter.safety.redact.passes",
)


@pytest.mark.e2e
def test_serve_prepares_its_imports_without_what_its_first_answer_does_not_need() -> None:
    """A cold start pays only for what initialize and session/new need: serve's prepared imports
    (the server, the agent loop) load none of the deferred modules."""
    probe = (
        "import sys\n"
        "from acp_adapter.cli import serve\n"
        "serve.prepare()\n"
        f"print('DEFERRED LOADED', sorted(m for m in {DEFERRED!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=agent_env(), timeout=60
    )
    assert "DEFERRED LOADED []" in done.stdout, done.stdout + done.stderr
