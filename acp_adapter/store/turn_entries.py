"""One running turn's canonical entries, collected from the live update stream (history is canonical).

The stream a client sees is full of things that only matter while they happen: think-card
spinners and their heartbeats, progress snapshots, text in dozens of chunks. What a turn keeps is
what happened: the user's prompt, the agent's thought and message text (coalesced — one entry per
run of chunks), each real tool call once, in its final state, the last plan, the last usage.

Why a module of its own: deciding what of the stream is history is pure bookkeeping on the event
loop, apart from when and how the entries reach the store
(:class:`~acp_adapter.store.recorder.ConversationRecorder`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from acp_adapter.protocol.meta import phase_of
from acp_adapter.store.base import JsonObject

#: The tool-call statuses a stored card may end in (a replay never leaves a card spinning).
TERMINAL_STATUSES: Final = frozenset({"completed", "failed"})
#: The most characters of one text a session keeps (a prompt, an answer, a history message): a
#: 15 MB prompt is kept as its first MiB and a note, not five times over.
STORED_TEXT_CAP = 1 << 20
#: What ends a streamed text cut at :data:`STORED_TEXT_CAP`.
STREAM_CUT_NOTE = "… (the rest was not kept)"
#: What ends a cancelled turn's stored entries: a replay shows the turn as its own (a client joins
#: consecutive user message chunks, so a cancelled prompt would glue onto the next one) and says why.
CANCELLED_NOTE = "(cancelled)"
#: The same for a turn that failed before the agent said anything.
FAILED_NOTE = "(the turn failed)"


def dump_update(update: Any) -> JsonObject:
    """An update as the JSON object a session stores (the wire's field names, no empty fields)."""
    dumped: JsonObject = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def new_message_id() -> str:
    """A ``messageId`` for a message the store itself writes (a prompt, a note)."""
    return f"msg_{uuid.uuid4().hex}"


def agent_note(text: str) -> JsonObject:
    """A stored agent message of its own saying ``text`` (a note the store adds to a conversation)."""
    return dump_update(
        AgentMessageChunk(
            session_update="agent_message_chunk",
            content=TextContentBlock(type="text", text=text),
            message_id=new_message_id(),
        )
    )


#: the note :func:`capped` ends a cut text with (so a text cut once is never cut again)
_CAP_NOTE = re.compile(r"… \([0-9,]+ more characters not kept\)")


def capped(text: str, cap: int) -> str:
    """``text`` whole when it fits ``cap`` characters, else its start and a note of what is not kept."""
    if len(text) <= cap or _CAP_NOTE.fullmatch(text, cap) is not None:
        return text  # it fits, or it was cut already (a history message stored by an earlier turn)
    return text[:cap] + f"… ({len(text) - cap:,} more characters not kept)"


def is_think_card(update: ToolCallStart) -> bool:
    return phase_of(update) == "thinking"


def is_progress(update: ToolCallProgress) -> bool:
    return phase_of(update) == "progress"


@dataclass
class TurnEntries:
    """The entries of one turn while it runs, fed every update the client is sent, in order."""

    entries: list[JsonObject] = field(default_factory=list)
    #: tool-call id -> its entry (a dict inside ``entries``, updated in place)
    tools: dict[str, JsonObject] = field(default_factory=dict)
    think_cards: set[str] = field(default_factory=set)
    plan_at: int | None = None
    usage: JsonObject | None = None
    #: how many of ``entries`` (the prompt) were written when the turn began
    written: int = 0

    def add_prompt(self, prompt: Sequence[Any]) -> list[JsonObject]:
        """Keep the user's prompt (one message, each text capped); returns copies of its entries,
        which go to disk at once, so a turn killed mid-way is not lost."""
        message_id = new_message_id()
        for block in prompt:
            chunk = UserMessageChunk(
                session_update="user_message_chunk", content=block, message_id=message_id
            )
            entry = dump_update(chunk)
            content = entry.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                content["text"] = capped(content["text"], STORED_TEXT_CAP)
            self.entries.append(entry)
        prompt_entries = [dict(entry) for entry in self.entries]
        self.written = len(prompt_entries)
        return prompt_entries

    def record(self, update: Any) -> None:
        """Keep what ``update`` adds to the history; presentation only (spinners, snapshots) is dropped."""
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk):
            self._text(update)
        elif isinstance(update, ToolCallStart):
            if is_think_card(update):
                self.think_cards.add(update.tool_call_id)
                return
            entry = dump_update(update)
            self.tools[update.tool_call_id] = entry
            self.entries.append(entry)
        elif isinstance(update, ToolCallProgress):
            self._tool_progress(update)
        elif isinstance(update, AgentPlanUpdate):
            entry = dump_update(update)
            if self.plan_at is not None:
                self.entries[self.plan_at] = entry
            else:
                self.plan_at = len(self.entries)
                self.entries.append(entry)
        elif isinstance(update, UsageUpdate):
            self.usage = dump_update(update)
        elif isinstance(update, SessionInfoUpdate):
            self.entries.append(dump_update(update))

    def _tool_progress(self, update: ToolCallProgress) -> None:
        """A real tool call's changes, merged into its one entry (the entry ends in its final state)."""
        if update.tool_call_id in self.think_cards or is_progress(update):
            return  # spinner heartbeats and progress snapshots are presentation, not history
        found = self.tools.get(update.tool_call_id)
        if found is None:
            return
        changes = dump_update(update)
        changes.pop("sessionUpdate", None)
        changes.pop("_meta", None)
        found.update(changes)

    def _text(self, update: AgentMessageChunk | AgentThoughtChunk) -> None:
        """A chunk of answer or thought text, joined onto its message's entry (one entry per message)."""
        content = update.content
        last = self.entries[-1] if self.entries else None
        if (
            isinstance(content, TextContentBlock)
            and last is not None
            and last.get("sessionUpdate") == update.session_update
            and last.get("content", {}).get("type") == "text"
            and last.get("messageId") == update.message_id  # one stored entry per message
        ):
            kept = last["content"]["text"]
            if len(kept) < STORED_TEXT_CAP:  # beyond the cap the rest of the stream is not kept
                whole = kept + content.text
                cut = whole if len(whole) <= STORED_TEXT_CAP else whole[:STORED_TEXT_CAP] + STREAM_CUT_NOTE
                last["content"]["text"] = cut
            return
        entry = dump_update(update)
        text = entry.get("content", {}).get("text")
        if isinstance(text, str) and len(text) > STORED_TEXT_CAP:
            entry["content"]["text"] = text[:STORED_TEXT_CAP] + STREAM_CUT_NOTE
        self.entries.append(entry)

    def closing(self, stop_reason: str | None, failed: bool) -> list[JsonObject]:
        """The entries not yet written, as the turn ends: a cancelled turn ends with a
        :data:`CANCELLED_NOTE` agent message, a failed one that said nothing with :data:`FAILED_NOTE`
        (each turn replays as its own, never merged into the next); every tool in a terminal state;
        the last usage."""
        if stop_reason == "cancelled":
            _end_with_note(self.entries, CANCELLED_NOTE)
        elif failed and not any(e.get("sessionUpdate") == "agent_message_chunk" for e in self.entries):
            _end_with_note(self.entries, FAILED_NOTE)
        entries = list(self.entries[self.written :])
        for entry in entries:
            if entry.get("sessionUpdate") == "tool_call" and entry.get("status") not in TERMINAL_STATUSES:
                entry["status"] = "failed"  # cannot happen (no orphan card), but a replay never spins
        if self.usage is not None:
            entries.append(self.usage)
        return entries


def _end_with_note(entries: list[JsonObject], note: str) -> None:
    """Close a turn's entries with an agent ``note`` (after a blank line, when the agent's text is last)."""
    last = entries[-1] if entries else None
    if last is not None and last.get("sessionUpdate") == "agent_message_chunk":
        content = last.get("content")
        if isinstance(content, dict) and content.get("type") == "text":
            content["text"] = f"{content.get('text', '')}\n\n{note}"
            return
    entries.append(agent_note(note))
