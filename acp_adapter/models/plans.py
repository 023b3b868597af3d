"""Plans: the model's steps for multi-step work, kept current as its tool calls run.

Why here: a plan is what the model intends (the embedded model derives one from "… and then …" or
a numbered list; an OpenAI-compatible model states one with the :data:`PLAN_TOOL` tool, as codex's
``update_plan`` and Claude's TodoWrite do), and the agent loop moves each step along — pending,
in progress, completed — as the calls it names start and finish. ACP has no "failed" status, so a
failed step is completed with content that says it failed. The ACP side only turns the current
steps into a ``plan`` update (:mod:`acp_adapter.agent.plans`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from acp_adapter.models.base import PlanPriority, PlanStatus, PlanStep, PlanUpdate
from acp_adapter.text import flatten
from acp_adapter.tooling.calls import ToolSpec

__all__ = [
    "MAX_PLAN_STEPS",
    "PLAN_TOOL",
    "PLAN_TOOL_SPEC",
    "PlanTracker",
    "parse_plan_arguments",
]

#: The tool an OpenAI-compatible model states its plan with (answered by the loop, never a card).
PLAN_TOOL = "update_plan"
#: The most steps a plan keeps, and the longest step text (a plan is a short list, not a document).
MAX_PLAN_STEPS = 50
STEP_CAP = 300

_STATUSES: frozenset[str] = frozenset({"pending", "in_progress", "completed"})
_PRIORITIES: frozenset[str] = frozenset({"high", "medium", "low"})

PLAN_TOOL_SPEC = ToolSpec(
    PLAN_TOOL,
    "Share or update your plan for multi-step work: the whole list of steps each time, each with "
    "its status (pending, in_progress, completed) and priority (high, medium, low). The user sees "
    "it as a checklist; keep exactly one step in_progress while you work on it.",
    {
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "why the plan changed (optional)"},
            "plan": {
                "type": "array",
                "description": "the steps, in order",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "what the step does"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                        "priority": {"type": "string", "enum": ["high", "medium", "low"]},
                    },
                    "required": ["content", "status"],
                },
            },
        },
        "required": ["plan"],
    },
)


def parse_plan_arguments(arguments: Mapping[str, Any]) -> PlanUpdate:
    """The plan a :data:`PLAN_TOOL` call states; ``ValueError`` saying what is wrong (the model
    reads it as the tool's result and can retry). ``step`` is accepted for ``content`` (codex)."""
    items = arguments.get("plan") if isinstance(arguments, Mapping) else None
    if not isinstance(items, list):
        raise ValueError("'plan' must be a list of steps")
    if len(items) > MAX_PLAN_STEPS:
        raise ValueError(f"a plan has at most {MAX_PLAN_STEPS} steps (got {len(items)})")
    steps: list[PlanStep] = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise ValueError(f"step {index} must be an object with content and status")
        content = item.get("content", item.get("step"))
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"step {index} has no content")
        status = item.get("status", "pending")
        if status not in _STATUSES:
            raise ValueError(f"step {index}: status must be pending, in_progress or completed")
        priority = item.get("priority", "medium")
        if priority not in _PRIORITIES:
            raise ValueError(f"step {index}: priority must be high, medium or low")
        steps.append(PlanStep(flatten(content, STEP_CAP), status, priority))
    return PlanUpdate(tuple(steps))


def _status(value: str) -> PlanStatus:
    return "in_progress" if value == "in_progress" else "completed" if value == "completed" else "pending"


def _priority(value: str) -> PlanPriority:
    return "high" if value == "high" else "low" if value == "low" else "medium"


class PlanTracker:
    """The current plan of one turn, moved along by the tool calls its steps name.

    Thread-safe (the loop's worker thread changes it; a reader may be elsewhere). Every method
    answers whether the plan changed, so the caller sends an update only then."""

    def __init__(self) -> None:
        self._steps: list[PlanStep] = []
        self._lock = threading.Lock()
        self._started: set[str] = set()
        self._finished: set[str] = set()
        self._failures: dict[int, str] = {}

    @property
    def steps(self) -> tuple[PlanStep, ...]:
        with self._lock:
            return tuple(self._steps)

    def replace(self, update: PlanUpdate) -> bool:
        """A new plan from the model (whole)."""
        with self._lock:
            steps = [
                replace(s, content=flatten(s.content, STEP_CAP), status=_status(s.status))
                for s in update.steps[:MAX_PLAN_STEPS]
            ]
            steps = [replace(s, priority=_priority(s.priority)) for s in steps]
            changed = steps != self._steps
            self._steps = steps
            self._started.clear()
            self._finished.clear()
            self._failures.clear()
            return changed

    def call_started(self, call_id: str) -> bool:
        """A tool call began: its step (pending) is now in progress."""
        with self._lock:
            self._started.add(call_id)
            return self._refresh()

    def call_finished(self, call_id: str, error: str | None = None) -> bool:
        """A tool call ended; ``error`` marks its step as failed (the content says so)."""
        with self._lock:
            self._started.add(call_id)
            self._finished.add(call_id)
            if error:
                for index, step in enumerate(self._steps):
                    if call_id in step.call_ids:
                        self._failures.setdefault(index, error)
            return self._refresh()

    def _refresh(self) -> bool:
        changed = False
        for index, step in enumerate(self._steps):
            if not step.call_ids or step.status == "completed":
                continue
            ids = step.call_ids
            if all(i in self._finished for i in ids):
                failure = self._failures.get(index)
                content = step.content
                if failure:
                    content = flatten(f"{content} — failed: {failure}", STEP_CAP)
                self._steps[index] = replace(step, status="completed", content=content)
                changed = True
            elif step.status == "pending" and any(i in self._started for i in ids):
                self._steps[index] = replace(step, status="in_progress")
                changed = True
        return changed


def steps_from(texts: Sequence[tuple[str, Sequence[str]]]) -> PlanUpdate:
    """A plan of pending steps: ``(text, call ids)`` each, the text as a person reads it."""
    steps = []
    for text, ids in texts[:MAX_PLAN_STEPS]:
        words = " ".join(text.split()).strip(" .,;")
        if words:
            steps.append(PlanStep(flatten(words[0].upper() + words[1:], STEP_CAP), call_ids=tuple(ids)))
    return PlanUpdate(tuple(steps))
