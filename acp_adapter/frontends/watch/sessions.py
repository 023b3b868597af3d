"""Sessions from the terminal: ``acp-progress sessions`` and ``watch``/``chat`` ``--session``/``--continue``.

``sessions`` lists any ACP agent's stored sessions through the client driver's ``list_sessions``
(``session/list``); ``--session ID`` loads one (``session/load``) and ``--continue`` loads the newest
for ``--cwd``. The agent replays the earlier conversation as session updates before it answers the
load; on a terminal (or a pipe) that replay is shown compactly (:mod:`.replay`: each earlier
prompt, its thoughts folded, its plan's final checklist, the final line of each card, the answers)
— and with ``--json`` each replayed update is a ``{"replay": …}`` line.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from acp.helpers import SessionUpdate
from acp.schema import SessionInfo

from acp_adapter.client.driver import AgentDriver, AgentError
from acp_adapter.frontends.watch.json_lines import JsonLines
from acp_adapter.frontends.watch.replay import replay_lines, show_replay
from acp_adapter.frontends.watch.session_table import session_table

__all__ = ["newest_session", "open_session", "replay_lines", "session_table", "show_replay", "updated_key"]


def updated_key(info: SessionInfo) -> str:
    return info.updated_at or ""


def newest_session(sessions: list[SessionInfo]) -> SessionInfo | None:
    return max(sessions, key=updated_key, default=None)


async def open_session(
    driver: AgentDriver,
    args: argparse.Namespace,
    cwd: str,
    out: TextIO,
    json_lines: JsonLines | None,
    animate: bool,
) -> str | None:
    """A new session, or the one ``--session``/``--continue`` names, loaded (its replay shown).
    None after a one-line error on stderr (the agent cannot load, no session to continue …)."""
    wanted: str | None = getattr(args, "session", None)
    command = getattr(args, "command", None) or "watch"
    if getattr(args, "continue_", False):
        try:
            found = newest_session(await driver.list_sessions(cwd=cwd))
        except AgentError as exc:
            print(f"acp-progress {command}: cannot continue: {exc}", file=sys.stderr)
            return None
        if found is None:
            print(f"acp-progress {command}: no session to continue in {cwd}", file=sys.stderr)
            return None
        wanted = found.session_id
    if wanted is None:
        return await driver.new_session(cwd)
    replayed: list[SessionUpdate] = []

    def on_replay(update: SessionUpdate) -> None:
        if json_lines is not None:
            json_lines.update(wanted or "", update, replay=True)
        else:
            replayed.append(update)

    try:
        await driver.load_session(wanted, cwd, on_replay=on_replay)
    except AgentError as exc:
        print(f"acp-progress {command}: {exc}", file=sys.stderr)
        return None
    if json_lines is None:
        show_replay(out, replayed, wanted, animate, verbose=getattr(args, "verbose", False))
    return wanted
