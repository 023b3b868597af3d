"""Sessions from the terminal: ``acp-progress sessions`` and ``watch``/``chat`` ``--session``/``--continue``.

``sessions`` lists any ACP agent's stored sessions through the client driver's ``list_sessions``
(``session/list``); ``--session ID`` loads one (``session/load``) and ``--continue`` loads the newest
for ``--cwd``. The agent replays the earlier conversation as session updates before it answers the
load; on a terminal (or a pipe) that replay is shown compactly — each earlier prompt, the final
line of each card, the answers — and with ``--json`` each replayed update is a ``{"replay": …}`` line.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from acp.helpers import SessionUpdate
from acp.schema import AgentMessageChunk, SessionInfo, ToolCallProgress, ToolCallStart, UserMessageChunk

from acp_adapter.client.driver import AgentDriver, AgentError
from acp_adapter.frontends.watch.json_lines import JsonLines
from acp_adapter.frontends.watch.render import CardBoard, card_line
from acp_adapter.frontends.watch.session_table import session_table

__all__ = ["newest_session", "open_session", "replay_lines", "session_table", "show_replay", "updated_key"]


def replay_lines(updates: list[SessionUpdate]) -> list[str]:
    """The compact picture of a replayed conversation: ``› prompt``, each card's final line once,
    each answer (pure: updates in, lines out)."""
    board = CardBoard()
    order: list[tuple[str, str]] = []  # ("user"|"answer", text) or ("card", id), in arrival order
    for update in updates:
        if isinstance(update, UserMessageChunk):
            text = getattr(update.content, "text", "") or ""
            if order and order[-1][0] == "user":
                order[-1] = ("user", order[-1][1] + text)
            else:
                order.append(("user", text))
        elif isinstance(update, AgentMessageChunk):
            text = getattr(update.content, "text", "") or ""
            if order and order[-1][0] == "answer":
                order[-1] = ("answer", order[-1][1] + text)
            else:
                order.append(("answer", text))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            if update.tool_call_id not in board.cards:
                order.append(("card", update.tool_call_id))
            board.apply(update, 0.0)
    lines: list[str] = []
    for kind, value in order:
        if kind == "user":
            lines.append(f"› {' '.join(value.split())}")
        elif kind == "answer":
            lines.extend(value.strip("\n").splitlines())
        else:
            lines.append(card_line(board.cards[value], now=0.0))
    return lines


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
        show_replay(out, replayed, wanted, animate)
    return wanted


def show_replay(out: TextIO, updates: list[SessionUpdate], session_id: str, animate: bool) -> None:
    lines = replay_lines(updates)
    if animate:
        from rich.console import Console
        from rich.text import Text

        console = Console(file=out)
        console.print(Text(f"── session {session_id} ({len(lines)} lines of history) ──", style="dim"))
        for line in lines:
            console.print(Text(line, style="dim"))
        console.print(Text("── continued ──", style="dim"))
    else:
        out.write(f"── session {session_id} ──\n")
        for line in lines:
            out.write(line + "\n")
        out.write("── continued ──\n")
        out.flush()
