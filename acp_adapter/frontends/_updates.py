"""The words for what an agent sends besides cards and the answer, shared by every front-end.

A plan (``plan`` updates) is a checklist — ``○`` pending, ``◐`` in progress, ``✓`` completed — with
each entry's priority; an edit card's diff content is a unified diff (or, in a chat, a short
``+N −M path`` line); a command card's terminal content is the terminal's output when the agent
sent it (``_meta.terminal_output.data``, the convention of agents whose client runs no terminal);
``usage_update`` is one footer line. Pure functions on the SDK's schema types, no I/O, and nothing
here is made safe for a terminal or a chat: each caller passes the text through its own sanitizer
(:func:`~acp_adapter.safety.terminal_text.terminal_safe`, the bridges' redaction).

Every input is the agent's and may be hostile, so sizes are bounded: a plan shows at most
:data:`MAX_PLAN_ENTRIES` entries of at most :data:`MAX_ENTRY_CHARS` characters, a diff is computed
from at most :data:`MAX_DIFF_INPUT` characters of each side.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acp.schema import FileEditToolCallContent, PlanEntry, TerminalToolCallContent, UsageUpdate

#: the mark of each plan entry status (Toad's checklist glyphs)
PLAN_MARK = {"pending": "○", "in_progress": "◐", "completed": "✓"}
MAX_PLAN_ENTRIES = 50
MAX_ENTRY_CHARS = 300
#: each side of a diff is cut here before ``difflib`` sees it (its cost grows with the product)
MAX_DIFF_INPUT = 200_000
#: lines of a diff a terminal shows before "… M more lines"
DIFF_LINES = 20
#: lines of a terminal's output shown under a command card
TERMINAL_LINES = 10


def _one_line(text: str, limit: int = MAX_ENTRY_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def plan_line(entry: PlanEntry) -> str:
    """``◐ Fix the greeting · high``: mark, content (one line), priority."""
    mark = PLAN_MARK.get(str(entry.status), "•")
    priority = f" · {entry.priority}" if entry.priority else ""
    return f"{mark} {_one_line(entry.content)}{priority}"


def plan_lines(entries: Sequence[PlanEntry]) -> list[str]:
    """The checklist, one line per entry (at most :data:`MAX_PLAN_ENTRIES`, then ``… N more``)."""
    lines = [plan_line(e) for e in entries[:MAX_PLAN_ENTRIES]]
    if len(entries) > MAX_PLAN_ENTRIES:
        lines.append(f"… {len(entries) - MAX_PLAN_ENTRIES} more")
    return lines


def plan_progress(entries: Sequence[PlanEntry]) -> str:
    """``plan 1/3``: completed entries of all."""
    done = sum(1 for e in entries if e.status == "completed")
    return f"plan {done}/{len(entries)}"


def plan_plain(entries: Sequence[PlanEntry], previous: Sequence[PlanEntry] | None) -> list[str]:
    """Lines for a pipe: the whole list the first time (or when its entries changed), else only
    the entries whose status changed."""
    lines = plan_lines(entries)
    same_shape = previous is not None and [e.content for e in previous] == [e.content for e in entries]
    if not same_shape:
        return [plan_progress(entries), *(f"  {line}" for line in lines)]
    assert previous is not None
    changed = [
        f"  {line}"
        for entry, old, line in zip(entries, previous, lines, strict=False)
        if entry.status != old.status or entry.priority != old.priority
    ]
    return [plan_progress(entries), *changed] if changed else []


@dataclass(frozen=True)
class Diff:
    """One file edit of a tool call, as its content said it."""

    path: str
    old: str
    new: str

    @property
    def created(self) -> bool:
        return not self.old

    def unified(self) -> str:
        """The unified diff (``--- a/path`` / ``+++ b/path`` / hunks), newline-terminated lines."""
        old = self.old[:MAX_DIFF_INPUT].splitlines(keepends=True)
        new = self.new[:MAX_DIFF_INPUT].splitlines(keepends=True)
        # git's a/ b/ prefixes for a relative path; an absolute one (ACP's usual) is named as it is
        before, after = (
            (self.path, self.path) if self.path.startswith("/") else (f"a/{self.path}", f"b/{self.path}")
        )
        lines = difflib.unified_diff(old, new, before, after)
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)

    def stats(self) -> tuple[int, int]:
        """(lines added, lines removed)."""
        added = removed = 0
        for line in self.unified().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
        return added, removed

    def short(self, workspace: str | None = None) -> str:
        """``+2 −3 notes.py`` (a chat's one line for an edit; a path in ``workspace`` relative to it)."""
        added, removed = self.stats()
        path = self.path
        if workspace and path.startswith(workspace.rstrip("/") + "/"):
            path = path[len(workspace.rstrip("/")) + 1 :]
        return f"+{added} −{removed} {_one_line(path)}"


def diffs_of(content: Any) -> list[Diff]:
    """The diff items of a tool call's content (others skipped)."""
    return [
        Diff(path=str(item.path), old=item.old_text or "", new=item.new_text or "")
        for item in content or []
        if isinstance(item, FileEditToolCallContent)
    ]


def terminals_of(content: Any) -> list[str]:
    """The terminal ids of a tool call's terminal content items."""
    return [str(item.terminal_id) for item in content or [] if isinstance(item, TerminalToolCallContent)]


def terminal_output_of(update: Any) -> str | None:
    """The terminal output an agent sent beside terminal content (``_meta.terminal_output.data``):
    the piece that is new since its previous update, as claude-agent-acp and codex-acp send it."""
    meta = getattr(update, "field_meta", None)
    if not isinstance(meta, dict):
        return None
    output = meta.get("terminal_output")
    data = output.get("data") if isinstance(output, dict) else None
    return data if isinstance(data, str) else None


def diff_lines(diff: Diff, limit: int = DIFF_LINES) -> list[str]:
    """A pipe's lines of ``diff``: at most ``limit`` of the unified diff, then ``… M more lines``."""
    lines, more = capped(diff.unified().splitlines(), limit)
    return [*lines, f"… {more} more lines"] if more else lines


def capped(lines: list[str], limit: int) -> tuple[list[str], int]:
    """The first ``limit`` lines and how many were left out."""
    if len(lines) <= limit:
        return lines, 0
    return lines[:limit], len(lines) - limit


def usage_line(update: UsageUpdate) -> str:
    """``tokens 1,234 / 200,000 (1%) · cost 0.0123 USD`` — cost only when the agent sent it."""
    used, size = int(update.used), int(update.size)
    share = f" ({used * 100 // size}%)" if size > 0 else ""
    line = f"tokens {used:,} / {size:,}{share}"
    cost = update.cost
    if cost is not None and isinstance(cost.amount, int | float) and math.isfinite(cost.amount):
        line += f" · cost {cost.amount:.4g} {_one_line(cost.currency, 10)}"
    return line
