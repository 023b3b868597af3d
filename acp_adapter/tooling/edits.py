"""The agent's editing tools: ``edit_file`` (replace one exact string) and ``write_file`` (create or
overwrite), each showing its change as a diff on the card.

Why exact strings: a replacement that matched zero or several places would edit something the
model did not mean, so both are refused with a message saying which (the model can retry with more
context). Both ask permission first (``dangerous``), stay inside the workspace exactly as reads do
(:mod:`.paths`) and write atomically. A client that advertised ``fs.readTextFile`` is read through
(its unsaved buffer is what gets edited), one that advertised ``fs.writeTextFile`` applies the write
itself (:mod:`.host`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_adapter.tooling.display import FileDiff
from acp_adapter.tooling.paths import display, read_regular_text, resolve_in_workspace, write_atomically
from acp_adapter.tooling.toolbox import Tool, ToolContext, ToolError, ToolReturn

#: The largest file an edit reads or a write writes (bytes of UTF-8).
EDIT_CAP = 1024 * 1024

__all__ = ["EDIT_CAP", "EDIT_TOOLS", "edit_file", "write_file"]


def _read_current(ctx: ToolContext, path: Path) -> str | None:
    """The file's text now (the client's buffer when it offers reads), None when it does not exist."""
    host = ctx.host
    if host is not None and host.reads_files:
        if not path.exists():
            return None
        return host.read_text(str(path))
    if not path.exists():
        return None
    if path.is_dir():
        raise ToolError(f"{display(ctx.cwd, path)} is a directory")
    return read_regular_text(ctx.cwd, path, EDIT_CAP)


def _write(ctx: ToolContext, path: Path, text: str) -> None:
    if len(text.encode("utf-8", "surrogatepass")) > EDIT_CAP:
        raise ToolError(f"the new text of {display(ctx.cwd, path)} is larger than {EDIT_CAP:,} bytes")
    host = ctx.host
    if host is not None and host.writes_files:
        host.write_text(str(path), text)
    else:
        write_atomically(ctx.cwd, path, text)


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _planned_edit(args: Mapping[str, Any], ctx: ToolContext) -> tuple[Path, str, str, int]:
    """``(path, current text, edited text, line)`` of an edit, or a ToolError saying why not."""
    path = resolve_in_workspace(ctx.cwd, args["path"])
    shown = display(ctx.cwd, path)
    old, new = args["old_text"], args["new_text"]
    if not old:
        raise ToolError("old_text must not be empty (use write_file to create a file)")
    if old == new:
        raise ToolError("old_text and new_text are the same: nothing to change")
    current = _read_current(ctx, path)
    if current is None:
        raise ToolError(f"no such file: {args['path']}")
    count = current.count(old)
    if count == 0:
        raise ToolError(f"the text to replace was not found in {shown}")
    if count > 1:
        raise ToolError(
            f"the text to replace appears {count} times in {shown}; include more of the surrounding "
            "text so it matches exactly once"
        )
    line = current[: current.index(old)].count("\n") + 1
    return path, current, current.replace(old, new, 1), line


def preview_edit(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileDiff, ...]:
    """The diff an ``edit_file`` call would make, shown while permission is asked."""
    path, current, updated, _ = _planned_edit(args, ctx)
    return (FileDiff(str(path), updated, current),)


def preview_write(args: Mapping[str, Any], ctx: ToolContext) -> tuple[FileDiff, ...]:
    """The diff a ``write_file`` call would make (from nothing, for a new file)."""
    path = resolve_in_workspace(ctx.cwd, args["path"])
    return (FileDiff(str(path), args["content"], _read_current(ctx, path)),)


def edit_file(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    path, current, updated, line = _planned_edit(args, ctx)  # again: the file may have changed
    shown = display(ctx.cwd, path)
    ctx.cancel.raise_if_cancelled()
    _write(ctx, path, updated)
    summary = f"edited {shown} at line {line}"
    return ToolReturn(
        f"Replaced 1 occurrence in {shown} (line {line}); the file now has {_lines(updated)} lines.",
        summary,
        {"path": shown, "line": line},
        display=(FileDiff(str(path), updated, current),),
    )


def write_file(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    path = resolve_in_workspace(ctx.cwd, args["path"])
    shown = display(ctx.cwd, path)
    text = args["content"]
    current = _read_current(ctx, path)
    ctx.cancel.raise_if_cancelled()
    _write(ctx, path, text)
    verb = "Created" if current is None else "Overwrote"
    size = len(text.encode("utf-8", "surrogatepass"))
    return ToolReturn(
        f"{verb} {shown} ({_lines(text)} lines, {size:,} bytes).",
        f"{verb.lower()} {shown}",
        {"path": shown, "bytes": size, "created": current is None},
        display=(FileDiff(str(path), text, current),),
    )


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


EDIT_TOOLS: tuple[Tool, ...] = (
    Tool(
        "edit_file",
        "Replace one exact occurrence of old_text with new_text in a workspace file (asks the user). "
        "Fails when old_text is absent or appears more than once.",
        _schema(
            {
                "path": {"type": "string", "description": "file path relative to the workspace"},
                "old_text": {"type": "string", "description": "the exact text to replace"},
                "new_text": {"type": "string", "description": "the text to put in its place"},
            },
            ["path", "old_text", "new_text"],
        ),
        edit_file,
        dangerous=True,
        preview=preview_edit,
    ),
    Tool(
        "write_file",
        "Create a workspace file or overwrite it with new content (asks the user).",
        _schema(
            {
                "path": {"type": "string", "description": "file path relative to the workspace"},
                "content": {"type": "string", "description": "the whole new content of the file"},
            },
            ["path", "content"],
        ),
        write_file,
        dangerous=True,
        preview=preview_write,
    ),
)
