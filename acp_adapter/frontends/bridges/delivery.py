"""Platform-neutral delivery of one route's events onto a :class:`~.sink.ChatSink` (the bridge SDK part).

:class:`RouteDelivery` reads the route's ordered events and hands each to the part that shows it:
tool lines and the plan to the progress bubbles (:mod:`.bubbles`, with the route's edit budget),
answer text to the pending answer (:mod:`.answers`, through the durable outbox when there is one),
summaries to the placeholder (:mod:`.placeholder`), typing to the typing indicator. Answer text
closes the bubble: a later tool starts a new bubble below the answer.

Typing is kept on while a tool or think card is active (re-sent before the platform lets it
lapse) and turned off at terminal phases. Reactions go on the user's message. Every text
handed to the sink passes the canonical redactor at the edge (:mod:`.sink_calls`); a failing
platform call is logged (redacted) and never breaks the turn.

Time comes from the injected ``clock``; :meth:`RouteDelivery.next_deadline` and
:meth:`RouteDelivery.tick` let a worker (or a test with a fake clock) drive the timers.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

from acp_adapter.frontends.bridges.answers import PendingAnswer
from acp_adapter.frontends.bridges.bubbles import EditBudget, ProgressBubbles
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
    SummaryUpdate,
    ThoughtText,
    TurnEnd,
    TurnStart,
    TypingEvent,
)
from acp_adapter.frontends.bridges.placeholder import SummaryPlaceholder
from acp_adapter.frontends.bridges.sink import ChatSink, MessageId
from acp_adapter.frontends.bridges.sink_calls import DeliveryStats, SinkCalls
from acp_adapter.frontends.bridges.state import BridgeState

COALESCE_WINDOW: Final = 1.5
"""Seconds: at most one progress edit per route per window."""
TYPING_REFRESH: Final = 0.8
"""Re-send typing after this fraction of the platform's typing lifetime."""
PLACEHOLDER_DELAY: Final = 3.0
"""Seconds a turn has had a summary before its placeholder is posted (0: at the first summary)."""


class TypingIndicator:
    """The chat's typing state: on while the turn visibly works, re-sent before the platform lets
    it lapse (``typing_ttl``), off at terminal phases; nothing when the platform has no typing."""

    def __init__(self, calls: SinkCalls, enabled: bool, clock: Callable[[], float]) -> None:
        self._calls = calls
        self._enabled = enabled
        self._clock = clock
        self._on = False
        self._next = math.inf

    async def set(self, active: bool) -> None:
        if not self._enabled or self._calls.sink.typing_ttl is None or active == self._on:
            return
        self._on = active
        if active:
            await self._send()
        else:
            self._next = math.inf
            await self._calls.call("typing", self._calls.sink.typing(False))

    def next_due(self) -> float | None:
        return self._next if self._on else None

    async def refresh_if_due(self) -> None:
        if self._on and self._clock() >= self._next:
            await self._send()

    async def _send(self) -> None:
        ttl = self._calls.sink.typing_ttl or 0.0
        self._next = self._clock() + ttl * TYPING_REFRESH
        self._calls.stats.typing += 1
        await self._calls.call("typing", self._calls.sink.typing(True))


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
        self.config = config
        self.clock = clock
        self.stats = DeliveryStats()
        self._calls = SinkCalls(sink, self.stats)
        self._edits = EditBudget(self._calls, clock, window)
        self._bubbles = ProgressBubbles(self._calls, self._edits, config)
        self._answer = PendingAnswer(self._calls, self._edits, state, chat)
        self._placeholder = SummaryPlaceholder(self._calls, self._edits, clock, placeholder_delay)
        self._typing = TypingIndicator(self._calls, config.typing, clock)
        self._react_target: MessageId = None
        #: a tool or think card is active (the turn is visibly working): the placeholder may show
        self._active = False
        self._handlers: dict[type[Any], Callable[[Any], Awaitable[None]]] = {
            ProgressEvent: self._on_progress,
            TypingEvent: self._on_typing,
            AnswerText: self._on_answer,
            ReactionEvent: self._on_reaction,
            SummaryUpdate: self._on_summary,
            PlanUpdate: self._on_plan,
            ThoughtText: self._on_thought,
            ErrorNotice: self._on_error,
            Notice: self._on_notice,
            TurnStart: self._on_turn_start,
            DeleteMessage: self._on_delete,
            TurnEnd: self._on_turn_end,
        }

    def begin_turn(self, user_message: MessageId = None) -> None:
        """A new prompt: reactions go on ``user_message``; the next progress opens a new bubble."""
        self._react_target = user_message
        self._bubbles.begin_turn()
        self._answer.begin_turn()
        self._placeholder.begin_turn()
        self._active = True  # a turn is working from its start (the model thinks) until it idles

    async def handle(self, event: BridgeEvent) -> None:
        """Deliver one event from the route queue, then run whatever timer is due."""
        handler = self._handlers.get(type(event))
        if handler is not None:
            await handler(event)
        await self.tick()

    # ------------------------------------------------------------------- one per event

    async def _on_progress(self, event: ProgressEvent) -> None:
        await self._progress(event.payload)

    async def _on_typing(self, event: TypingEvent) -> None:
        self._active = event.on
        await self.set_typing(event.on)

    async def _on_answer(self, event: AnswerText) -> None:
        await self._answer.hold(event)
        self._active = False  # the answer is coming: a status message now would only flash
        self._bubbles.close()

    async def _on_reaction(self, event: ReactionEvent) -> None:
        if not self.config.reactions or self._react_target is None:
            return
        self.stats.reactions += 1
        await self._calls.call("react", self.sink.react(self._react_target, event.kind))

    async def _on_summary(self, event: SummaryUpdate) -> None:
        await self._placeholder.show(event, self._active)

    async def _on_plan(self, event: PlanUpdate) -> None:
        if not self._bubbles.edit_plan(event):
            await self._answer.post()
            await self._bubbles.post_plan(event)

    async def _on_thought(self, event: ThoughtText) -> None:
        if self.config.thoughts:
            await self._answer.post()
            await self._calls.post(self._calls.fit(f"💭 {event.text}"), silent=True)

    async def _on_error(self, event: ErrorNotice) -> None:
        await self._placeholder.end()
        await self._answer.post()
        self._bubbles.close()
        await self._calls.post(f"❌ {event.text}")
        self._answer.mark_answered()

    async def _on_notice(self, event: Notice) -> None:
        await self._calls.post(event.text, silent=True)

    async def _on_turn_start(self, event: TurnStart) -> None:
        await self._placeholder.end()
        await self._answer.post()
        self.begin_turn(event.user_message)

    async def _on_delete(self, event: DeleteMessage) -> None:
        await self._calls.call("delete", self.sink.delete(event.message_id))
        self.stats.deletes += 1

    async def _on_turn_end(self, event: TurnEnd) -> None:
        await self._placeholder.end()  # first: the final reply below is a new message
        if event.interrupted is not None:
            for failed in self._bubbles.cut_short(event.interrupted):
                await self._progress(failed)
            await self._edits.flush(force=True)
        await self._answer.post()
        self._bubbles.close()
        await self.set_typing(False)
        if not self._answer.answered:
            await self._calls.post(_last_word(event))
            self._answer.mark_answered()

    async def _progress(self, payload: ProgressPayload) -> None:
        await self._answer.post()
        await self._bubbles.show(payload)

    # ------------------------------------------------------------------- typing, timers

    async def set_typing(self, active: bool) -> None:
        """Typing on while a tool/think card is active; re-sent before the platform lets it lapse."""
        await self._typing.set(active)

    def next_deadline(self) -> float | None:
        """When :meth:`tick` has work next (trailing flush or typing refresh); None: nothing pending."""
        due = [self._typing.next_due(), self._edits.next_due(), self._placeholder.next_due(self._active)]
        times = [t for t in due if t is not None]
        return min(times) if times else None

    async def tick(self) -> None:
        """Run what is due: the placeholder's first post, the trailing edit flush, the typing refresh."""
        await self._placeholder.post_if_due(self._active)
        await self._edits.flush()
        await self._typing.refresh_if_due()

    async def close(self) -> None:
        """Shutting down: drop the placeholder, flush every pending edit and post any pending answer."""
        await self._placeholder.end()
        await self._answer.post()
        await self._edits.flush(force=True)
        await self.set_typing(False)

    @property
    def placeholder(self) -> MessageId:
        """The platform id of the turn's posted placeholder, or None."""
        return self._placeholder.message_id

    @property
    def pending_edits(self) -> int:
        return self._edits.pending


def _last_word(event: TurnEnd) -> str:
    """What a turn that said nothing final ends on: why it stopped."""
    if event.interrupted is not None:
        return f"⏹ Stopped: {event.interrupted}."
    if event.stop_reason == "cancelled":
        return "⏹ Cancelled."
    return f"(no answer: {event.stop_reason})"
