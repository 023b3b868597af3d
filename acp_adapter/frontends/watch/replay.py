"""The earlier conversation of a loaded session, as ``watch``/``chat`` show it before going on.

``session/load`` makes the agent replay the stored conversation as session updates; the driver
hands them to the loader, not to a turn's view (no turn is running), so they are drawn here, once,
compactly: each prompt (``› …``), each thought folded as the live view folds it (``💭`` and its last
line; every line with ``--verbose``), each turn's plan as its final checklist, each card's final
line and the answers. Why a plan is drawn once per turn, where it first appeared, with its last
entries: this project's agent stores only a turn's last plan, another agent may replay every step
of it (pending → in progress → completed), and the live view ended the turn showing the final
checklist either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

from acp.helpers import SessionUpdate
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanEntry,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)
from rich.console import Console, RenderableType
from rich.text import Text

from acp_adapter.frontends._updates import plan_plain
from acp_adapter.frontends.watch.extras import plan_renderable, thought_lines, thought_renderable
from acp_adapter.frontends.watch.render import CardBoard, card_line
from acp_adapter.safety.terminal_text import terminal_safe

__all__ = ["ReplayPart", "replay_lines", "replay_parts", "show_replay"]

_Kind = Literal["user", "thought", "answer", "card", "plan"]
_TEXTS: dict[type, _Kind] = {
    UserMessageChunk: "user",
    AgentThoughtChunk: "thought",
    AgentMessageChunk: "answer",
}


@dataclass
class ReplayPart:
    """One piece of the replayed conversation, in the order it first appeared."""

    kind: _Kind
    text: str = ""  # user, thought, answer: the run of chunks joined
    card_id: str = ""  # card: the card's id on the replay's board
    plan: Sequence[PlanEntry] = ()  # plan: the turn's last entries


def replay_parts(updates: Sequence[SessionUpdate]) -> tuple[list[ReplayPart], CardBoard]:
    """The replayed updates as parts (consecutive chunks of one kind joined, one plan per turn)
    and the board holding every card in its final state (pure: updates in, parts out)."""
    board = CardBoard()
    parts: list[ReplayPart] = []
    plan: ReplayPart | None = None  # the current turn's plan part (a later plan update replaces it)
    for update in updates:
        kind = _TEXTS.get(type(update))
        if kind is not None:
            text = getattr(getattr(update, "content", None), "text", "") or ""
            if parts and parts[-1].kind == kind:
                parts[-1].text += text
                continue
            if kind == "user":
                plan = None  # a new prompt: a new turn, with a plan of its own
            parts.append(ReplayPart(kind, text=text))
        elif isinstance(update, AgentPlanUpdate):
            if plan is None:
                plan = ReplayPart("plan")
                parts.append(plan)
            plan.plan = list(update.entries)
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            if update.tool_call_id not in board.cards:
                parts.append(ReplayPart("card", card_id=update.tool_call_id))
            board.apply(update, 0.0)
    return [p for p in parts if p.kind != "plan" or p.plan], board


def _plain(part: ReplayPart, board: CardBoard, verbose: bool) -> list[str]:
    """One part as pipe lines, as :class:`~.view.PlainView` draws it live (not yet made safe)."""
    if part.kind == "user":
        return [f"› {' '.join(part.text.split())}"]
    if part.kind == "answer":
        return part.text.strip("\n").splitlines()
    if part.kind == "thought":
        return [f"💭 {line}" for line in thought_lines(part.text, verbose=verbose, limit=1)]
    if part.kind == "plan":
        return plan_plain(part.plan, None)
    return [card_line(board.cards[part.card_id], now=0.0)]


def replay_lines(updates: Sequence[SessionUpdate], *, verbose: bool = False) -> list[str]:
    """The compact picture of a replayed conversation, as lines for a pipe (made terminal-safe)."""
    parts, board = replay_parts(updates)
    return [terminal_safe(line) for part in parts for line in _plain(part, board, verbose)]


def _renderables(part: ReplayPart, board: CardBoard, verbose: bool) -> list[RenderableType]:
    """One part for a terminal: a thought and the plan as :class:`~.view.LiveView` leaves them in
    the scrollback, the rest as dim lines (it is history)."""
    if part.kind == "thought":
        thought = thought_renderable(part.text, verbose=verbose, live=False)
        return [] if thought is None else [thought]
    if part.kind == "plan":
        return [plan_renderable(part.plan)]
    return [Text(terminal_safe(line), style="dim") for line in _plain(part, board, verbose)]


def show_replay(
    out: TextIO, updates: Sequence[SessionUpdate], session_id: str, animate: bool, *, verbose: bool = False
) -> None:
    """Draw the replay between ``── session ID ──`` and ``── continued ──``."""
    lines = replay_lines(updates, verbose=verbose)
    session_id = terminal_safe(session_id)
    if animate:
        console = Console(file=out)
        console.print(Text(f"── session {session_id} ({len(lines)} lines of history) ──", style="dim"))
        parts, board = replay_parts(updates)
        for part in parts:
            for renderable in _renderables(part, board, verbose):
                console.print(renderable)
        console.print(Text("── continued ──", style="dim"))
    else:
        out.write(f"── session {session_id} ──\n")
        for line in lines:
            out.write(line + "\n")
        out.write("── continued ──\n")
        out.flush()
