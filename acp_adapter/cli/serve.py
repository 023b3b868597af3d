"""``acp-progress serve``: ACP over stdio, what an editor launches (also ``python -m acp_adapter``).

This is where the agent loop of ``run_agent.py`` is handed to the server: the command line is the
composition root, so the server itself never imports the top-level script.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import add_model_flags

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve ACP over stdio (what an editor launches)")
    add_model_flags(serve)
    serve.add_argument(
        "--setup",
        action="store_true",
        help="instead of serving: choose the model (embedded, or an OpenAI-compatible endpoint and "
        "its key, checked) in this terminal and save it in the settings file; what an editor runs "
        "for the terminal sign-in",
    )


def prepare() -> None:
    """What :func:`run` imports, loaded while start-up has the garbage collector paused
    (:mod:`acp_adapter.cli._gc`): the server, the SDK's schema under it, the agent loop, and what
    serving loads on its way to the first answer (the stdio guard, the default model, anyio's
    streams)."""
    import anyio.abc
    import anyio.lowlevel
    import anyio.streams.memory  # noqa: F401

    import acp_adapter.models.embedded
    import acp_adapter.protocol.stdio
    import acp_adapter.server  # noqa: F401
    import run_agent  # noqa: F401


def run(args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "setup", False):
        from acp_adapter.cli.setup import run_setup

        return run_setup(settings)
    import anyio

    from acp_adapter.config import ConfigError
    from acp_adapter.server import exit_if_turns_stuck, serve
    from run_agent import AIAgent

    try:
        served = anyio.run(functools.partial(serve, settings, turn_runner=AIAgent), backend="asyncio")
    except ConfigError as exc:
        print(exc.report("acp-progress"), file=sys.stderr)
        return 2
    exit_if_turns_stuck(served)  # the editor hung up: a turn ignoring cancel must not keep us alive
    return 0
