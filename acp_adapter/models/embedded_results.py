"""What the embedded model answers once its tool calls have run: each result of the last round
described in words (the matches a search found, a file's size and sections, a listing, a command's
output, a failure's reason), one paragraph each.

Why a module of its own: reading the tools' output formats back (the search tool's
``N matches in M files`` line, ``path:line: text`` matches) is tied to those tools, not to how the
model reads a prompt (:mod:`~acp_adapter.models.embedded_calls`) or answers one without tools
(:mod:`~acp_adapter.models.embedded_replies`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from acp_adapter.models.base import Message
from acp_adapter.tooling.calls import ToolCall

_MATCH_LINE = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):\s?(?P<text>.*)$")
#: the search tool's first line: ``N matches in M files (scanned …)``
_FOUND_LINE = re.compile(r"^(?P<matches>\d+) match(?:es)? in (?P<files>\d+) files?\b")


def _tool_calls_of_last_round(messages: Sequence[Message]) -> list[tuple[ToolCall | None, Message]]:
    results: list[Message] = []
    i = len(messages) - 1
    while i >= 0 and messages[i].role == "tool":
        results.append(messages[i])
        i -= 1
    results.reverse()
    calls = {c.id: c for c in messages[i].tool_calls} if i >= 0 else {}
    return [(calls.get(r.tool_call_id or ""), r) for r in results]


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _describe_result(call: ToolCall | None, result: Message) -> str:
    name = call.name if call else (result.name or "tool")
    args = dict(call.arguments) if call else {}
    body = result.content.strip()
    if body.startswith("error:"):
        return f"The `{name}` call failed: {body[len('error:') :].strip()}"
    lines = body.splitlines()
    if name == "search":
        query = args.get("query", "")
        matches = [m for line in lines if (m := _MATCH_LINE.match(line))]
        if not matches:
            return f"I searched the workspace for \u201c{query}\u201d and found no matches."
        counted = _FOUND_LINE.match(lines[0]) if lines else None  # the tool's own count of everything
        files = sorted({m.group("path") for m in matches})
        n_matches = int(counted.group("matches")) if counted else len(matches)
        n_files = int(counted.group("files")) if counted else len(files)
        shown = "\n".join(
            f"- `{m.group('path')}:{m.group('line')}` — {m.group('text').strip()}" for m in matches[:12]
        )
        more = f"\n- … and {n_matches - 12} more" if n_matches > 12 else ""
        return (
            f"I searched the workspace for \u201c{query}\u201d and found "
            f"{_plural(n_matches, 'match', 'matches')} in {_plural(n_files, 'file', 'files')}:\n"
            f"{shown}{more}"
        )
    if name == "read_file":
        path = args.get("path", "the file")
        headings = [line.lstrip("# ").strip() for line in lines if line.startswith("#")][:5]
        first = next((line.strip() for line in lines if line.strip()), "")
        summary = f"`{path}` has {len(lines)} line{'s' if len(lines) != 1 else ''}."
        if headings:
            summary += " Its sections: " + "; ".join(headings) + "."
        if first:
            summary += f"\nIt begins: \u201c{first[:160]}\u201d"
        return summary
    if name == "list_dir":
        entries = [line for line in lines if line.strip()]
        shown = "\n".join(f"- {e.strip()}" for e in entries[:25])
        more = f"\n- … and {len(entries) - 25} more" if len(entries) > 25 else ""
        return f"The workspace listing has {_plural(len(entries), 'entry', 'entries')}:\n{shown}{more}"
    if name in ("edit_file", "write_file"):
        return body
    if name == "run_command":
        command = args.get("command", "")
        excerpt = "\n".join(lines[:30])
        more = f"\n… ({len(lines) - 30} more lines)" if len(lines) > 30 else ""
        return f"I ran `{command}`. Output:\n```\n{excerpt}{more}\n```"
    return f"`{name}` finished: {body[:400]}"


def answer_from_tools(messages: Sequence[Message]) -> str:
    """Compose the answer from the latest round of tool results."""
    parts = [_describe_result(call, result) for call, result in _tool_calls_of_last_round(messages)]
    return "\n\n".join(parts) if parts else "Done."
