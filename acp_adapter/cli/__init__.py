"""The acp-progress command line: one subcommand per front-end (the top-level help lists them all).

The module imports little at the top: ``watch``, ``chat`` and ``run`` count Ctrl-C from the moment
this module is imported (:mod:`.interrupt`): everything imported before that is time a press is lost in.
"""

from __future__ import annotations

import sys

#: Commands that count Ctrl-C from the start (:mod:`.interrupt`) instead of raising KeyboardInterrupt;
#: ``run`` counts until its agent loop starts, which then takes Ctrl-C as KeyboardInterrupt.
COUNTED_INTERRUPT_COMMANDS = frozenset({"watch", "chat", "run"})


def _count_interrupts_early(words: list[str]) -> None:
    """Called while this module is imported (the imports below take time a press must not be lost in)."""
    if next((w for w in words if not w.startswith("-")), None) in COUNTED_INTERRUPT_COMMANDS:
        from acp_adapter.frontends.interrupt import install

        install()


if __name__ == "__main__" or sys.argv[0].endswith("acp-progress"):
    _count_interrupts_early(sys.argv[1:])

import argparse  # noqa: E402 - after the early Ctrl-C counting above, on purpose
import os  # noqa: E402
from collections.abc import Iterable, Sequence  # noqa: E402
from typing import TYPE_CHECKING, Literal, get_args, get_origin  # noqa: E402

from acp_adapter._version import __version__  # noqa: E402

if TYPE_CHECKING:
    from acp_adapter.config import Settings

__all__ = ["build_parser", "main"]

DESCRIPTION = (
    "Make an ACP agent visibly alive: thinking spinners, tool cards and progress, in an editor, "
    "a terminal, a chat or a web page. Settings come from "
    "~/.config/acp-progress/config.toml, the environment and flags (acp-progress config shows them)."
)


def _describe_commands(parser: argparse.ArgumentParser, commands: Iterable[str]) -> None:
    """Name every registered subcommand in the description, from the parser itself, so a new
    command can never be missing from the help's opening lines."""
    names = ", ".join(commands)
    parser.description = f"{DESCRIPTION} Commands: {names}. Run acp-progress COMMAND --help for one of them."


def _settings_from(args: argparse.Namespace) -> Settings:
    """The environment, validated, with this command's flags on top (errors name the flag)."""
    from acp_adapter.config import Settings

    flags = {name: getattr(args, name, None) for name, *_ in Settings.flag_fields()}
    return Settings.load(flags=flags)


#: The progress-summary flags (--summary, --summary-interval, --summary-max-length): on serve,
#: watch and relay (and front-ends that drive an agent), not on the plain ``run``.
SUMMARY_FLAGS = frozenset({"summary", "summary_interval", "summary_max_length"})


def _add_model_flags(
    parser: argparse.ArgumentParser,
    only: frozenset[str] | None = None,
    skip: frozenset[str] = frozenset(),
) -> None:
    """One flag per flagged settings field (or those named in ``only``), validated by the settings model."""
    from acp_adapter.config import Settings

    for name, flag, metavar, help_text, annotation in Settings.flag_fields():
        if (only is not None and name not in only) or name in skip:
            continue
        if annotation is bool:
            parser.add_argument(flag, dest=name, action="store_const", const=True, help=help_text)
            continue
        choices = get_args(annotation) if get_origin(annotation) is Literal else None
        parser.add_argument(flag, dest=name, metavar=metavar, choices=choices, help=help_text)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 86400:
        raise argparse.ArgumentTypeError(f"must be between 0 and 86400 seconds, got {text}")
    return value


def _add_init_timeout_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--init-timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the agent to answer initialize (default 30)",
    )


def _add_agent_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        help="command line of the ACP agent to spawn (default: this project's agent, python -m acp_adapter)",
    )


def _add_frontend_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``watch`` and ``chat`` share."""
    _add_agent_flag(parser)
    parser.add_argument("--cwd", default=os.getcwd(), help="session workspace (default: current directory)")
    parser.add_argument("--yes", action="store_true", help="allow permission requests without asking")
    parser.add_argument("--no-animation", action="store_true", help="plain line output even on a terminal")
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per line: each session update as received, permission requests and "
        "answers, and a final {stopReason} or {error} per turn",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="ID", help="load this stored session (session/load) and go on")
    which.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="load the newest stored session of --cwd and go on",
    )
    parser.add_argument(
        "--agent-log", metavar="FILE", help="write the agent's stderr to FILE (default: discarded)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acp-progress", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve ACP over stdio (what an editor launches)")
    _add_model_flags(serve)

    watch = sub.add_parser("watch", help="spawn an ACP agent, send a prompt, render its cards live")
    watch.add_argument("prompt", nargs="+", help="the prompt text ('-': read it from stdin)")
    _add_frontend_flags(watch)
    _add_init_timeout_flag(watch)
    _add_model_flags(watch)

    chat = sub.add_parser(
        "chat", help="a conversation with an ACP agent in one session (a prompt line, or stdin lines)"
    )
    _add_frontend_flags(chat)
    _add_init_timeout_flag(chat)
    _add_model_flags(chat)

    sessions = sub.add_parser("sessions", help="list an ACP agent's stored sessions (session/list)")
    _add_agent_flag(sessions)
    sessions.add_argument("--cwd", default=None, help="only the sessions of this workspace (default: all)")
    sessions.add_argument("--json", action="store_true", help="one JSON object (SessionInfo) per line")
    _add_init_timeout_flag(sessions)

    describe = sub.add_parser(
        "descriptor", help="validate a tool presentation descriptor and show the line it renders"
    )
    describe.add_argument(
        "file",
        help="a TOML (or JSON) extension manifest with [resources.tools.ID] friendly_verb/preview, "
        "or a JSON MCP tool object whose _meta has agh/friendly_verb/agh/preview",
    )
    describe.add_argument(
        "--tool-id",
        help="the tool to render: one of a manifest's [resources.tools.ID] (default: each), "
        "or the id of an MCP tool (default: its name)",
    )
    describe.add_argument("--input", default="{}", help="sample tool input as JSON (default: {})")

    relay = sub.add_parser(
        "relay",
        help="serve ACP to an editor with CMD as the real agent; adds a think card while CMD is silent",
        usage="%(prog)s [options] -- CMD [ARGS ...]",
    )
    relay.add_argument(
        "--think-after",
        type=_positive_seconds,
        default=0.5,
        metavar="SECONDS",
        help="open a think card after this long without an update from the agent (default 0.5)",
    )
    relay.add_argument("--no-think", action="store_true", help="forward only; never inject a think card")
    _add_model_flags(
        relay, only=frozenset({"heartbeat_interval", "heartbeat_disabled", "log_level"}) | SUMMARY_FLAGS
    )
    relay.add_argument("agent_command", nargs=argparse.REMAINDER, metavar="CMD", help="the ACP agent to wrap")

    run = sub.add_parser("run", help="run one prompt in a plain terminal, without ACP")
    run.add_argument("prompt", nargs="+", help="the prompt text")
    run.add_argument("--cwd", default=os.getcwd(), help="workspace for the agent's tools")
    run.add_argument(
        "--yes", action="store_true", help="allow shell commands without asking (default: ask on a terminal)"
    )
    _add_model_flags(run, skip=SUMMARY_FLAGS)

    audit = sub.add_parser("audit", help="show the permission decisions kept in the session store")
    audit.add_argument("--limit", type=int, default=50, metavar="N", help="newest N decisions (default 50)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")

    config = sub.add_parser(
        "config",
        help="show every effective setting and where it came from (default, settings file, env, flag)",
        description="Show every effective setting and its source: its default, the settings file "
        "(~/.config/acp-progress/config.toml, or $ACP_PROGRESS_CONFIG_DIR/config.toml, or "
        "$XDG_CONFIG_HOME/acp-progress/config.toml), an environment variable or a flag given here. "
        "Secrets are never printed.",
    )
    config.add_argument("--json", action="store_true", help="one JSON object for machines")
    _add_model_flags(config)

    from acp_adapter.cli.bridge import add_bridge_parser

    add_bridge_parser(sub)

    from acp_adapter.cli.agui import add_agui_parser

    add_agui_parser(sub)
    _describe_commands(parser, sub.choices)
    return parser


def check_descriptor(path: str, tool_id: str | None, sample_input: str) -> int:
    """Validate a descriptor exactly as the agent would, and print the line(s) it renders."""
    from acp_adapter.tooling.descriptor import InputError, check_file
    from acp_adapter.tooling.presentation import DescriptorError

    try:
        lines = check_file(path, tool_id, sample_input)
    except InputError as exc:
        print(f"acp-progress descriptor: {exc}", file=sys.stderr)
        return 2
    except DescriptorError as exc:
        print(f"invalid descriptor: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def _relay(parser: argparse.ArgumentParser, args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from acp_adapter.client.driver import AgentStartError, parse_agent_command
    from acp_adapter.config import ConfigError
    from acp_adapter.frontends.relay import RelayOptions, run_relay
    from acp_adapter.protocol import StreamLimits

    command = list(args.agent_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error("relay: give the agent to wrap after --, e.g. acp-progress relay -- npx my-acp-agent")
    try:
        argv = parse_agent_command(command[0] if len(command) == 1 and " " in command[0] else command)
    except AgentStartError as exc:
        print(f"acp-progress relay: {exc}", file=sys.stderr)
        return 2
    from acp_adapter.summary import SummaryFactory

    try:
        summaries = SummaryFactory.from_settings(settings, default_mode="off")  # off unless asked for
    except ConfigError as exc:
        print(f"acp-progress relay: {exc}", file=sys.stderr)
        return 2
    options = RelayOptions(
        think_after=None if args.no_think else args.think_after,
        heartbeat=None if settings.heartbeat_disabled else settings.heartbeat_interval,
        summary=summaries,
        limits=StreamLimits.from_settings(settings.streams),
    )
    return anyio.run(run_relay, argv, options, backend="asyncio")


def _audit(args: argparse.Namespace, settings: Settings) -> int:
    from pathlib import Path

    from acp_adapter.store import open_store
    from acp_adapter.store.report import audit_json_lines, audit_lines

    if not settings.state:
        print("acp-progress audit: the session store is off (ACP_PROGRESS_STATE=off)", file=sys.stderr)
        return 2
    if args.limit < 1:
        print("acp-progress audit: --limit must be at least 1", file=sys.stderr)
        return 2
    directory = Path(settings.state_dir).expanduser() if settings.state_dir else None
    store = open_store(directory, retention_days=0)
    try:
        decisions = store.permission_audit(args.limit)
    finally:
        store.close()
    for line in (audit_json_lines if args.json else audit_lines)(decisions):
        print(line)
    return 0


def _config(args: argparse.Namespace) -> int:
    import json

    from acp_adapter.cli.config import config_json, config_lines
    from acp_adapter.config import ConfigError, Settings

    flags = {name: getattr(args, name, None) for name, *_ in Settings.flag_fields()}
    try:
        loaded = Settings.load_with_sources(flags=flags)
    except ConfigError as exc:
        print(f"acp-progress config: {exc}", file=sys.stderr)
        return 2
    text = (
        json.dumps(config_json(loaded), ensure_ascii=False) if args.json else "\n".join(config_lines(loaded))
    )
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `acp-progress config | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    _count_interrupts_early(words)  # before anything else: a Ctrl-C from now on is never lost
    try:
        return _main(words)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling began (even mid-import)
        return 130
    except RuntimeError as exc:
        # a Ctrl-C inside a class body being created (pydantic models, at import) reaches us
        # wrapped: "Error calling __set_name__ …" caused by the KeyboardInterrupt
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            return 130
        raise


def _main(argv: Sequence[str]) -> int:
    from acp_adapter.config import ConfigError
    from acp_adapter.safety.logging import configure_logging

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "descriptor":
        # Needs no settings: an unrelated bad environment variable must not fail it.
        configure_logging()
        return check_descriptor(args.file, args.tool_id, args.input)
    if args.command == "config":
        configure_logging()
        return _config(args)
    try:
        settings = _settings_from(args)
    except ConfigError as exc:
        print(f"acp-progress: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    if args.command == "serve":
        import anyio

        from acp_adapter.server import serve

        try:
            anyio.run(serve, settings, backend="asyncio")
        except ConfigError as exc:
            print(f"acp-progress: {exc}", file=sys.stderr)
            return 2
        from acp_adapter.server import exit_if_turns_stuck

        exit_if_turns_stuck()  # the editor hung up: a turn ignoring cancel must not keep us alive
        return 0
    if args.command == "bridge":
        from acp_adapter.cli.bridge import run_bridge_command

        return run_bridge_command(args)
    if args.command == "agui":
        from acp_adapter.cli.agui import run_agui_command

        return run_agui_command(args)
    if args.command == "relay":
        return _relay(parser, args, settings)
    if args.command == "audit":
        return _audit(args, settings)
    if args.command == "watch":
        from acp_adapter.frontends.watch.watcher import run_watch

        return run_watch(args, settings)
    if args.command == "chat":
        from acp_adapter.frontends.watch.chat import run_chat

        return run_chat(args, settings)
    if args.command == "sessions":
        from acp_adapter.frontends.watch.sessions import run_sessions

        return run_sessions(args, settings)
    from acp_adapter.frontends.interrupt import interrupts
    from run_agent import run_plain

    if interrupts.count:  # Ctrl-C while starting: nothing ran
        return 130
    import signal

    if signal.getsignal(signal.SIGINT) == interrupts._press:  # the loop takes Ctrl-C as KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if interrupts.count:
            return 130
    return run_plain(" ".join(args.prompt), args.cwd, settings, yes=args.yes)


if __name__ == "__main__":
    sys.exit(main())
