"""A thread's earlier conversation as AG-UI messages: what ``GET /threads/{threadId}`` returns.

A thread is an ACP session, and the session store keeps that session's canonical conversation as
ACP update JSON (:mod:`acp_adapter.store.recorder`: prompts, coalesced answer and thought text,
each tool call once in its final state). A reloaded page, or another AG-UI client opening the
thread, needs that conversation in AG-UI's own terms, so this module turns the stored updates
into ag-ui-protocol messages:

* ``user_message_chunk`` → a ``UserMessage`` (consecutive chunks are one message);
* ``agent_message_chunk`` → an ``AssistantMessage``'s content;
* ``agent_thought_chunk`` → a ``ReasoningMessage``;
* a tool call → a ``ToolCall`` on the assistant message it follows (its redacted raw input as the
  arguments, named like ``TOOL_CALL_START`` names it, its ``metadata.acpProgress`` the card's title
  and emoji as ``watch`` shows them) and a ``ToolMessage`` with its result,
  through the endpoint's redaction policy exactly like ``TOOL_CALL_RESULT`` (``error`` when it
  failed);
* the last plan → ``state`` (``{"plan": [...]}``, the shared state a run would have published).

The answer is bounded: at most :data:`MAX_MESSAGES` messages and :data:`MAX_BYTES` bytes of
message JSON, each text at most :data:`MAX_TEXT_CHARS` characters; the newest messages are kept,
and ``truncated``/``omitted`` say what was left out. Every text passes the canonical redactor
(the store scrubbed it on the way in already; this is the endpoint's own guarantee).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    TextContentBlock,
    ToolCallStart,
    UserMessageChunk,
)
from ag_ui.core import (
    AssistantMessage,
    FunctionCall,
    ReasoningMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from acp_adapter.frontends.agui.content import tool_content_text
from acp_adapter.frontends.agui.policy import POLICY_REDACTED, TOOL_RESULT, RedactPolicy, apply_policy
from acp_adapter.frontends.agui.projection import _tool_name, card_presentation
from acp_adapter.frontends.agui.shared_state import plan_items
from acp_adapter.protocol.cards import CardAccumulator
from acp_adapter.protocol.meta import META_KEY, phase_of
from acp_adapter.safety.redact import redact_text, redact_value

#: Messages one answer carries at most (the newest).
MAX_MESSAGES: Final = 500
#: Bytes of message JSON one answer carries at most (the newest messages that fit).
MAX_BYTES: Final = 2 * 1024 * 1024
#: Characters of one message's text (or one tool's arguments or result) at most.
MAX_TEXT_CHARS: Final = 64 * 1024

AnyMessage = UserMessage | AssistantMessage | ReasoningMessage | ToolMessage


def _capped(text: str, cap: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= cap:
        return text
    return text[:cap] + f"… ({len(text) - cap:,} more characters not shown)"


def _text_of(block: Any) -> str:
    if isinstance(block, TextContentBlock):
        return block.text
    kind = getattr(block, "type", "content")
    return f"[{kind}]"  # an image, a resource …: named, not inlined


class _Builder:
    """Folds stored updates, in order, into messages."""

    def __init__(self, policy: RedactPolicy) -> None:
        self.policy = policy
        self.messages: list[AnyMessage] = []
        #: raw text of the message being extended by consecutive chunks (redacted when finished)
        self._parts: list[str] = []
        self._open: str | None = None  # "user", "assistant" or "reasoning"
        self._assistant: AssistantMessage | None = None  # the one tool calls attach to
        self.plan: list[dict[str, str]] | None = None

    def _id(self) -> str:
        return f"history:{len(self.messages) + 1}"

    def _close(self) -> None:
        if self._open is None:
            return
        text = _capped(redact_text("".join(self._parts)))
        if self._open == "user":
            self.messages.append(UserMessage(id=self._id(), content=text))
            self._assistant = None
        elif self._open == "assistant":
            message = AssistantMessage(id=self._id(), content=text)
            self.messages.append(message)
            self._assistant = message
        else:
            self.messages.append(ReasoningMessage(id=self._id(), content=text))
        self._open = None
        self._parts = []

    def _chunk(self, role: str, text: str) -> None:
        if self._open != role:
            self._close()
            self._open = role
        self._parts.append(text)

    def add(self, update: Any) -> None:
        if isinstance(update, UserMessageChunk):
            self._chunk("user", _text_of(update.content))
        elif isinstance(update, AgentMessageChunk):
            self._chunk("assistant", _text_of(update.content))
        elif isinstance(update, AgentThoughtChunk):
            self._chunk("reasoning", _text_of(update.content))
        elif isinstance(update, ToolCallStart) and phase_of(update) != "thinking":
            self._close()
            self._tool(update)
        elif isinstance(update, AgentPlanUpdate):
            self.plan = plan_items(update.entries)

    def _tool(self, update: ToolCallStart) -> None:
        call_id = redact_text(update.tool_call_id)
        arguments = "{}"
        if update.raw_input is not None:
            arguments = json.dumps(redact_value(update.raw_input), ensure_ascii=False, default=str)
        call = ToolCall(
            id=call_id,
            type="function",
            function=FunctionCall(name=_tool_name(update), arguments=_capped(arguments)),
            metadata={META_KEY: card_presentation(CardAccumulator(reports=False).fold(update, 0.0).card)},
        )
        if self._assistant is None:
            self._assistant = AssistantMessage(id=self._id(), content=None, tool_calls=[])
            self.messages.append(self._assistant)
        self._assistant.tool_calls = [*(self._assistant.tool_calls or []), call]
        status = update.status if update.status in ("completed", "failed") else "failed"
        text = tool_content_text(update.content) or ""
        payload = {"toolCallId": update.tool_call_id, "status": status, "content": text}
        published = apply_policy(self.policy, TOOL_RESULT, payload)
        content = published.get("content") if published is not None else None
        result = _capped(content) if isinstance(content, str) else POLICY_REDACTED
        self.messages.append(
            ToolMessage(
                id=self._id(),
                tool_call_id=call_id,
                content=result,
                error="the tool call failed" if status == "failed" else None,
                metadata={META_KEY: {"status": status}},
            )
        )

    def finish(self) -> list[AnyMessage]:
        self._close()
        return self.messages


def history_messages(updates: Sequence[Any], policy: RedactPolicy) -> tuple[list[AnyMessage], Any]:
    """The stored ``updates`` (SDK update objects, oldest first) as AG-UI messages, and the last
    plan as shared state (``None`` when the thread never had one). Unbounded: see :func:`bounded`."""
    builder = _Builder(policy)
    for update in updates:
        builder.add(update)
    state = {"plan": builder.plan} if builder.plan is not None else None
    return builder.finish(), state


def _dumped(message: AnyMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def bounded(
    messages: Sequence[AnyMessage], *, max_messages: int = MAX_MESSAGES, max_bytes: int = MAX_BYTES
) -> tuple[list[dict[str, Any]], int]:
    """The newest ``messages`` that fit both caps, as JSON objects, and how many older ones were
    left out. A tool result is never kept without the assistant message that called it: the cut
    moves past any leading tool messages."""
    kept: list[dict[str, Any]] = []
    size = 0
    for message in reversed(messages[-max_messages:] if max_messages > 0 else []):
        dumped = _dumped(message)
        cost = len(json.dumps(dumped, ensure_ascii=False).encode())
        if size + cost > max_bytes:
            break
        kept.append(dumped)
        size += cost
    kept.reverse()
    while kept and kept[0].get("role") == "tool":
        kept.pop(0)
    return kept, len(messages) - len(kept)
