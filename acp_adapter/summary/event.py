"""The capability's output: one replaceable sentence with a revision, and its trace events.

A surface shows the sentence of the highest revision it has seen and replaces it when a higher one
arrives; ``to_dict()`` is the wire shape (``{"type": "progress-summary", "summary", "revision",
"id"?}``) that the AG-UI and chat surfaces send as transient data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

EVENT_TYPE: Final = "progress-summary"

#: A generation failed (raised, timed out, or its template was refused). Never carries the error text.
TRACE_ERROR = "agent.progress-summary.error"
#: A generation was aborted because the turn ended, was cancelled or failed.
TRACE_ABORT = "agent.progress-summary.abort"
#: A new summary revision was emitted.
TRACE_EMIT = "agent.progress-summary.emit"

Outcome: TypeAlias = Literal["finished", "cancelled", "failed"]
"""How the primary stream ended, as given to ``ProgressSummary.stop``."""


@dataclass(frozen=True, slots=True)
class SummaryEvent:
    """One summary: ``revision`` grows by one with each new (changed) sentence in a turn."""

    summary: str
    revision: int
    id: str | None = None
    type: Literal["progress-summary"] = EVENT_TYPE

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: ``id`` only when the capability was given one."""
        out: dict[str, Any] = {"type": self.type, "summary": self.summary, "revision": self.revision}
        if self.id is not None:
            out["id"] = self.id
        return out


SummaryCallback: TypeAlias = Callable[[SummaryEvent], None]
TraceCallback: TypeAlias = Callable[[str, Mapping[str, Any]], None]
