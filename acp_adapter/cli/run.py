"""``acp-progress run``: one prompt in a plain terminal, with no ACP client (the routing order's last
channel). The agent loop comes from ``run_agent.py``, which only the command line imports; the
front-end itself is :mod:`acp_adapter.frontends.plain.run`."""

from __future__ import annotations

import argparse
import os
import signal
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import SUMMARY_FLAGS, add_mcp_config_flag, add_model_flags, mcp_servers_of

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    run_parser = sub.add_parser("run", help="run one prompt in a plain terminal, without ACP")
    run_parser.add_argument("prompt", nargs="+", help="the prompt text")
    run_parser.add_argument("--cwd", default=os.getcwd(), help="workspace for the agent's tools")
    run_parser.add_argument(
        "--yes", action="store_true", help="allow shell commands without asking (default: ask on a terminal)"
    )
    add_mcp_config_flag(run_parser)
    add_model_flags(run_parser, skip=SUMMARY_FLAGS)


def prepare() -> None:
    """What :func:`run` imports, loaded while start-up has the garbage collector paused
    (:mod:`acp_adapter.cli._gc`)."""
    import acp_adapter.frontends.plain.run  # noqa: F401
    import run_agent  # noqa: F401


def run(args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.frontends.interrupt import interrupts
    from acp_adapter.frontends.plain.run import run_plain
    from run_agent import AIAgent

    if interrupts.count:  # Ctrl-C while starting: nothing ran
        return 130
    mcp_servers = mcp_servers_of(args, "run")
    if mcp_servers is None:
        return 2
    if signal.getsignal(signal.SIGINT) == interrupts._press:  # the loop takes Ctrl-C as KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if interrupts.count:
            return 130
    return run_plain(
        " ".join(args.prompt), args.cwd, settings, agent_loop=AIAgent, yes=args.yes, mcp_servers=mcp_servers
    )
