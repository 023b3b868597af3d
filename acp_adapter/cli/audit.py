"""``acp-progress audit``: the permission decisions kept in the session store, newest first."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_adapter.config import Settings


def add_parser(sub: Any) -> None:
    audit = sub.add_parser("audit", help="show the permission decisions kept in the session store")
    audit.add_argument("--limit", type=int, default=50, metavar="N", help="newest N decisions (default 50)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")


def run(args: argparse.Namespace, settings: Settings) -> int:
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
    store = open_store(directory, retention_days=0, url=settings.store.url)
    try:
        decisions = store.permission_audit(args.limit)
    finally:
        store.close()
    for line in (audit_json_lines if args.json else audit_lines)(decisions):
        print(line)
    return 0
