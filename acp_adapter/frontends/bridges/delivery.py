"""Platform-neutral delivery of one route's events onto a :class:`~.sink.ChatSink` (the bridge SDK part).

``accumulate``: the first progress line is posted, later lines edit the same message. Edits
are budgeted per route: at most one edit per coalescing window (1.5 s); changes inside a
window wait for a trailing flush, so a burst of updates costs one edit. Consecutive identical
lines collapse as ``(×N)``; a terminal line replaces its tool's started line in place; a
continuation message starts before the platform's limit (measured in the platform's unit).
Answer text closes the bubble: a later tool starts a new bubble below the answer.

``separate``: one message per line, no progress edits.

Progress summaries in a channel placeholder: the turn's latest summary is shown in
one placeholder message (``⏳ <summary>``), posted once the turn has had a summary for
``placeholder_delay`` seconds (a turn answered sooner needs no status message and costs no post,
delete or extra notification) and then edited in place under the same edit budget as progress.
When the turn ends the placeholder is deleted *before* the final reply is posted, so the reply is
a new message and the platform notifies the person as it does for any message. A summary that
reaches delivery outside its turn, or is not newer than the one shown, is ignored.

Typing is kept on while a tool or think card is active (re-sent before the platform lets it
lapse) and turned off at terminal phases. Reactions go on the user's message. Every text
handed to the sink passes the canonical redactor right here, at the edge; a failing platform
call is logged (redacted) and never breaks the turn.

Time comes from the injected ``clock``; :meth:`RouteDelivery.next_deadline` and
:meth:`RouteDelivery.tick` let a worker (or a test with a fake clock) drive the timers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import (
    AnswerText,
    BridgeEvent,
    DeleteMessage,
    ErrorNotice,
    Notice,
    PlanUpdate,
    ProgressEvent,
    ProgressPayload,
    ReactionEvent,
    ReactionKind,
    SummaryUpdate,
    ThoughtText,
    TurnEnd,
    TurnStart,
    TypingEvent,
)
from acp_adapter.frontends.bridges.retry import DeliveryDropped
from acp_adapter.frontends.bridges.sink import (
    ChatSink,
    MessageId,
    SendOutcomeUnknown,
    split_to_fit,
)
from acp_adapter.frontends.bridges.state import BridgeState, unsure_note
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import ellipsize, format_elapsed

log = logging.getLogger("acp_progress.bridges.delivery")

COALESCE_WINDOW: Final = 1.5
"""Seconds: at most one progress edit per route per window."""
LONG_TOOL_MS: Final = 30_000
"""Completed lines show the duration when the tool ran at least this long."""
TYPING_REFRESH: Final = 0.8
"""Re-send typing after this fraction of the platform's typing lifetime."""
PLACEHOLDER_PREFIX: Final = "📝 "
"""The summary placeholder reads ``📝 <summary>`` (⏳ is the ``wait`` tool's: one symbol per meaning)."""
PLACEHOLDER_DELAY: Final = 3.0
"""Seconds a turn has had a summary before its placeholder is posted (0: at the first summary)."""


def render_line(payload: ProgressPayload) -> str:
    """``emoji label preview`` / ``✅ label preview (duration)`` / ``❌ label preview — error``."""
    title = f"{payload.label} {payload.preview}" if payload.preview else payload.label
    if payload.phase == "started":
        return f"{payload.emoji} {title}"
    if payload.phase == "completed":
        line = f"✅ {title}"
        if payload.duration_ms is not None and payload.duration_ms >= LONG_TOOL_MS:
            line += f" ({format_elapsed(payload.duration_ms / 1000)})"
        return f"{line} — {payload.diff}" if payload.diff else line
    line = f"❌ {title}"
    return f"{line} — {payload.error}" if payload.error else line


def collapse_lines(lines: list[str]) -> str:
    """Join lines, collapsing runs of identical consecutive lines into ``line (×N)``."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j + 1 < len(lines) and lines[j + 1] == lines[i]:
            j += 1
        n = j - i + 1
        out.append(lines[i] if n == 1 else f"{lines[i]} (×{n})")
        i = j + 1
    return "\n".join(out)


@dataclass
class _Message:
    """One platform message of a progress bubble: its entries ``[tool_call_id, line]``."""

    entries: list[list[str]] = field(default_factory=list)
    message_id: MessageId = None
    shown: str | None = None

    def text(self) -> str:
        return collapse_lines([line for _, line in self.entries])


@dataclass
class DeliveryStats:
    """What the platform was asked to do (the benchmark and ``bridge show`` read these)."""

    posts: int = 0
    edits: int = 0
    deletes: int = 0
    typing: int = 0
    reactions: int = 0
    failures: int = 0
    edit_times: list[float] = field(default_factory=list)
    dropped_by_reason: dict[str, int] = field(default_factory=dict)
    """Deliveries the platform layer gave up on by policy (e.g. ``retry_after_over_cap``)."""

    def drop(self, reason: str) -> None:
        self.dropped_by_reason[reason] = self.dropped_by_reason.get(reason, 0) + 1


class RouteDelivery:
    """Lays out one route's event stream on its sink."""

    def __init__(
        self,
        sink: ChatSink,
        config: ProgressConfig,
        clock: Callable[[], float],
        *,
        window: float = COALESCE_WINDOW,
        placeholder_delay: float = PLACEHOLDER_DELAY,
        state: BridgeState | None = None,
        chat: Any = None,
    ) -> None:
        self.sink = sink
        #: the durable outbox answers go through (None: posted directly, nothing kept)
        self.state = state
        self.chat = chat
        self.config = config
        self.clock = clock
        self.window = window
        self.placeholder_delay = placeholder_delay
        self.stats = DeliveryStats()
        self._current: _Message | None = None
        self._started_at: dict[str, tuple[_Message, int]] = {}
        self._open: dict[str, ProgressPayload] = {}  # started lines shown, not yet terminal
        self._dirty: list[_Message] = []
        self._last_edit = -math.inf
        self._answer_segment: int | None = None
        self._answer_text = ""
        self._answered = False
        self._react_target: MessageId = None
        self._typing_on = False
        self._typing_next = math.inf
        #: a tool or think card is active (the turn is visibly working): the placeholder may show
        self._active = False
        # the progress-summary placeholder of the running turn
        self._in_turn = False
        self._placeholder: _Message | None = None  # posted (or its post attempted)
        self._placeholder_line: str | None = None  # waiting for its delay before the first post
        self._placeholder_due = math.inf
        self._summary_revision = 0
        self._plan: _Message | None = None  # the turn's plan message (accumulate: edited in place)

    # ------------------------------------------------------------------------- turn

    def begin_turn(self, user_message: MessageId = None) -> None:
        """A new prompt: reactions go on ``user_message``; the next progress opens a new bubble."""
        self._react_target = user_message
        self._close_bubble()
        self._open = {}
        self._answered = False
        self._plan = None
        self._in_turn = True
        self._active = True  # a turn is working from its start (the model thinks) until it idles

    async def handle(self, event: BridgeEvent) -> None:
        """Deliver one event from the route queue."""
        if isinstance(event, ProgressEvent):
            await self._progress(event.payload)
        elif isinstance(event, TypingEvent):
            self._active = event.on
            await self.set_typing(event.on)
        elif isinstance(event, AnswerText):
            if self._answer_segment is not None and event.segment != self._answer_segment:
                await self._post_answer()
            self._answer_segment = event.segment
            self._answer_text = event.text
            self._active = False  # the answer is coming: a status message now would only flash
            self._close_bubble()
        elif isinstance(event, ReactionEvent):
            await self._react(event.kind)
        elif isinstance(event, SummaryUpdate):
            await self._summary(event)
        elif isinstance(event, PlanUpdate):
            await self._plan_update(event)
        elif isinstance(event, ThoughtText):
            if self.config.thoughts:
                await self._post_answer()
                line = ellipsize(f"💭 {event.text}", self.sink.limit, measure=self.sink.measure)
                await self._post(line, silent=True)
        elif isinstance(event, ErrorNotice):
            await self._end_placeholder()
            await self._post_answer()
            self._close_bubble()
            await self._post(f"❌ {event.text}")
            self._answered = True
        elif isinstance(event, Notice):
            await self._post(event.text, silent=True)
        elif isinstance(event, TurnStart):
            await self._end_placeholder()
            await self._post_answer()
            self.begin_turn(event.user_message)
        elif isinstance(event, DeleteMessage):
            await self._call("delete", self.sink.delete(event.message_id))
            self.stats.deletes += 1
        elif isinstance(event, TurnEnd):
            await self._end_placeholder()  # first: the final reply below is a new message
            if event.interrupted is not None:
                await self._fail_open(event.interrupted)
            await self._post_answer()
            self._close_bubble()
            await self.set_typing(False)
            if not self._answered:
                if event.interrupted is not None:
                    await self._post(f"⏹ Stopped: {event.interrupted}.")
                elif event.stop_reason == "cancelled":
                    await self._post("⏹ Cancelled.")
                else:
                    await self._post(f"(no answer: {event.stop_reason})")
                self._answered = True
        await self.tick()

    async def _progress(self, payload: ProgressPayload) -> None:
        await self._post_answer()
        if payload.phase == "started":
            self._open[payload.tool_call_id] = payload
        else:
            self._open.pop(payload.tool_call_id, None)
        if self.config.grouping == "separate":
            await self._post(render_line(payload), silent=True)
        else:
            await self._accumulate(payload)

    async def _fail_open(self, reason: str) -> None:
        """The turn was cut short: every line still showing a running tool ends ``❌ … — reason``."""
        for payload in list(self._open.values()):
            failed = ProgressPayload(
                tool_call_id=payload.tool_call_id,
                tool_id=payload.tool_id,
                phase="failed",
                label=payload.label,
                preview=payload.preview,
                emoji=payload.emoji,
                index=payload.index,
                error=reason,
            )
            await self._progress(failed)
        await self._flush_edits(force=True)

    async def _plan_update(self, event: PlanUpdate) -> None:
        """The plan: one message edited in place (coalesced like progress), or a message per change."""
        text = ellipsize("\n".join(event.lines), self.sink.limit, measure=self.sink.measure)
        if self.config.grouping == "separate" or self._plan is None:
            await self._post_answer()
            msg = _Message(entries=[["plan", text]])
            msg.message_id = await self._post(text, silent=True)
            msg.shown = text
            if self.config.grouping != "separate":
                self._plan = msg
            return
        self._plan.entries = [["plan", text]]
        self._mark_dirty(self._plan)

    # --------------------------------------------------------------------- accumulate

    def _close_bubble(self) -> None:
        self._current = None
        self._started_at = {}

    async def _accumulate(self, payload: ProgressPayload) -> None:
        line = ellipsize(render_line(payload), self.sink.limit, measure=self.sink.measure)
        call_id = payload.tool_call_id
        started = payload.phase == "started"
        msg = self._current
        if msg is None:
            await self._open_message(call_id, line, started)
            return
        slot = self._started_at.pop(call_id, None) if payload.phase != "started" else None
        if slot is not None and slot[0] is msg:
            old = msg.entries[slot[1]][1]
            msg.entries[slot[1]][1] = line
            if self.sink.measure(msg.text()) > self.sink.limit:
                msg.entries[slot[1]][1] = old
                await self._open_message(call_id, line, started)
                return
        else:
            msg.entries.append([call_id, line])
            if self.sink.measure(msg.text()) > self.sink.limit:
                msg.entries.pop()
                await self._open_message(call_id, line, started)
                return
            if started:
                self._started_at[call_id] = (msg, len(msg.entries) - 1)
        self._mark_dirty(msg)

    async def _open_message(self, call_id: str, line: str, started: bool) -> None:
        """Start a bubble or a continuation with one line: posted at once (a post is not an edit)."""
        msg = _Message(entries=[[call_id, line]])
        self._current = msg
        self._started_at = {call_id: (msg, 0)} if started else {}
        msg.message_id = await self._post(line, silent=True)
        msg.shown = line

    def _mark_dirty(self, msg: _Message) -> None:
        if msg not in self._dirty:
            self._dirty.append(msg)

    async def _flush_edits(self, *, force: bool = False) -> None:
        """Edit dirty messages: one per window (oldest first), or all of them when forced."""
        while self._dirty:
            now = self.clock()
            if not force and now < self._last_edit + self.window:
                return
            msg = self._dirty.pop(0)
            text = msg.text()
            if text == msg.shown:
                continue
            if msg.message_id is None:  # its post failed: try posting again
                msg.message_id = await self._post(text, silent=True)
            else:
                ok = await self._call("edit", self.sink.edit(msg.message_id, redact_text(text)))
                self.stats.edits += 1
                self.stats.edit_times.append(now)
                if not ok:
                    self.stats.failures += 1
            msg.shown = text
            self._last_edit = now
            if not force:
                return

    # -------------------------------------------------------------------- placeholder

    async def _summary(self, event: SummaryUpdate) -> None:
        if not self._in_turn or event.revision <= self._summary_revision:
            return  # after its turn, or older than what is shown: never displayed
        self._summary_revision = event.revision
        text = " ".join(event.summary.split())
        if not text:
            return
        line = ellipsize(PLACEHOLDER_PREFIX + text, self.sink.limit, measure=self.sink.measure)
        msg = self._placeholder
        if msg is not None:
            msg.entries[0][1] = line
            self._mark_dirty(msg)  # an edit, under the route's edit budget
            return
        self._placeholder_line = line
        if self._placeholder_due == math.inf:
            self._placeholder_due = self.clock() + self.placeholder_delay
        await self._post_placeholder_if_due()

    async def _post_placeholder_if_due(self) -> None:
        line = self._placeholder_line
        if line is None or self.clock() < self._placeholder_due:
            return
        if not self._active:  # nothing is running now (the last tool finished): no status message
            return
        self._placeholder_line = None
        self._placeholder_due = math.inf
        msg = _Message(entries=[["", line]])
        self._placeholder = msg
        msg.message_id = await self._post(line, silent=True)
        msg.shown = line

    async def _end_placeholder(self) -> None:
        """The turn is over: no summary is shown any more; a posted placeholder is deleted."""
        self._in_turn = False
        self._placeholder_line = None
        self._placeholder_due = math.inf
        self._summary_revision = 0
        msg, self._placeholder = self._placeholder, None
        if msg is None:
            return
        if msg in self._dirty:
            self._dirty.remove(msg)
        if msg.message_id is not None:
            self.stats.deletes += 1
            if not await self._call("delete", self.sink.delete(msg.message_id)):
                self.stats.failures += 1

    @property
    def placeholder(self) -> MessageId:
        """The platform id of the turn's posted placeholder, or None."""
        return self._placeholder.message_id if self._placeholder is not None else None

    # ------------------------------------------------------------------------ answer

    async def _post_answer(self) -> None:
        if self._answer_segment is None:
            return
        text = self._answer_text
        self._answer_segment = None
        self._answer_text = ""
        if not text.strip():
            return
        await self._flush_edits(force=True)  # the last progress edit lands before the answer
        chunks = split_to_fit(redact_text(text), self.sink.limit, self.sink.measure)
        if self.state is None:
            for chunk in chunks:
                await self._post(chunk)
        else:  # durable outbox: every chunk stored before the first is sent
            keys = [self.state.outbox_add(self.chat, chunk) for chunk in chunks]
            for key, chunk in zip(keys, chunks, strict=True):
                self.stats.posts += 1
                if not await send_chunk(self.sink, self.state, key, chunk):
                    self.stats.failures += 1
        self._answered = True

    # ---------------------------------------------------------------- typing, reactions

    async def set_typing(self, active: bool) -> None:
        """Typing on while a tool/think card is active; re-sent before the platform lets it lapse."""
        if not self.config.typing or self.sink.typing_ttl is None or active == self._typing_on:
            return
        self._typing_on = active
        if active:
            await self._send_typing()
        else:
            self._typing_next = math.inf
            await self._call("typing", self.sink.typing(False))

    async def _send_typing(self) -> None:
        ttl = self.sink.typing_ttl or 0.0
        self._typing_next = self.clock() + ttl * TYPING_REFRESH
        self.stats.typing += 1
        await self._call("typing", self.sink.typing(True))

    async def _react(self, kind: ReactionKind) -> None:
        if not self.config.reactions or self._react_target is None:
            return
        self.stats.reactions += 1
        await self._call("react", self.sink.react(self._react_target, kind))

    # -------------------------------------------------------------------------- timers

    def next_deadline(self) -> float | None:
        """When :meth:`tick` has work next (trailing flush or typing refresh); None: nothing pending."""
        times = [self._typing_next] if self._typing_on else []
        if self._dirty:
            times.append(self._last_edit + self.window)
        if self._placeholder_line is not None and self._active:
            times.append(self._placeholder_due)
        return min(times) if times else None

    async def tick(self) -> None:
        """Run what is due: the placeholder's first post, the trailing edit flush, the typing refresh."""
        await self._post_placeholder_if_due()
        await self._flush_edits()
        if self._typing_on and self.clock() >= self._typing_next:
            await self._send_typing()

    async def close(self) -> None:
        """Shutting down: drop the placeholder, flush every pending edit and post any pending answer."""
        await self._end_placeholder()
        await self._post_answer()
        await self._flush_edits(force=True)
        await self.set_typing(False)

    @property
    def pending_edits(self) -> int:
        return len(self._dirty)

    # --------------------------------------------------------------------------- calls

    async def _post(self, text: str, *, silent: bool = False) -> MessageId:
        self.stats.posts += 1
        try:
            return await self.sink.post(redact_text(text), silent=silent)
        except DeliveryDropped as exc:
            self.stats.drop(exc.reason)
            log.info("post dropped: %s", exc)
            return None
        except Exception as exc:
            self.stats.failures += 1
            log.warning("post failed: %s", redact_text(str(exc)))
            return None

    async def _call(self, what: str, op: Any) -> bool:
        try:
            await op
        except DeliveryDropped as exc:
            self.stats.drop(exc.reason)
            log.info("%s dropped: %s", what, exc)
            return False
        except Exception as exc:
            log.warning("%s failed: %s", what, redact_text(str(exc)))
            return False
        return True


async def send_chunk(sink: ChatSink, state: BridgeState, key: str, text: str) -> bool:
    """Send one stored answer chunk through the outbox; True once the platform confirmed it.

    Marked ``sending`` before the call (a crash during it leaves ``sending``: outcome unknown),
    removed once confirmed. A send whose outcome is unknown (a timeout) is *marked*, never sent
    again: the chat may already show it, so instead of a possible duplicate it gets one short
    notice quoting the chunk's start (:func:`~.state.unsure_note`), and the person can tell whether
    that part arrived. A send the platform refused (or dropped) stays stored (``failed``) and is
    tried again after a restart.
    """
    state.outbox_mark(key, "sending")
    try:
        await sink.post(text, exactly_once=True)
    except SendOutcomeUnknown as exc:
        state.outbox_mark(key, "unknown")
        log.warning("answer chunk %s: outcome unknown (%s); marked, not sent again", key, exc)
        await _settle_unknown(sink, state, key, text)
        return False
    except DeliveryDropped as exc:
        state.outbox_mark(key, "failed")
        log.info("answer chunk %s dropped: %s; kept for the next start", key, exc)
        return False
    except Exception as exc:
        state.outbox_mark(key, "failed")
        log.warning("answer chunk %s not sent: %s; kept for the next start", key, redact_text(str(exc)))
        return False
    state.outbox_sent(key)
    return True


async def _settle_unknown(sink: ChatSink, state: BridgeState, key: str, text: str) -> None:
    """A chunk whose delivery nobody can confirm: say so once in the chat, then let it go."""
    try:
        await sink.post(unsure_note(text))
    except Exception as exc:  # the notice is a courtesy: its own failure loses nothing more
        log.warning("could not post the unsure-delivery notice: %s", redact_text(str(exc))[:200])
    state.outbox_sent(key)


async def flush_outbox(sink: ChatSink, state: BridgeState, chat: Any) -> int:
    """After a restart: send the chat's stored answer chunks, oldest first; returns how many went.

    ``pending``/``failed`` chunks were never shown and go as they are; ``sending``/``unknown`` ones
    may have been shown, so they are not sent again: the chat gets the unsure-delivery notice."""
    sent = 0
    for entry in state.outbox(chat):
        if entry.state in ("sending", "unknown"):
            await _settle_unknown(sink, state, entry.key, entry.text)
        elif await send_chunk(sink, state, entry.key, entry.text):
            sent += 1
    return sent
