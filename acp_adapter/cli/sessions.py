"""``acp-progress sessions``: list any ACP agent's stored sessions (``session/list``, every page to
the end, with a header and each session's workspace), and ``sessions delete ID…`` (``session/delete``)."""

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
    sessions = sub.add_parser(
        "sessions",
        help="list an ACP agent's stored sessions (session/list)",
        description="List the agent's stored sessions, newest first (every page), or remove sessions "
        "for good with: acp-progress sessions delete ID [ID ...]",
    )
    sessions.add_argument(
        "action", nargs="?", choices=("list", "delete"), default="list", help="list (default) or delete"
    )
    sessions.add_argument("ids", nargs="*", metavar="ID", help="the sessions to delete")
    add_agent_flag(sessions)
    sessions.add_argument("--cwd", default=None, help="only the sessions of this workspace (default: all)")
    sessions.add_argument("--json", action="store_true", help="one JSON object (SessionInfo) per line")
    add_init_timeout_flag(sessions)


async def _sessions(args: argparse.Namespace, settings: Settings, cwd: str | None) -> int:
    from acp_adapter.client.driver import AgentDriver, AgentError
    from acp_adapter.frontends.watch.sessions import session_table, updated_key
    from acp_adapter.frontends.watch.watcher import agent_env

    try:
        async with AgentDriver(
            args.agent,
            env=agent_env(settings),
            init_timeout=args.init_timeout,
            client_name="acp-progress-sessions",
        ) as driver:
            if args.action == "delete":
                return await _delete(driver, args.ids)
            sessions = await driver.list_sessions(cwd=cwd)
            incomplete = driver.list_incomplete
    except AgentError as exc:
        print(f"acp-progress sessions: {exc}", file=sys.stderr)
        return 2
    sessions.sort(key=updated_key, reverse=True)
    if args.json:
        for info in sessions:
            print(
                json.dumps(info.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=True)
            )
    else:
        for line in session_table(sessions):
            print(line)
    if incomplete:
        print(
            f"acp-progress sessions: the agent's list did not end (its page cursors repeat); "
            f"{len(sessions)} shown, more are not",
            file=sys.stderr,
        )
    if not sessions and not args.json:
        print("no sessions" + (f" in {cwd}" if cwd else ""), file=sys.stderr)
    return 0


async def _delete(driver: Any, ids: list[str]) -> int:
    """Delete each session named; one line per session, exit 1 if any could not be deleted."""
    from acp_adapter.client.driver import AgentError

    if not ids:
        print("acp-progress sessions delete: name the session IDs to delete", file=sys.stderr)
        return 2
    failed = 0
    for session_id in ids:
        try:
            await driver.delete_session(session_id)
        except AgentError as exc:
            failed += 1
            print(f"acp-progress sessions delete: {_visible(str(exc))}", file=sys.stderr)
        else:
            print(f"deleted {_visible(session_id)}")
    return 1 if failed else 0


def _visible(text: str) -> str:
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.frontends.watch.watcher import quiet_broken_stdout

    if args.action == "list" and args.ids:
        print("acp-progress sessions: IDs are for delete (acp-progress sessions delete ID)", file=sys.stderr)
        return 2
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
