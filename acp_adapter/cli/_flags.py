"""Flags several subcommands share, and turning a command's flags into validated settings.

Each flag that maps to a setting is generated from the settings model (:meth:`Settings.flag_fields`),
so a flag and its environment variable can never disagree about names or validation.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

if TYPE_CHECKING:
    from acp_adapter.config import Settings

#: The progress-summary flags (--summary, --summary-interval, --summary-max-length): on serve,
#: watch and relay (and front-ends that drive an agent), not on the plain ``run``.
SUMMARY_FLAGS = frozenset({"summary", "summary_interval", "summary_max_length"})


def settings_from(args: argparse.Namespace) -> Settings:
    """The environment, validated, with this command's flags on top (errors name the flag)."""
    from acp_adapter.config import Settings

    return Settings.load(flags=setting_flags(args))


def setting_flags(args: argparse.Namespace) -> dict[str, object]:
    """The values of every settings flag this command has (``None`` where it was not given)."""
    from acp_adapter.config import Settings

    return {name: getattr(args, name, None) for name, *_ in Settings.flag_fields()}


def add_model_flags(
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


def positive_seconds(text: str, limit: float = 86400) -> float:
    """A number of seconds in (0, limit), as an argparse type (the message says what was wrong)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < limit:
        raise argparse.ArgumentTypeError(f"must be between 0 and {limit:g} seconds, got {text}")
    return value


def add_init_timeout_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--init-timeout",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the agent to answer initialize (default 30)",
    )


def add_agent_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        help="command line of the ACP agent to spawn (default: this project's agent, python -m acp_adapter)",
    )


def add_agent_log_flag(parser: argparse.ArgumentParser, what: str = "write") -> None:
    parser.add_argument(
        "--agent-log", metavar="FILE", help=f"{what} the agent's stderr to FILE (default: discarded)"
    )


def add_frontend_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``watch`` and ``chat`` share."""
    add_agent_flag(parser)
    parser.add_argument("--cwd", default=os.getcwd(), help="session workspace (default: current directory)")
    parser.add_argument("--yes", action="store_true", help="allow permission requests without asking")
    parser.add_argument("--no-animation", action="store_true", help="plain line output even on a terminal")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show the agent's thoughts in full (default: folded to their last lines)",
    )
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
    add_agent_log_flag(parser)
    add_init_timeout_flag(parser)
    add_mcp_config_flag(parser)
    add_model_flags(parser)


def add_mcp_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mcp-config",
        metavar="FILE",
        help='MCP servers for the agent, sent in session/new: a JSON file {"mcpServers": {"NAME": '
        '{"command": ..., "args": [...], "env": {...}} or {"url": ..., "headers": {...}}}} (the form '
        "Claude Desktop, Cursor and VS Code use); added to the settings file's [mcp_servers]",
    )


def mcp_servers_of(args: argparse.Namespace, command: str) -> list[Any] | None:
    """The MCP servers this command hands its agent (the settings file's ``[mcp_servers]`` and
    ``--mcp-config``); None after saying on stderr what is wrong with them (the command exits 2
    before starting anything)."""
    from acp_adapter.mcp.config import McpConfigError, frontend_servers

    try:
        return frontend_servers(getattr(args, "mcp_config", None))
    except McpConfigError as exc:
        print(f"acp-progress {command}: MCP servers: {exc}", file=sys.stderr)
        return None
