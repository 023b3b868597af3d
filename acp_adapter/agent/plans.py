"""The model's plan as ACP ``plan`` session updates.

Why a callback of its own: a plan is not a tool card (editors render it as a checklist above the
conversation: Zed, Toad), and ACP sends it whole each time, so every change of the loop's
:class:`~acp_adapter.models.plans.PlanTracker` becomes one ``plan`` update with all entries,
through the session's one ordered path (the recorder keeps the last one of each turn for replay).
Entry text is redacted and flattened like every other string the agent sends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from acp import plan_entry, update_plan
from acp.schema import AgentPlanUpdate

from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.models.base import PlanStep
from acp_adapter.tools import one_line

__all__ = ["build_plan", "plan_callback"]

#: The longest entry text a client is sent.
ENTRY_CAP = 300


def build_plan(steps: Sequence[PlanStep]) -> AgentPlanUpdate:
    """The ``plan`` update for ``steps`` (every entry, in order)."""
    return update_plan(
        [plan_entry(one_line(s.content, ENTRY_CAP), priority=s.priority, status=s.status) for s in steps]
    )


def plan_callback(stream: SessionStream) -> Callable[[Sequence[PlanStep]], bool]:
    """``plan_callback(steps)`` for ``run_agent.AIAgent``: each plan goes out while the turn is open."""

    def send_plan(steps: Sequence[PlanStep]) -> bool:
        return stream.send(build_plan(steps))

    return send_plan
