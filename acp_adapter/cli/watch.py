"""``acp-progress watch``: one prompt to any ACP agent, its cards drawn live (or as JSON lines)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import add_frontend_flags, mcp_servers_of

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    watch = sub.add_parser("watch", help="spawn an ACP agent, send a prompt, render its cards live")
    watch.add_argument("prompt", nargs="+", help="the prompt text ('-': read it from stdin)")
    add_frontend_flags(watch)


def prepare() -> None:
    """What :func:`run` imports, loaded while start-up has the garbage collector paused
    (:mod:`acp_adapter.cli._gc`)."""
    import acp_adapter.frontends.watch.watcher  # noqa: F401


def run(args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.frontends.watch.watcher import run_watch

    mcp_servers = mcp_servers_of(args, "watch")  # checked before anything starts
    if mcp_servers is None:
        return 2
    args.mcp_servers = mcp_servers
    return run_watch(args, settings)
