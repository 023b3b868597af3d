"""``acp-progress sessions``: list any ACP agent's stored sessions (``session/list``, every page)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from acp_adapter.cli._flags import add_agent_flag, add_init_timeout_flag

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    sessions = sub.add_parser("sessions", help="list an ACP agent's stored sessions (session/list)")
    add_agent_flag(sessions)
    sessions.add_argument("--cwd", default=None, help="only the sessions of this workspace (default: all)")
    sessions.add_argument("--json", action="store_true", help="one JSON object (SessionInfo) per line")
    add_init_timeout_flag(sessions)


async def _sessions(args: argparse.Namespace, settings: Settings, cwd: str | None) -> int:
    from acp_adapter.client.driver import AgentDriver, AgentError
    from acp_adapter.frontends.watch.sessions import session_line, updated_key
    from acp_adapter.frontends.watch.watcher import agent_env

    try:
        async with AgentDriver(
            args.agent,
            env=agent_env(settings),
            init_timeout=args.init_timeout,
            client_name="acp-progress-sessions",
        ) as driver:
            sessions = await driver.list_sessions(cwd=cwd)
    except AgentError as exc:
        print(f"acp-progress sessions: {exc}", file=sys.stderr)
        return 2
    sessions.sort(key=updated_key, reverse=True)
    for info in sessions:
        if args.json:
            print(json.dumps(info.model_dump(mode="json", by_alias=True, exclude_none=True)))
        else:
            print(session_line(info))
    if not sessions and not args.json:
        print("no sessions" + (f" in {cwd}" if cwd else ""), file=sys.stderr)
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.frontends.watch.watcher import quiet_broken_stdout

    cwd: str | None = None
    if args.cwd is not None:
        cwd = os.path.abspath(args.cwd)
        if not os.path.isdir(cwd):
            print(f"acp-progress sessions: --cwd {args.cwd!r} is not a directory", file=sys.stderr)
            return 2
    try:
        return asyncio.run(_sessions(args, settings, cwd))
    except KeyboardInterrupt:
        return 130
    finally:
        quiet_broken_stdout()
