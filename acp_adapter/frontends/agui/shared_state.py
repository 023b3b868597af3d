"""The run's AG-UI shared state: the agent's plan as ``{"plan": [...]}``, snapshot then JSON Patches.

CopilotKit-style front-ends render an agent's plan from AG-UI shared state. The ACP agent sends
its whole plan on every change (``plan``, or ``plan_update`` with items); the client gets one
``STATE_SNAPSHOT`` the first time a run sees a plan, then ``STATE_DELTA`` events carrying only
the RFC 6902 operations that turn the previous plan into the new one (an entry whose status moved
is one ``replace`` of ``/plan/N/status``), so a long plan does not cross the wire on every tick.

Pure: no I/O, no clock; :class:`PlanState` keeps the last published plan. Entry text goes through
the canonical redactor before it is compared or published.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from acp.schema import PlanEntry

from acp_adapter.safety.redact import redact_text

PLAN_KEY: Final = "plan"
#: Entries a plan may carry to the client; the rest is dropped (a plan is a checklist, not a log).
MAX_PLAN_ENTRIES: Final = 200
#: Characters of one entry's text published at most.
MAX_ENTRY_CHARS: Final = 2000
_FIELDS: Final = ("content", "status", "priority")

PlanItem = dict[str, str]


def plan_items(entries: Iterable[PlanEntry]) -> list[PlanItem]:
    """The ACP entries as the state's ``{"content", "status", "priority"}`` dicts, redacted and bounded."""
    items: list[PlanItem] = []
    for entry in entries:
        if len(items) >= MAX_PLAN_ENTRIES:
            break
        items.append(
            {
                "content": redact_text(entry.content[:MAX_ENTRY_CHARS]),
                "status": str(entry.status),
                "priority": str(entry.priority),
            }
        )
    return items


def plan_patch(old: Sequence[PlanItem], new: Sequence[PlanItem]) -> list[dict[str, Any]]:
    """RFC 6902 operations that turn ``{"plan": old}`` into ``{"plan": new}`` (empty when equal).

    Changed fields of an entry are ``replace`` operations, new entries ``add`` at the end and
    dropped ones ``remove``\\d from the end backwards (so every index is valid when applied).
    """
    ops: list[dict[str, Any]] = []
    for index, (before, after) in enumerate(zip(old, new, strict=False)):
        for field in _FIELDS:
            if before.get(field) != after.get(field):
                ops.append({"op": "replace", "path": f"/{PLAN_KEY}/{index}/{field}", "value": after[field]})
    for item in new[len(old) :]:
        ops.append({"op": "add", "path": f"/{PLAN_KEY}/-", "value": dict(item)})
    for index in range(len(old) - 1, len(new) - 1, -1):
        ops.append({"op": "remove", "path": f"/{PLAN_KEY}/{index}"})
    return ops


class PlanState:
    """The plan last published in this run: ``None`` until the first one (then a snapshot is due)."""

    def __init__(self) -> None:
        self.items: list[PlanItem] | None = None

    def change(self, new: list[PlanItem]) -> tuple[str, Any] | None:
        """``("snapshot", state)`` the first time, ``("delta", ops)`` after, ``None`` when nothing changed."""
        old, self.items = self.items, new
        if old is None:
            return "snapshot", {PLAN_KEY: [dict(item) for item in new]}
        ops = plan_patch(old, new)
        return ("delta", ops) if ops else None
