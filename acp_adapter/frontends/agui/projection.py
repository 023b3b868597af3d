"""The pure projection of one run: ACP session updates in, typed AG-UI events out.

No I/O, no clock, no lock: :class:`RunProjection` is the state machine of one AG-UI run (open
text message, open reasoning span, which tool calls are live, which are think cards). The per-run
lock and the delivery of its events live in :mod:`acp_adapter.frontends.agui.run`.

The mapping from ACP updates to AG-UI events:

* ``RUN_STARTED`` first, carrying the AG-UI protocol version this package speaks.
* ``agent_message_chunk`` → ``TEXT_MESSAGE_START/CONTENT/END`` (one message per uninterrupted
  stretch of answer text; streamed text passes a :class:`~acp_adapter.safety.redact.stream.StreamRedactor`
  so a secret split across chunks is still caught).
* ``agent_thought_chunk`` (the agent's own reasoning) → ``REASONING_START``,
  ``REASONING_MESSAGE_START/CONTENT/END``, ``REASONING_END``.
* think cards (``kind="think"`` tool calls: the spinner) are not tool calls and not reasoning:
  they and all their updates are dropped, so spinner text never reaches the client.
* a real tool card → ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (its redacted raw input as JSON),
  ``TOOL_CALL_END`` at once (``TOOL_CALL_START.metadata.acpProgress`` carries the card's title and
  emoji as ``watch`` shows them); its terminal update → ``TOOL_CALL_RESULT`` through the redaction
  policy (kind ``tool_result``), with ``metadata.acpProgress.status`` (``completed``/``failed``).
* ``_meta.acpProgress.progress`` on a live tool's update → one ``ACTIVITY_SNAPSHOT`` per tool call
  per run (``"{runId}:progress:{toolCallId}"``, ``TOOL_PROGRESS``, ``replace: true``) when progress
  is enabled, through the policy (kind ``tool_progress``). Only reported fields; an empty update,
  or one whose every value the policy withheld, publishes nothing; anything for a tool whose
  result was published is ignored.
* ``plan`` (and ``plan_update`` with items) → the shared state ``{"plan": [{content, status,
  priority}]}``: a ``STATE_SNAPSHOT`` the first time, then ``STATE_DELTA`` JSON Patches of what
  changed (:mod:`.shared_state`); ``plan_removed`` empties it.
* an edit card's diff content → a unified diff in its ``TOOL_CALL_RESULT`` (:mod:`.content`).
* ``usage_update`` (the context window: ``used``/``size``, ``cost``) → ``RUN_FINISHED``'s
  ``result.usage``; the prompt response's token counts → ``RUN_FINISHED.usage``.
* ``RUN_FINISHED`` (outcome success or cancelled) or ``RUN_ERROR`` last, after any open text or
  reasoning was closed. After it the projection returns nothing, whatever it is fed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    PlanUpdateItems,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    Usage,
    UsageUpdate,
)
from ag_ui.core import (
    PROTOCOL_VERSION,
    ActivitySnapshotEvent,
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.core.events import TokenUsage

from acp_adapter.frontends.agui.content import tool_content_text
from acp_adapter.frontends.agui.message_streams import MessageStreams
from acp_adapter.frontends.agui.policy import (
    POLICY_REDACTED,
    TOOL_PROGRESS,
    TOOL_RESULT,
    RedactPolicy,
    apply_policy,
    default_policy,
)
from acp_adapter.frontends.agui.shared_state import PlanState, plan_items
from acp_adapter.protocol.cards import CardAccumulator
from acp_adapter.protocol.meta import META_KEY, meta_of
from acp_adapter.safety.redact import redact_text, redact_value
from acp_adapter.tooling.presentation import card_emoji
from acp_adapter.tools import one_line

log = logging.getLogger("acp_progress.agui.projection")

TOOL_PROGRESS_ACTIVITY: Final = "TOOL_PROGRESS"
#: The fields a tool may report; anything else under ``progress`` is not the tool's report.
PROGRESS_FIELDS: Final = ("value", "total", "message")
_TERMINAL: Final = frozenset({"completed", "failed"})


def progress_message_id(run_id: str, tool_call_id: str) -> str:
    """One activity id per tool call per run, so later snapshots replace earlier ones."""
    return f"{run_id}:progress:{tool_call_id}"


def reported_progress(update: ToolCallProgress) -> dict[str, Any]:
    """The values the tool reported on this update (``_meta.acpProgress.progress``), absent ones absent."""
    meta = meta_of(update)
    if meta is None or meta.progress is None:
        return {}
    return meta.progress.dump()


def _block_text(block: Any) -> str:
    return block.text if isinstance(block, TextContentBlock) else ""


def _tool_name(update: ToolCallStart) -> str:
    """This project's agent names the tool in ``_meta.acpProgress.toolId``; other agents give a title."""
    meta = meta_of(update)
    if meta is not None and meta.tool_id:
        return one_line(meta.tool_id, 120)
    return one_line(update.title, 120) or "tool"


def card_presentation(card: Any) -> dict[str, str]:
    """How ``watch`` shows the card: its emoji (:func:`card_emoji`, the shared rule) and its title
    (``🔎 Searching for TODO``), for the page to show the same (``metadata.acpProgress``)."""
    if card is None:
        return {}
    title = redact_text(one_line(card.title or card.tool_id or "tool", 300))
    return {"title": title, "emoji": card_emoji(card.kind, card.tool_id, card.emoji)}


def usage_result(update: UsageUpdate) -> dict[str, Any]:
    """An ACP ``usage_update`` as ``RUN_FINISHED.result.usage``: ``{"used", "size", "cost"?}``."""
    usage: dict[str, Any] = {"used": update.used, "size": update.size}
    if update.cost is not None:
        usage["cost"] = {"amount": update.cost.amount, "currency": one_line(update.cost.currency, 16)}
    return usage


def token_usage(tokens: Usage | None) -> list[TokenUsage] | None:
    """The prompt response's token counts as AG-UI ``TokenUsage`` (None when the agent sent none)."""
    if tokens is None:
        return None
    counts = {
        "input_tokens": tokens.input_tokens,
        "output_tokens": tokens.output_tokens,
        "total_tokens": tokens.total_tokens,
        "reasoning_tokens": tokens.thought_tokens,
        "cached_input_tokens": tokens.cached_read_tokens,
        "cache_write_input_tokens": tokens.cached_write_tokens,
    }
    valid: dict[str, Any] = {k: v for k, v in counts.items() if isinstance(v, int) and 0 <= v <= 2**53 - 1}
    return [TokenUsage.model_validate(valid)] if valid else None


class RunProjection:
    """The event state machine of one AG-UI run. Not thread-safe: :class:`RunEmitter` holds its lock."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        emit_tool_progress: bool = False,
        policy: RedactPolicy = default_policy,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.emit_tool_progress = emit_tool_progress
        self._policy = policy
        self._ids = 0
        self._started = False
        self.closed = False
        #: the open answer text and reasoning (:mod:`.message_streams`)
        self._streams = MessageStreams(self._new_id)
        #: the cards' facts (which are think cards), shared with every front-end; no clock here
        self._cards = CardAccumulator(reports=False)
        #: real tool calls published with TOOL_CALL_START and still without a result
        self.live_tools: set[str] = set()
        self._finished_tools: set[str] = set()
        #: last text each live tool's card showed, the result when its terminal update carries none
        self._last_content: dict[str, str] = {}
        self._plan = PlanState()
        #: the last ``usage_update`` (context window, cost) as published in RUN_FINISHED's result
        self.usage: dict[str, Any] | None = None

    # ------------------------------------------------------------------ ids

    def _new_id(self, kind: str) -> str:
        self._ids += 1
        return f"{self.run_id}:{kind}:{self._ids}"

    # ------------------------------------------------------------------ run lifecycle

    def start(self) -> list[BaseEvent]:
        if self._started:
            return []
        self._started = True
        return [
            RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION)
        ]

    def finish(
        self, *, cancelled: bool = False, stop_reason: str | None = None, tokens: Usage | None = None
    ) -> list[BaseEvent]:
        """Close what is open, then ``RUN_FINISHED``; nothing more is ever produced.

        ``result`` carries the stop reason and the last ``usage_update``; ``tokens`` (the prompt
        response's usage) becomes the event's ``usage``.
        """
        if self.closed:
            return []
        events = self.start() + self._streams.close()
        self.closed = True
        outcome = RunFinishedCancelledOutcome() if cancelled else RunFinishedSuccessOutcome()
        result: dict[str, Any] = {}
        if stop_reason:
            result["stopReason"] = stop_reason
        if self.usage is not None:
            result["usage"] = self.usage
        events.append(
            RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=outcome,
                result=result or None,
                usage=token_usage(tokens),
            )
        )
        return events

    def interrupt(self, interrupts: list[Interrupt]) -> list[BaseEvent]:
        """Close what is open, then ``RUN_FINISHED`` with the ``interrupt`` outcome: the run pauses
        on a question (:mod:`.interrupts`); :meth:`reopen` continues the same turn in the next run."""
        if self.closed:
            return []
        events = self.start() + self._streams.close()
        self.closed = True
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome))
        return events

    def reopen(self, run_id: str) -> None:
        """Continue as run ``run_id`` (a resume): its ``RUN_STARTED`` comes next; the tool calls,
        the plan and the usage of the paused turn carry over."""
        self.run_id = run_id
        self._started = False
        self.closed = False
        self._streams.new_run()

    def error(self, message: str, *, code: str | None = None) -> list[BaseEvent]:
        """Close what is open, then ``RUN_ERROR`` with a short redacted message."""
        if self.closed:
            return []
        events = self.start() + self._streams.close()
        self.closed = True
        events.append(RunErrorEvent(message=one_line(message) or "run failed", code=code))
        return events

    def abandon(self) -> None:
        """The client went away: produce nothing more, not even a terminal event."""
        self.closed = True

    # ------------------------------------------------------------------ updates

    def project(self, update: Any) -> list[BaseEvent]:
        """Map one ACP session update to the AG-UI events it means (often none)."""
        if self.closed:
            return []
        events = self.start()
        if isinstance(update, AgentMessageChunk):
            events += self._streams.text(_block_text(update.content))
        elif isinstance(update, AgentThoughtChunk):
            events += self._streams.reasoning(_block_text(update.content))
        elif isinstance(update, ToolCallStart):
            events += self._tool_start(update)
        elif isinstance(update, ToolCallProgress):
            events += self._tool_update(update)
        elif isinstance(update, AgentPlanUpdate):
            events += self._plan_changed(plan_items(update.entries))
        elif isinstance(update, AgentPlanContentUpdate) and isinstance(update.plan, PlanUpdateItems):
            events += self._plan_changed(plan_items(update.plan.entries))
        elif isinstance(update, AgentPlanRemovedUpdate):
            events += self._plan_changed([])
        elif isinstance(update, UsageUpdate):
            self.usage = usage_result(update)
        return events

    def _plan_changed(self, items: list[dict[str, str]]) -> list[BaseEvent]:
        change = self._plan.change(items)
        if change is None:
            return []
        kind, value = change
        if kind == "snapshot":
            return [StateSnapshotEvent(snapshot=value)]
        return [StateDeltaEvent(delta=value)]

    def activity(
        self, message_id: str, activity_type: str, content: Mapping[str, Any], *, replace: bool = True
    ) -> list[BaseEvent]:
        """An ``ACTIVITY_SNAPSHOT`` (canonically redacted), or nothing once the run closed.

        Reusable by other projections of the same run (progress summaries publish theirs here).
        """
        if self.closed:
            return []
        return [
            *self.start(),
            ActivitySnapshotEvent(
                message_id=message_id,
                activity_type=activity_type,
                content=redact_value(dict(content)),
                replace=replace,
            ),
        ]

    # ------------------------------------------------------------------ tool calls

    def _tool_start(self, update: ToolCallStart) -> list[BaseEvent]:
        call_id = update.tool_call_id
        if self._cards.fold(update, 0.0).card.think:
            return []
        if call_id in self.live_tools or call_id in self._finished_tools:
            log.debug("duplicate tool_call %s ignored", call_id)
            return []
        events = self._streams.close()
        self.live_tools.add(call_id)
        safe_id = redact_text(call_id)
        events.append(
            ToolCallStartEvent(
                tool_call_id=safe_id,
                tool_call_name=_tool_name(update),
                parent_message_id=self._streams.last_text_id,
                metadata={META_KEY: card_presentation(self._cards.get(call_id))},
            )
        )
        if update.raw_input is not None:
            args = json.dumps(redact_value(update.raw_input), ensure_ascii=False, default=str)
            events.append(ToolCallArgsEvent(tool_call_id=safe_id, delta=args))
        events.append(ToolCallEndEvent(tool_call_id=safe_id))
        text = tool_content_text(update.content)
        if text:
            self._last_content[call_id] = text
        if update.status in _TERMINAL:
            events += self._tool_result(call_id, update.status, text)
        return events

    def _tool_update(self, update: ToolCallProgress) -> list[BaseEvent]:
        call_id = update.tool_call_id
        known = self._cards.get(call_id)
        think = known is not None and known.think
        self._cards.fold(update, 0.0)
        if think or call_id not in self.live_tools:
            return []  # spinner updates, or a tool whose result is out (or that never started)
        events: list[BaseEvent] = []
        text = tool_content_text(update.content)
        if text:
            self._last_content[call_id] = text
        if update.status in _TERMINAL:
            return self._tool_result(call_id, update.status, text)
        if self.emit_tool_progress:
            events += self._progress(call_id, reported_progress(update))
        return events

    def _progress(self, call_id: str, progress: dict[str, Any]) -> list[BaseEvent]:
        if not progress:
            return []  # an empty update publishes nothing
        published = apply_policy(self._policy, TOOL_PROGRESS, progress)
        if not published:
            return []  # withheld by (or failing in) the policy
        content = {"toolCallId": call_id, "progress": published}
        return self.activity(progress_message_id(self.run_id, call_id), TOOL_PROGRESS_ACTIVITY, content)

    def _tool_result(self, call_id: str, status: str, text: str | None) -> list[BaseEvent]:
        self.live_tools.discard(call_id)
        self._finished_tools.add(call_id)
        shown = text if text is not None else self._last_content.get(call_id, "")
        self._last_content.pop(call_id, None)
        payload = {"toolCallId": call_id, "status": status, "content": shown}
        published = apply_policy(self._policy, TOOL_RESULT, payload)
        content = published.get("content") if published is not None else None
        if not isinstance(content, str):
            content = POLICY_REDACTED
        return [
            ToolCallResultEvent(
                message_id=self._new_id("result"),
                tool_call_id=redact_text(call_id),
                content=content,
                role="tool",
                metadata={META_KEY: {"status": status}},
            )
        ]
