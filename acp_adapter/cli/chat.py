"""``acp-progress chat``: a conversation with any ACP agent in one session."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import add_frontend_flags, mcp_servers_of

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    chat = sub.add_parser(
        "chat", help="a conversation with an ACP agent in one session (a prompt line, or stdin lines)"
    )
    add_frontend_flags(chat)


def prepare() -> None:
    """What :func:`run` imports, loaded while start-up has the garbage collector paused
    (:mod:`acp_adapter.cli._gc`)."""
    import acp_adapter.frontends.watch.chat  # noqa: F401


def run(args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.frontends.watch.chat import run_chat

    mcp_servers = mcp_servers_of(args, "chat")  # checked before anything starts
    if mcp_servers is None:
        return 2
    args.mcp_servers = mcp_servers
    return run_chat(args, settings)
