"""The embedded offline model: deterministic, no network, but a real reply worth watching.

It exists so the main job and the tests run on a fresh machine. It waits a configurable "think"
delay (honouring cancellation), then either requests real tool calls the prompt asks for
("search for TODO", "read README.md", "run ls -la", "list files") or streams a composed answer in
small chunks. After tool results arrive it answers from them.

This module streams; what it says comes from its parts: the tool calls a prompt asks for
(:mod:`.embedded_calls`), the answer to a prompt that needs no tools (:mod:`.embedded_replies`)
and the answer from tool results (:mod:`.embedded_results`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.models.base import (
    Message,
    ModelEvent,
    PlanUpdate,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from acp_adapter.models.embedded_calls import explicit_call, plan_tool_calls, planned_steps, write_call
from acp_adapter.models.embedded_replies import IMAGE_NOTE, acknowledge_images, compose_reply
from acp_adapter.models.embedded_results import answer_from_tools
from acp_adapter.models.plans import steps_from

#: the names other modules import from here (those of the model's parts included)
__all__ = [
    "CONTEXT_WINDOW",
    "EmbeddedModel",
    "acknowledge_images",
    "answer_from_tools",
    "compose_reply",
    "explicit_call",
    "plan_tool_calls",
    "planned_steps",
    "write_call",
]

CONTEXT_WINDOW = 32_768


class EmbeddedModel:
    """Rule-based streaming model with realistic latency."""

    name = "embedded"

    def __init__(
        self, think_delay: float = 2.0, chunk_delay: float = 0.03, follow_up_factor: float = 0.5
    ) -> None:
        self.think_delay = think_delay
        self.chunk_delay = chunk_delay
        self.follow_up_factor = follow_up_factor

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]:
        last = messages[-1] if messages else Message("user", "")
        follow_up = last.role == "tool"
        delay = self.think_delay * (self.follow_up_factor if follow_up else 1.0)
        if cancel.wait(delay):
            raise TurnCancelled(cancel.reason)
        prompt_tokens = sum(_estimate_tokens(m.content) for m in messages)
        if not follow_up:
            direct = explicit_call(last.content, [t.name for t in tools]) or write_call(
                last.content, {t.name for t in tools}
            )
            steps = [] if direct is not None else planned_steps(last.content, {t.name for t in tools})
            calls = [direct] if direct is not None else [call for _, step in steps for call in step]
            if len(steps) >= 2:  # several steps: the client sees them as a plan, moved along by the loop
                yield PlanUpdate(steps_from([(text, [c.id for c in step]) for text, step in steps]).steps)
            if calls:
                for call in calls:
                    cancel.raise_if_cancelled()
                    yield ToolCallRequest(call)
                out = sum(_estimate_tokens(str(c.arguments)) for c in calls)
                yield UsageReport(prompt_tokens, out, prompt_tokens + out, CONTEXT_WINDOW)
                return
            text = compose_reply(last.content, cancel)
            images = IMAGE_NOTE.findall(last.content)
            if images:
                rest = IMAGE_NOTE.sub("", last.content).strip()
                text = acknowledge_images(images) + ("\n\n" + compose_reply(rest, cancel) if rest else "")
        else:
            text = answer_from_tools(messages)
        for chunk in _chunks(text):
            if cancel.wait(self.chunk_delay) if self.chunk_delay > 0 else cancel.cancelled:
                raise TurnCancelled(cancel.reason)
            yield TextDelta(chunk)
        out = _estimate_tokens(text)
        yield UsageReport(prompt_tokens, out, prompt_tokens + out, CONTEXT_WINDOW)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _chunks(text: str, words_per_chunk: int = 3) -> Iterator[str]:
    """Split into chunks of a few words, keeping whitespace so the joined chunks equal ``text``."""
    parts = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(parts), words_per_chunk):
        yield "".join(parts[i : i + words_per_chunk])
