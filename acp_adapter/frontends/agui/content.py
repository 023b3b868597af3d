"""What a tool card's content says as text, for ``TOOL_CALL_RESULT``: text blocks, and diffs as diffs.

An ACP edit card carries ``{"type": "diff", "path", "oldText", "newText"}``. A web front-end
shows the change, so the result carries a unified diff (``--- a/PATH`` / ``+++ b/PATH``, hunks
with three lines of context), not just "edited PATH". A new file (no ``oldText``) is diffed
against nothing (``--- /dev/null``). The diff is bounded: past :data:`MAX_DIFF_LINES` lines it
ends with ``… N more lines``.
"""

from __future__ import annotations

import difflib
from typing import Any, Final

from acp.schema import ContentToolCallContent, FileEditToolCallContent, TextContentBlock

#: Lines of one diff published at most (the rest is counted, not sent).
MAX_DIFF_LINES: Final = 400


def unified_diff(path: str, old_text: str | None, new_text: str, *, max_lines: int = MAX_DIFF_LINES) -> str:
    """``path``'s change as a unified diff (``--- /dev/null`` for a new file), capped at ``max_lines``."""
    before = "/dev/null" if old_text is None else f"a/{path}"
    lines = list(
        difflib.unified_diff(
            (old_text or "").splitlines(),
            new_text.splitlines(),
            fromfile=before,
            tofile=f"b/{path}",
            lineterm="",
        )
    )
    if not lines:
        return f"--- a/{path}\n+++ b/{path}\n(no change)"
    if len(lines) > max_lines:
        rest = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {rest} more lines"]
    return "\n".join(lines)


def _block_text(block: Any) -> str:
    return block.text if isinstance(block, TextContentBlock) else ""


def tool_content_text(content: list[Any] | None) -> str | None:
    """The card's content as text (text blocks, then diffs), or ``None`` when it sent none."""
    if not content:
        return None
    parts: list[str] = []
    for item in content:
        if isinstance(item, ContentToolCallContent):
            parts.append(_block_text(item.content))
        elif isinstance(item, FileEditToolCallContent):
            parts.append(unified_diff(item.path, item.old_text, item.new_text))
    return "\n".join(p for p in parts if p)
