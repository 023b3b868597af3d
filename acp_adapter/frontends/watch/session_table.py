"""The table ``acp-progress sessions`` prints (pure: rows in, lines out).

Kept apart from :mod:`acp_adapter.frontends.watch.sessions` and free of the protocol schema so
that listing this project's own sessions straight from the store starts in a fraction of a
second: anything with ``session_id``, ``cwd``, ``title`` and ``updated_at`` is a row (the SDK's
``SessionInfo`` from another agent, or the store's listing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from acp_adapter.safety.terminal_text import terminal_safe


class SessionRow(Protocol):
    """What a row of the table needs (``acp.schema.SessionInfo`` has it)."""

    @property
    def session_id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def updated_at(self) -> str | None: ...


def _shown(text: str) -> str:
    """One line, control characters shown escaped (a title is a chat member's text)."""
    return terminal_safe(" ".join(text.split()))


def session_table(sessions: Sequence[SessionRow]) -> list[str]:
    """A header, then one row per session — its id, last update, workspace and title (the title
    last: it is the only free-length column)."""
    if not sessions:
        return []
    rows = [
        (
            _shown(info.session_id),
            _shown(info.updated_at or "-"),
            _shown(info.cwd or "-"),
            _shown(info.title or "") or "(untitled)",
        )
        for info in sessions
    ]
    header = ("SESSION", "UPDATED", "WORKSPACE", "TITLE")
    widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(3)]
    widths[2] = min(widths[2], 60)

    def line(cells: tuple[str, str, str, str]) -> str:
        return (
            "  ".join(cell.ljust(width) for cell, width in zip(cells[:3], widths, strict=True))
            + "  "
            + cells[3]
        )

    return [line(header), *(line(row) for row in rows)]
