"""``acp-progress relay -- CMD``: serve ACP to an editor with CMD as the real agent."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import SUMMARY_FLAGS, add_model_flags, positive_seconds

if TYPE_CHECKING:
    from acp_adapter.config import Settings
    from acp_adapter.frontends.relay import RelayOptions


def add_parser(sub: Any) -> None:
    relay = sub.add_parser(
        "relay",
        help="serve ACP to an editor with CMD as the real agent; adds a think card while CMD is silent",
        usage="%(prog)s [options] -- CMD [ARGS ...]",
    )
    relay.add_argument(
        "--think-after",
        type=positive_seconds,
        default=0.5,
        metavar="SECONDS",
        help="open a think card after this long without an update from the agent (default 0.5)",
    )
    relay.add_argument("--no-think", action="store_true", help="forward only; never inject a think card")
    add_model_flags(
        relay, only=frozenset({"heartbeat_interval", "heartbeat_disabled", "log_level"}) | SUMMARY_FLAGS
    )
    relay.add_argument("agent_command", nargs=argparse.REMAINDER, metavar="CMD", help="the ACP agent to wrap")
    relay.set_defaults(subparser=relay)


def prepare() -> None:
    """What :func:`run` imports, loaded while start-up has the garbage collector paused
    (:mod:`acp_adapter.cli._gc`)."""
    import acp_adapter.client.driver
    import acp_adapter.frontends.relay  # noqa: F401


def run(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from acp_adapter.frontends.relay import run_relay

    chosen = relay_options(args, settings)
    if isinstance(chosen, int):
        return chosen
    argv, options = chosen
    return anyio.run(run_relay, argv, options, backend="asyncio")


def relay_options(args: argparse.Namespace, settings: Settings) -> tuple[list[str], RelayOptions] | int:
    """The agent's argv and the relay's options from the command line, or the exit code of a
    usage error (said on stderr)."""
    from acp_adapter.client.driver import AgentStartError, parse_agent_command
    from acp_adapter.config import ConfigError
    from acp_adapter.frontends.relay import RelayOptions
    from acp_adapter.protocol import StreamLimits
    from acp_adapter.summary import SummaryFactory

    command = list(args.agent_command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        args.subparser.error(
            "relay: give the agent to wrap after --, e.g. acp-progress relay -- npx my-acp-agent"
        )
    try:
        argv = parse_agent_command(command[0] if len(command) == 1 and " " in command[0] else command)
    except AgentStartError as exc:
        print(f"acp-progress relay: {exc}", file=sys.stderr)
        return 2
    try:
        summaries = SummaryFactory.from_settings(settings, default_mode="off")  # off unless asked for
    except ConfigError as exc:
        print(exc.report("acp-progress relay"), file=sys.stderr)
        return 2
    options = RelayOptions(
        think_after=None if args.no_think else args.think_after,
        heartbeat=None if settings.heartbeat_disabled else settings.heartbeat_interval,
        summary=summaries,
        limits=StreamLimits.from_settings(settings.streams),
        stop_grace=settings.relay_stop_grace,
    )
    return argv, options
