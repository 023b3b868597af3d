"""How a turn ended, in the words each party needs: the JSON-RPC error a failed prompt answers
with, the outcome its progress summary is told, and the rules a session's workspace keeps.

Pure functions of what the agent loop returned; the server (:mod:`acp_adapter.server`) calls them
at the end of every prompt, :class:`~acp_adapter.agent.turn.ProgressTurn` at the end of every turn.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp import RequestError
from acp.schema import StopReason

from acp_adapter.models.base import Message, UsageReport
from acp_adapter.tools import one_line

if TYPE_CHECKING:  # the summary package is imported only when summaries are on (cold start)
    from acp_adapter.summary import Outcome


@dataclass
class TurnResult:
    """How one prompt's agent loop ended: what the loop returns and what the server reads.
    ``messages`` are the new history entries of the turn."""

    stop_reason: StopReason
    text: str = ""
    messages: list[Message] = field(default_factory=list)
    error: str | None = None
    usage: UsageReport | None = None


def turn_failure(
    stop_reason: str, error: BaseException | None, result: TurnResult | None
) -> RequestError | None:
    """The JSON-RPC error a failed turn answers with (None when it ended well or was cancelled):
    the model call failed (HTTP 500, a refused connection, a stream that broke off) or the turn
    crashed. The message says what happened; ``data.details`` carries the short redacted reason."""
    if stop_reason == "cancelled":
        return None
    if error is not None:
        return RequestError(
            -32603,
            f"The agent hit an internal error ({type(error).__name__})",
            {"details": one_line(f"{type(error).__name__}: {error}")},
        )
    if result is not None and result.error:
        reason = one_line(result.error)
        return RequestError(-32603, f"The model request failed: {reason}", {"details": reason})
    return None


def summary_outcome(stop_reason: str, *, failed: bool) -> Outcome:
    """What a turn's progress summary is told at its end: a cancel wins over a failure."""
    if stop_reason == "cancelled":
        return "cancelled"
    return "failed" if failed else "finished"


def check_same_workspace(session_id: str, own: str, asked: str) -> None:
    """A session is loaded (or resumed) in its own workspace only: moving it would hand its
    conversation — the files its tools read — to whatever runs in the other one."""
    if own and own.rstrip("/") != asked.rstrip("/"):
        raise RequestError.invalid_params(
            {
                "sessionId": session_id,
                "cwd": asked,
                "details": f"session {session_id} belongs to workspace {own}; load it with that cwd",
            }
        )


def iso_now(at: float | None = None) -> str:
    """An ISO 8601 UTC timestamp (what ``SessionInfo.updatedAt`` carries)."""
    moment = datetime.datetime.fromtimestamp(time.time() if at is None else at, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
