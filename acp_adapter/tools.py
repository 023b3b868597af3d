"""Pure builders of ACP session updates: think cards, real tool cards, progress content.

No I/O and no state: each function maps facts to one SDK schema object built with the SDK helpers
(``start_tool_call``, ``update_tool_call``, ``tool_content``, ``text_block``), or on the hot path of
tool progress with one validated construction of the SDK's schema types. Every string that
goes into an update passes the canonical redactor here, at the single choke point, so no caller
can forget it (secrets never leave).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from acp import start_tool_call, text_block, tool_content, update_tool_call
from acp.schema import (
    ContentToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolKind,
)

from acp_adapter.protocol.meta import (
    META_KEY,
    PROGRESS_KEY,
    PROGRESS_PHASE_KEY,
    ProgressMeta,
    SummaryStatus,
)
from acp_adapter.safety.redact import redact_text, redact_value
from acp_adapter.text import THINKING_TITLE, flatten, format_elapsed, still_thinking

__all__ = [
    "META_KEY",
    "THINKING_TITLE",
    "build_thinking_complete",
    "build_thinking_failed",
    "build_thinking_progress",
    "build_thinking_start",
    "build_tool_complete",
    "build_tool_failed",
    "build_tool_progress",
    "build_tool_start",
    "one_line",
    "progress_number",
]

ERROR_CAP = 200
#: Longest progress summary a heartbeat carries (the summary's own bound is at most this).
SUMMARY_CAP = 1000


def one_line(text: str, cap: int = ERROR_CAP) -> str:
    """Redact, then :func:`~acp_adapter.text.flatten`: one line of at most ``cap`` characters.

    The redactor runs before the cut, so no secret survives as a fragment it cannot recognise."""
    return flatten(redact_text(text), cap)


def _text(text: str) -> list[Any]:
    return [tool_content(text_block(redact_text(text)))]


def _with_meta(update: Any, meta: ProgressMeta) -> Any:
    """``update`` with ``_meta.acpProgress`` from the typed ``meta``, its strings redacted."""
    return update.model_copy(update={"field_meta": {META_KEY: redact_value(meta.dump())}})


# ---------------------------------------------------------------- the virtual think card


_THINKING_START: ToolCallStart = start_tool_call("think", THINKING_TITLE, kind="think", status="in_progress")
_THINKING_START_META: dict[str, Any] = ProgressMeta(phase="thinking", elapsed_ms=0).dump()


def build_thinking_start(tool_call_id: str) -> ToolCallStart:
    """Open the spinner. ``in_progress`` (not ``pending``, which means awaiting approval in ACP).

    Every start is the same card but for its id, so it is copied from one built with the SDK
    helper (a copy costs a fraction of a validated build, on the path to the first thing the
    person sees); its strings are constants, with nothing to redact."""
    meta = {META_KEY: dict(_THINKING_START_META)}
    return _THINKING_START.model_copy(update={"tool_call_id": tool_call_id, "field_meta": meta})


def build_thinking_progress(
    tool_call_id: str,
    elapsed: float,
    status: str | None = None,
    *,
    summary: str | None = None,
    summary_revision: int | None = None,
) -> ToolCallProgress:
    """Heartbeat: an elapsed-time line, plus what the model is doing when known.

    With a progress summary (``summary`` and its ``summary_revision``) the line ends with the
    sentence — ``Still thinking… 40s — Checking the failing test.`` — and ``_meta.acpProgress.summary``
    carries ``{summary, revision}`` so a client can replace the status it shows by revision.
    """
    line = still_thinking(elapsed, one_line(status, 120) if status else None)
    shown = one_line(summary, SUMMARY_CAP) if summary else ""
    if shown:
        line += f" — {shown}"
    update = update_tool_call(tool_call_id, status="in_progress", content=_text(line))
    meta = ProgressMeta(
        phase="thinking",
        elapsed_ms=round(elapsed * 1000),
        status=one_line(status, 120) if status else None,
        summary=SummaryStatus(summary=shown, revision=summary_revision or 0) if shown else None,
    )
    return _with_meta(update, meta)


def build_thinking_complete(tool_call_id: str, elapsed: float | None = None) -> ToolCallProgress:
    """Close the spinner: the model produced its first output."""
    line = f"Thought for {format_elapsed(elapsed)}" if elapsed is not None else "Done thinking"
    update = update_tool_call(tool_call_id, status="completed", content=_text(line))
    return _with_meta(update, ProgressMeta(phase="done", elapsed_ms=round((elapsed or 0) * 1000)))


def build_thinking_failed(tool_call_id: str, reason: str, elapsed: float | None = None) -> ToolCallProgress:
    """Close the spinner as failed (model error, timeout, cancellation) with a short redacted reason."""
    short = one_line(reason) or "stopped"
    line = f"Stopped after {format_elapsed(elapsed)}: {short}" if elapsed is not None else f"Stopped: {short}"
    update = update_tool_call(tool_call_id, status="failed", content=_text(line))
    return _with_meta(
        update, ProgressMeta(phase="failed", elapsed_ms=round((elapsed or 0) * 1000), reason=short)
    )


# ---------------------------------------------------------------- real tool cards


def build_tool_start(
    tool_call_id: str,
    title: str,
    kind: ToolKind,
    *,
    raw_input: Any = None,
    locations: Sequence[str] = (),
    meta: ProgressMeta | Mapping[str, Any] | None = None,
) -> ToolCallStart:
    """Open a real tool's card, keyed by the model's tool-call id.

    ``meta`` names the tool for clients (``toolId``, ``label``, ``preview``, ``emoji``); a mapping
    is validated as a :class:`ProgressMeta`. The phase is always ``started``."""
    update = start_tool_call(
        tool_call_id,
        one_line(title, 200) or "tool",
        kind=kind,
        status="in_progress",
        locations=[ToolCallLocation(path=p) for p in locations] or None,
        raw_input=redact_value(raw_input) if raw_input is not None else None,
    )
    if meta is None:
        named = ProgressMeta(phase="started")
    elif isinstance(meta, ProgressMeta):
        named = meta.model_copy(update={"phase": "started"})
    else:
        named = ProgressMeta.model_validate({**meta, PROGRESS_PHASE_KEY: "started"})
    return _with_meta(update, named)


def build_tool_progress(
    tool_call_id: str,
    *,
    value: float | None = None,
    total: float | None = None,
    message: str | None = None,
) -> ToolCallProgress:
    """Tool-reported progress, shown on the card (replace semantics) and mirrored in ``_meta``.

    Only reported fields appear: a message-only update has no value or total. This is the hot
    path of a busy tool (thousands a second), so the update is one validated construction of the
    schema types rather than helper calls plus a copy: the message is redacted by ``one_line``,
    the line built from numbers has nothing to redact, and the numbers need no redaction walk.
    For the same reason its ``_meta`` is the plain dict that a :class:`ProgressMeta` holding a
    :class:`~acp_adapter.protocol.meta.ProgressReport` dumps to, keyed by the model's wire names
    (validating a model and dumping it would cost about as much as the rest of this function).
    """
    shown = one_line(message, 160) if message else ""
    if shown:
        line = shown
    else:
        line = f"Progress: {_num(value)}/{_num(total)}" if total is not None else f"Progress: {_num(value)}"
    progress: dict[str, Any] = {}
    if value is not None:
        progress["value"] = value
    if total is not None:
        progress["total"] = total
    if shown:
        progress["message"] = shown
    if not (isinstance(value, _NUMBER_OR_NONE) and isinstance(total, _NUMBER_OR_NONE)):
        # not what the type says (a caller that skipped SessionStream's checks): the redactor
        # still sees whatever it is, as every other string of an update does
        progress = redact_value(progress)
    return ToolCallProgress(  # only what changed: the card is in_progress since its start
        session_update="tool_call_update",
        tool_call_id=tool_call_id,
        content=[ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=line))],
        field_meta={META_KEY: {PROGRESS_PHASE_KEY: "progress", PROGRESS_KEY: progress}},
    )


def build_tool_complete(
    tool_call_id: str,
    result_text: str,
    *,
    raw_output: Any = None,
    duration: float | None = None,
    shown: Sequence[Any] = (),
) -> ToolCallProgress:
    """A completed card. ``shown``: SDK tool-call content (a diff, a terminal, an image) that goes
    before the text; the caller built it from redacted strings."""
    content = [*shown, *(_text(result_text) if result_text else [])]
    update = update_tool_call(
        tool_call_id,
        status="completed",
        content=content or None,
        raw_output=redact_value(raw_output) if raw_output is not None else None,
    )
    return _with_meta(update, ProgressMeta(phase="completed", duration_ms=_ms(duration)))


def build_tool_failed(
    tool_call_id: str,
    error: str,
    *,
    duration: float | None = None,
    text: str = "",
    raw_output: Any = None,
    shown: Sequence[Any] = (),
) -> ToolCallProgress:
    """A failed card: ``error`` is its one-line reason (``_meta.acpProgress.error``); ``text``, when
    the tool produced some (a command's output before it exited non-zero), follows the reason in
    the card's content: a client that shows one line shows why, one that shows more shows what.
    ``shown`` (a terminal the command ran in …) goes first, as for a completed card."""
    short = one_line(error) or "failed"
    body = f"{short}\n\n{text}" if text else short
    update = update_tool_call(
        tool_call_id, status="failed", content=[*shown, *_text(body)], raw_output=raw_output
    )
    return _with_meta(update, ProgressMeta(phase="failed", error=short, duration_ms=_ms(duration)))


def _ms(seconds: float | None) -> int | None:
    return round(seconds * 1000) if seconds is not None else None


_NUMBER_OR_NONE = (int, float, type(None))


def progress_number(field: str, value: object) -> float | None:
    """``value`` as a progress number, or ``ValueError`` naming ``field``.

    Progress travels as JSON, where NaN and infinity have no spelling (they would arrive as
    ``null``, a reported field that says nothing) and a bool is not a count; ``None`` is "unknown".
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"progress {field} must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"progress {field} must be finite, not {value!r}")
    return value


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
