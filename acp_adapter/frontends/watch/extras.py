"""How ``watch``, ``chat`` and the console bridge draw what is not a card or the answer.

The plan checklist, a thought (dimmed, folded to its last lines while it is written), a card's
diff (rich :class:`~rich.syntax.Syntax`, capped at :data:`~acp_adapter.frontends._updates.DIFF_LINES`
lines with ``… M more lines``), a command card's terminal output and the usage footer — as ``rich``
renderables for a terminal (:class:`~.view.LiveView`) and as plain lines for a pipe
(:class:`~.view.PlainView`). Every piece of the agent's text goes through
:func:`~acp_adapter.safety.terminal_text.terminal_safe` here, before any style of ours is added.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp.schema import PlanEntry, UsageUpdate
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from acp_adapter.frontends._updates import (
    DIFF_LINES,
    MAX_PLAN_ENTRIES,
    TERMINAL_LINES,
    Diff,
    capped,
    diff_lines,
    plan_lines,
    plan_progress,
    usage_line,
)
from acp_adapter.frontends.watch.render import CardContent
from acp_adapter.safety.terminal_text import terminal_safe

#: lines of a thought shown while it is being written
THOUGHT_LINES = 3
_PLAN_STYLE = {"completed": "green", "in_progress": "bold yellow", "pending": ""}


def plan_renderable(entries: Sequence[PlanEntry], *, limit: int | None = None) -> Text:
    """The checklist: a ``plan 1/3`` head, then a line per entry in its status's colour.

    ``limit`` (the live region): at most that many entries, starting a little before the first
    one not completed, so a long plan never makes the region taller than the terminal (a region
    taller than the screen cannot be redrawn in place)."""
    text = Text(plan_progress(entries), style="bold", end="")
    lines = plan_lines(entries)
    start, stop = 0, len(lines)
    if limit is not None and len(lines) > limit:
        first_open = next((i for i, e in enumerate(entries) if e.status != "completed"), len(entries))
        start = max(0, min(first_open - 1, len(entries) - limit))
        stop = start + limit
        if start:
            text.append(f"\n  … {start} done", style="dim")
    for i in range(start, min(stop, len(lines))):
        status = str(entries[i].status) if i < MAX_PLAN_ENTRIES else "more"
        text.append("\n  ")
        text.append(terminal_safe(lines[i]), style=_PLAN_STYLE.get(status, "dim"))
    if stop < len(lines):
        text.append(f"\n  … {len(lines) - stop} more", style="dim")
    return text


def thought_lines(thoughts: str, *, verbose: bool, limit: int = THOUGHT_LINES) -> list[str]:
    """The thought's lines (safe): all of them with ``verbose``, else the last ``limit``."""
    lines = [line for line in terminal_safe(thoughts).splitlines() if line.strip()]
    return lines if verbose else lines[-limit:]


def thought_renderable(thoughts: str, *, verbose: bool, live: bool) -> Text | None:
    """A thought, dimmed: its last lines while it is written (never more: the live region must
    fit the screen); once it ended, its last line with how many lines it had (all with
    ``verbose``)."""
    lines = thought_lines(thoughts, verbose=verbose and not live, limit=THOUGHT_LINES if live else 1)
    if not lines:
        return None
    total = len([line for line in thoughts.splitlines() if line.strip()])
    text = Text("💭 ", style="dim italic", end="")
    text.append("\n   ".join(lines), style="dim italic")
    if not live and not verbose and total > 1:
        text.append(f"  ({total} lines; --verbose shows them)", style="dim")
    return text


def diff_renderable(diff: Diff, *, limit: int = DIFF_LINES) -> RenderableType:
    """The unified diff, coloured, at most ``limit`` lines then ``… M more lines``."""
    lines, more = capped(terminal_safe(diff.unified()).splitlines(), limit)
    if not lines:
        return Text(f"   (no change to {terminal_safe(diff.path)})", style="dim")
    syntax = Syntax("\n".join(lines), "diff", theme="ansi_dark", background_color="default", word_wrap=True)
    if not more:
        return syntax
    return Group(syntax, Text(f"… {more} more lines", style="dim"))


def diff_plain(diff: Diff, *, limit: int = DIFF_LINES) -> list[str]:
    return [terminal_safe(line) for line in diff_lines(diff, limit)]


def terminal_plain(content: CardContent, *, limit: int = TERMINAL_LINES) -> list[str]:
    """A command card's terminal output (its last ``limit`` lines), or the terminal's id when the
    agent did not send the output."""
    if content.output is not None:
        lines = terminal_safe(content.output).splitlines()
        shown = lines[-limit:]
        head = [f"   │ … {len(lines) - limit} earlier lines"] if len(lines) > limit else []
        return [*head, *(f"   │ {line}" for line in shown)]
    return [f"   ⌨ terminal {terminal_safe(t)}" for t in content.terminals]


def content_renderables(content: CardContent | None) -> list[RenderableType]:
    """What is printed under a finished card on a terminal: its diffs and its terminal."""
    if content is None:
        return []
    parts: list[RenderableType] = [diff_renderable(d) for d in content.diffs]
    parts += [Text(line, style="dim") for line in terminal_plain(content)]
    return parts


def content_plain(content: CardContent | None) -> list[str]:
    if content is None:
        return []
    lines = [line for d in content.diffs for line in diff_plain(d)]
    return lines + terminal_plain(content)


def usage_plain(usage: UsageUpdate) -> str:
    return f"📊 {terminal_safe(usage_line(usage))}"
