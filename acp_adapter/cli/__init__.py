"""The acp-progress command line: one subcommand per front-end (the top-level help lists them all).

The module imports little at the top: :func:`main`, the entry point, makes ``watch``, ``chat`` and
``run`` count Ctrl-C (:mod:`acp_adapter.frontends.interrupt`) before it imports anything else, and
everything imported before that is time a press is lost in. Importing the module changes no signal
handler: an embedder or a test that imports it keeps its own.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from acp_adapter._version import __version__
from acp_adapter.cli import _gc

if TYPE_CHECKING:  # argparse and the flag parsing load in main(), after Ctrl-C is counted
    import argparse

#: Commands that count Ctrl-C from the start (:mod:`acp_adapter.frontends.interrupt`) instead of
#: raising KeyboardInterrupt;
#: ``run`` counts until its agent loop starts, which then takes Ctrl-C as KeyboardInterrupt.
COUNTED_INTERRUPT_COMMANDS = frozenset({"watch", "chat", "run"})


def _count_interrupts_early(words: list[str]) -> None:
    """Called first thing by :func:`main` (the imports after it take time a press must not be lost in)."""
    if next((w for w in words if not w.startswith("-")), None) in COUNTED_INTERRUPT_COMMANDS:
        from acp_adapter.frontends.interrupt import install

        install()


__all__ = ["COMMANDS", "build_parser", "main"]

#: Every subcommand, in the order the help lists them, with its one-line help: each is a module of this
#: package with ``add_parser(subparsers)`` and ``run(args, settings) -> exit code`` (its own module
#: says more). The help is here, not only in the module, so ``--help`` and ``--version`` import no
#: command module (they would pull in the settings model and the protocol schema: seconds on a slow
#: machine); a test holds each module's own help to this table.
COMMANDS: dict[str, str] = {
    "serve": "serve ACP over stdio (what an editor launches)",
    "watch": "spawn an ACP agent, send a prompt, render its cards live",
    "chat": "a conversation with an ACP agent in one session (a prompt line, or stdin lines)",
    "sessions": "list an ACP agent's stored sessions (session/list)",
    "descriptor": "validate a tool presentation descriptor and show the line it renders",
    "relay": "serve ACP to an editor with CMD as the real agent; adds a think card while CMD is silent",
    "run": "run one prompt in a plain terminal, without ACP",
    "audit": "show the permission decisions kept in the session store",
    "config": "show every effective setting and where it came from (default, settings file, env, flag)",
    "bridge": "chat bridges: drive an ACP agent from a chat (Telegram, console)",
    "agui": "serve an AG-UI endpoint (HTTP + SSE) that drives an ACP agent",
}

DESCRIPTION = (
    "Make an ACP agent visibly alive: thinking spinners, tool cards and progress, in an editor, "
    "a terminal, a chat or a web page. Settings come from "
    "~/.config/acp-progress/config.toml, the environment and flags (acp-progress config shows them)."
)


def _command(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def _describe_commands(parser: argparse.ArgumentParser, commands: Iterable[str]) -> None:
    """Name every registered subcommand in the description, from the parser itself, so a new
    command can never be missing from the help's opening lines."""
    names = ", ".join(commands)
    parser.description = f"{DESCRIPTION} Commands: {names}. Run acp-progress COMMAND --help for one of them."


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given the words to parse, only the command they name is imported
    and gets its real flags (the others are listed by name and help); without words, every command
    is loaded (for tests and documentation)."""
    from acp_adapter.cli._usage import UsageParser

    chosen = _chosen_command(argv) if argv is not None else None
    parser = UsageParser(prog="acp-progress", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--setup",
        action="store_true",
        help="choose the model and its key in this terminal (the same as: serve --setup)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        if argv is None or name == chosen:
            _command(name).add_parser(sub)
        else:
            sub.add_parser(name, help=summary)
    _describe_commands(parser, sub.choices)
    return parser


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The first word that names a command (top-level options take no value, so it is the first word
    that is not an option)."""
    word = next((w for w in argv if not w.startswith("-")), None)
    return word if word in COMMANDS else None


def main(argv: Sequence[str] | None = None, *, own_process: bool | None = None) -> int:
    """Run the command ``argv`` names (``sys.argv`` when None). ``own_process``: this process was
    started to run it (the default when ``argv`` is None: the console script, ``python -m``), so
    start-up may pause the garbage collector (:mod:`._gc`); an in-process caller's is left alone."""
    words = list(sys.argv[1:] if argv is None else argv)
    _count_interrupts_early(words)  # before anything else: a Ctrl-C from now on is never lost
    if own_process if own_process is not None else argv is None:
        _gc.pause()
    from acp_adapter.cli._closed_stdout import silence_stdout, stdout_reader_gone

    try:
        return _main(words)
    except BrokenPipeError:
        if not stdout_reader_gone():  # not ours: an agent's stdin, say
            raise
        return 0  # `acp-progress … | head`: the reader had what it wanted
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling began (even mid-import)
        return 130
    except Exception as exc:
        # a Ctrl-C inside a class body being created or a pydantic schema being built (at import)
        # reaches us wrapped: a RuntimeError "Error calling __set_name__ …", a SchemaError …
        if _caused_by_ctrl_c(exc):
            return 130
        raise
    finally:
        _gc.resume()  # a command that ended before it started (--help, a bad setting) included
        silence_stdout()  # and no `Exception ignored … BrokenPipeError` from the flush at exit


def _caused_by_ctrl_c(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is anywhere in ``exc``'s cause/context chain (or in a group's
    members): a Ctrl-C that some library wrapped in its own error is still a Ctrl-C."""
    from acp_adapter.errors import exception_chain

    return any(isinstance(e, KeyboardInterrupt) for e in exception_chain(exc))


#: Commands whose stdout is not plain text: the ACP stream itself (serve, relay) or a drawing made
#: with its own escape sequences (watch, chat, run: their views make the data safe before drawing).
RAW_STDOUT = frozenset({"serve", "relay", "watch", "chat", "run"})


def _guard_terminal(command: str | None) -> None:
    """Every write to stderr — and to stdout for commands that print plain text — goes through
    the one sanitizer (:func:`~acp_adapter.safety.terminal_text.terminal_safe`)."""
    from acp_adapter.safety.terminal_text import guard_stream

    sys.stderr = guard_stream(sys.stderr)
    if command not in RAW_STDOUT:
        sys.stdout = guard_stream(sys.stdout)


def _main(argv: Sequence[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)  # --help and --version end here, before the settings model is imported
    if args.command is None and args.setup:
        # a client that runs terminal sign-in with the method's arguments alone (``acp-progress
        # --setup``) rather than appended to ``serve``: the same set-up
        args.command = "serve"
    if args.command is None:
        parser.print_help()
        return 0
    _guard_terminal(args.command)
    from acp_adapter.cli._flags import settings_from
    from acp_adapter.config import ConfigError
    from acp_adapter.safety.logging import configure_logging

    command = _command(args.command)
    if not getattr(command, "NEEDS_SETTINGS", True):
        # e.g. descriptor and config: an unrelated bad environment variable must not fail them
        configure_logging()
        _gc.resume(command)
        return int(command.run(args))
    try:
        settings = settings_from(args)
    except ConfigError as exc:
        print(exc.report("acp-progress"), file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    from acp_adapter.cli._state import check_database, warn_if_state_unusable

    settings = warn_if_state_unusable(settings, args.command)  # one line on stderr, never silent
    problem = check_database(settings, args.command)  # a shared database that is not there: stop
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    _gc.resume(command)  # the command's imports done (its prepare()), collection from here on
    return int(command.run(args, settings))
