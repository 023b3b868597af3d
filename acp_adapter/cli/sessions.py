"""``acp-progress sessions``: list any ACP agent's stored sessions (``session/list``, every page to
the end, with a header and each session's workspace), and ``sessions delete ID…`` (``session/delete``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
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
    from acp_adapter.frontends.watch.sessions import updated_key
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
            incomplete = driver.sessions.list_incomplete
    except AgentError as exc:
        print(f"acp-progress sessions: {exc}", file=sys.stderr)
        return 2
    sessions.sort(key=updated_key, reverse=True)
    _print_sessions(sessions, args.json)
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
    """Delete each session named; one line per session, exit 1 if any could not be deleted or is
    not there. ACP's ``session/delete`` succeeds for an id the agent never had (so retries are
    harmless), which would make a mistyped id look deleted: the agent's own list says first."""
    from acp_adapter.client.driver import AgentError

    if not ids:
        print("acp-progress sessions delete: name the session IDs to delete", file=sys.stderr)
        return 2
    known: set[str] | None = None
    try:
        known = {str(info.session_id) for info in await driver.list_sessions(cwd=None)}
        if driver.sessions.list_incomplete:
            known = None  # a list that did not end cannot say an id is absent
    except AgentError:
        known = None  # an agent that cannot list: its answer to the delete is all there is
    failed = 0
    for session_id in ids:
        if known is not None and session_id not in known:
            failed += 1
            print(f"acp-progress sessions delete: no session {session_id} (nothing deleted)", file=sys.stderr)
            continue
        try:
            await driver.delete_session(session_id)
        except AgentError as exc:
            failed += 1
            print(f"acp-progress sessions delete: {exc}", file=sys.stderr)
        else:
            print(f"deleted {session_id}")  # stdout is a SafeTextStream here, as stderr
    return 1 if failed else 0


def _print_sessions(sessions: list[Any], as_json: bool) -> None:
    from acp_adapter.frontends.watch.session_table import session_table

    if as_json:
        for info in sessions:
            print(json.dumps(session_json(info), ensure_ascii=True))
    else:
        for line in session_table(sessions):
            print(line)


def session_json(info: Any) -> dict[str, Any]:
    """A session as ``SessionInfo`` serializes it (camelCase, absent fields left out); an agent's
    own ``SessionInfo`` is dumped by the SDK, a row read from our store takes the same shape."""
    dump = getattr(info, "model_dump", None)
    if dump is not None:
        return dict(dump(mode="json", by_alias=True, exclude_none=True))
    shaped = {
        "sessionId": info.session_id,
        "cwd": info.cwd,
        "title": info.title,
        "updatedAt": info.updated_at,
    }
    return {key: value for key, value in shaped.items() if value is not None}


@dataclass(frozen=True)
class StoredRow:
    """A session read straight from this project's store, with the fields ``session/list`` gives."""

    session_id: str
    cwd: str
    title: str | None
    updated_at: str | None


def _list_from_store(settings: Settings, cwd: str | None) -> list[StoredRow]:
    """This project's own sessions, read from its store in this process.

    Spawning the default agent only to ask it ``session/list`` cost seconds (the protocol schema
    and the model stack are imported twice); the agent would answer from this very database, with
    the same pruning on open, so reading it here gives the same rows in a fraction of the time."""
    from pathlib import Path

    from acp_adapter.store import open_store
    from acp_adapter.store.report import iso_time

    if not settings.state:
        return []
    directory = Path(settings.state_dir).expanduser() if settings.state_dir else None
    store = open_store(directory, retention_days=settings.session_retention_days, url=settings.store.url)
    rows: list[StoredRow] = []
    try:
        cursor: str | None = None
        while True:
            page = store.list_sessions(cwd, cursor, 200)
            rows += [StoredRow(r.session_id, r.cwd, r.title, iso_time(r.updated_at)) for r in page.sessions]
            cursor = page.next_cursor
            if cursor is None:
                return rows
    finally:
        store.close()


def run(args: argparse.Namespace, settings: Settings) -> int:
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
        if args.action == "list" and args.agent is None:
            rows = _list_from_store(settings, cwd)
            _print_sessions(rows, args.json)
            if not rows and not args.json:
                print("no sessions" + (f" in {cwd}" if cwd else ""), file=sys.stderr)
            return 0
        return asyncio.run(_sessions(args, settings, cwd))
    except KeyboardInterrupt:
        return 130
