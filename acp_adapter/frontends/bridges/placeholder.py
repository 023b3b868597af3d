"""The progress-summary placeholder: a running turn's latest summary in one chat message.

The message (``📝 <summary>``) is posted once the turn has had a summary for ``delay`` seconds and
is visibly working (a turn answered sooner needs no status message and costs no post, delete or
extra notification), then edited in place under the route's edit budget. When the turn ends it is
deleted *before* the final reply is posted, so the reply is a new message and the platform
notifies the person as it does for any message. A summary that arrives outside its turn, or is
not newer than the one shown, is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from acp_adapter.frontends.bridges.bubbles import ChatMessage, EditBudget
from acp_adapter.frontends.bridges.events import SummaryUpdate
from acp_adapter.frontends.bridges.sink import MessageId
from acp_adapter.frontends.bridges.sink_calls import SinkCalls

PLACEHOLDER_PREFIX: Final = "📝 "
"""The summary placeholder reads ``📝 <summary>`` (⏳ is the ``wait`` tool's: one symbol per meaning)."""


class SummaryPlaceholder:
    """One route's placeholder message; ``active`` (a tool or think card is running) is the
    route's to tell, at each call that may post."""

    def __init__(self, calls: SinkCalls, edits: EditBudget, clock: Callable[[], float], delay: float) -> None:
        self._calls = calls
        self._edits = edits
        self._clock = clock
        self._delay = delay
        self._in_turn = False
        self._message: ChatMessage | None = None  # posted (or its post attempted)
        self._line: str | None = None  # waiting for its delay before the first post
        self._due = math.inf
        self._revision = 0

    @property
    def message_id(self) -> MessageId:
        """The platform id of the turn's posted placeholder, or None."""
        return self._message.message_id if self._message is not None else None

    def begin_turn(self) -> None:
        self._in_turn = True

    async def show(self, event: SummaryUpdate, active: bool) -> None:
        """A summary revision: the posted placeholder edited, or the first line waiting its delay."""
        if not self._in_turn or event.revision <= self._revision:
            return  # after its turn, or older than what is shown: never displayed
        self._revision = event.revision
        text = " ".join(event.summary.split())
        if not text:
            return
        line = self._calls.fit(PLACEHOLDER_PREFIX + text)
        if self._message is not None:
            self._message.entries[0][1] = line
            self._edits.mark(self._message)  # an edit, under the route's edit budget
            return
        self._line = line
        if self._due == math.inf:
            self._due = self._clock() + self._delay
        await self.post_if_due(active)

    def next_due(self, active: bool) -> float | None:
        """When the waiting first line may be posted; None: nothing waits (or nothing runs)."""
        return self._due if self._line is not None and active else None

    async def post_if_due(self, active: bool) -> None:
        line = self._line
        if line is None or self._clock() < self._due:
            return
        if not active:  # nothing is running now (the last tool finished): no status message
            return
        self._line = None
        self._due = math.inf
        msg = ChatMessage(entries=[["", line]])
        self._message = msg
        msg.message_id = await self._calls.post(line, silent=True)
        msg.shown = line

    async def end(self) -> None:
        """The turn is over: no summary is shown any more; a posted placeholder is deleted."""
        self._in_turn = False
        self._line = None
        self._due = math.inf
        self._revision = 0
        msg, self._message = self._message, None
        if msg is None:
            return
        self._edits.discard(msg)
        if msg.message_id is not None:
            stats = self._calls.stats
            stats.deletes += 1
            if not await self._calls.call("delete", self._calls.sink.delete(msg.message_id)):
                stats.failures += 1
