"""Plain-text and JSON views of what the store keeps, for ``acp-progress audit`` (pure functions:
records in, lines out; the command line does the I/O)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

from acp_adapter.store.base import CANCELLED_DECISION, PermissionDecision


def local_time(at: float) -> str:
    """``2026-12-02 07:15:03`` in the local time zone."""
    return datetime.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def iso_time(at: float) -> str:
    """``2026-12-02T07:15:03Z``: ISO 8601 in UTC, as ``sessions --json`` gives ``updatedAt``."""
    moment = datetime.datetime.fromtimestamp(at, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def audit_lines(decisions: Sequence[PermissionDecision]) -> list[str]:
    """One line per decision, newest first: when, allowed/denied, by whom, where, what."""
    if not decisions:
        return ["no permission decisions recorded"]
    lines = []
    for d in decisions:
        verdict = "allowed" if d.allowed else ("cancel " if d.decided_by == CANCELLED_DECISION else "denied ")
        title = " ".join(d.title.split())
        rule = f"  ({' '.join(d.rule.split())})" if d.rule else ""
        who = f"{d.decided_by:<14} {d.surface:<8}"
        lines.append(f"{local_time(d.at)}  {verdict}  {who} {title}{rule}  [{d.session_id}]")
    return lines


def _outcome(decision: PermissionDecision) -> str:
    """``allowed``, ``denied`` or ``cancelled`` (the question was withdrawn; nobody decided)."""
    if decision.allowed:
        return "allowed"
    return "cancelled" if decision.decided_by == CANCELLED_DECISION else "denied"


def audit_json_lines(decisions: Sequence[PermissionDecision]) -> list[str]:
    """One JSON object per decision (strict JSON), newest first."""
    return [
        json.dumps(
            {
                "at": iso_time(d.at),
                "sessionId": d.session_id,
                "toolCallId": d.tool_call_id,
                "title": d.title,
                "allowed": d.allowed,
                "outcome": _outcome(d),
                "decidedBy": d.decided_by,
                "surface": d.surface,
                "rule": d.rule,
            },
            ensure_ascii=True,  # U+009B, U+202E … escaped: safe text on any terminal
            allow_nan=False,
        )
        for d in decisions
    ]
