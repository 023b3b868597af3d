"""A bridge's chats: one :class:`Route` per chat, found by chat id or by the ACP session it runs in.

A route has its own ACP session, its own ordered :class:`~.queue.RouteQueue` and a delivery worker
that drains it onto the chat's sink, so a slow chat never holds up another. The
:class:`RouteTable` is the one owner of the session → chat lookup: the agent's permission requests
and questions arrive by session, and every session of a dead agent is forgotten at once when its
replacement starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp_adapter.frontends.bridges.delivery import RouteDelivery
from acp_adapter.frontends.bridges.events import TypingEvent
from acp_adapter.frontends.bridges.queue import QueueClosed, QueueMetrics, RouteQueue
from acp_adapter.frontends.bridges.sink import ChatSink
from acp_adapter.frontends.bridges.sink_calls import DeliveryStats
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.bridges.routes")

DeliveryFactory = Callable[[Any, ChatSink], RouteDelivery]
"""``(chat_id, sink) -> delivery``: how a new chat's events are laid out on its sink."""


@dataclass(frozen=True)
class Person:
    """Who sent a prompt: the platform's user id and a name to show ("only Ada can answer this")."""

    id: Any
    name: str


@dataclass
class Route:
    """One chat: its ACP session, its ordered queue and the worker delivering it."""

    chat_id: Any
    session_id: str
    queue: RouteQueue
    delivery: RouteDelivery
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    worker: asyncio.Task[None] | None = None
    #: the running turn's task (cancelled when the bridge stops) and who sent its prompt
    turn: asyncio.Task[None] | None = None
    sender: Person | None = None
    #: the typing state last queued for the chat (typing goes through the queue, in order)
    typing: bool = False

    def show_typing(self, on: bool) -> None:
        """Queue a typing change (only changes): in order with the route's other deliveries."""
        if self.typing != on:
            self.typing = on
            self.queue.put(TypingEvent(on))


class RouteTable:
    """Every chat's route, by chat id and by the ACP session it runs in.

    Routes are never removed while the bridge runs: a chat's queue counters and delivery stats stay
    for the metrics line printed when it stops.
    """

    def __init__(self, make_delivery: DeliveryFactory, soft_bound: int, clock: Callable[[], float]) -> None:
        self._make_delivery = make_delivery
        self._soft_bound = soft_bound
        self._clock = clock
        self._routes: dict[Any, Route] = {}
        self._chat_of_session: dict[str, Any] = {}
        #: the agent generation whose sessions the routes hold (an older one's are gone)
        self._generation = 0

    def get(self, chat_id: Any) -> Route | None:
        return self._routes.get(chat_id)

    def open(self, chat_id: Any, sink: ChatSink) -> Route:
        """The chat's route; a new chat gets its queue, its delivery and the worker draining them."""
        route = self._routes.get(chat_id)
        if route is None:
            queue = RouteQueue(self._soft_bound)
            route = Route(
                chat_id=chat_id, session_id="", queue=queue, delivery=self._make_delivery(chat_id, sink)
            )
            route.worker = asyncio.create_task(
                deliver_route(route, self._clock), name=f"bridge-route-{chat_id}"
            )
            self._routes[chat_id] = route
        return route

    def of_session(self, session_id: str) -> Route | None:
        """The route whose chat runs in ``session_id`` (the agent asks by session)."""
        chat_id = self._chat_of_session.get(session_id)
        return None if chat_id is None else self._routes.get(chat_id)

    def bind(self, route: Route, session_id: str) -> None:
        """The chat now runs in ``session_id``."""
        route.session_id = session_id
        self._chat_of_session[session_id] = route.chat_id

    def follow_generation(self, generation: int) -> None:
        """A restarted agent (a newer ``generation``) has none of the old one's sessions: forget
        them, so each chat's stored session is loaded again, or replaced, on its next message."""
        if generation == self._generation:
            return
        self._generation = generation
        for route in self._routes.values():
            route.session_id = ""
        self._chat_of_session.clear()

    def running_turns(self) -> list[asyncio.Task[None]]:
        return [r.turn for r in self._routes.values() if r.turn is not None and not r.turn.done()]

    def queue_metrics(self) -> QueueMetrics:
        """Queue counters of every route; ``delivery_dropped_by_reason`` also counts what the
        platform layer dropped by policy (a ``retry_after`` over the cap …)."""
        total = QueueMetrics()
        for route in self._routes.values():
            total.merge(route.queue.metrics)
            for reason, n in route.delivery.stats.dropped_by_reason.items():
                total.delivery_dropped_by_reason[reason] = total.delivery_dropped_by_reason.get(reason, 0) + n
        return total

    def delivery_stats(self) -> DeliveryStats:
        total = DeliveryStats()
        for stats in (r.delivery.stats for r in self._routes.values()):
            total.posts += stats.posts
            total.edits += stats.edits
            total.deletes += stats.deletes
            total.typing += stats.typing
            total.reactions += stats.reactions
            total.failures += stats.failures
        return total

    async def drain(self, deadline: float | None, bridge_name: str) -> None:
        """Close every queue and let the workers deliver what is queued; workers still running at
        ``deadline`` (loop time) are cancelled, so a platform that stalls cannot hold the process."""
        loop = asyncio.get_running_loop()
        for route in self._routes.values():
            route.queue.close()
        workers = [r.worker for r in self._routes.values() if r.worker is not None]
        if not workers:
            return
        timeout = None if deadline is None else max(0.0, deadline - loop.time())
        _, late = await asyncio.wait(workers, timeout=timeout)
        for task in late:
            log.warning("bridge %s: a chat's last deliveries did not finish in time", bridge_name)
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=1.0)


async def deliver_route(route: Route, clock: Callable[[], float]) -> None:
    """The route's worker: drain the queue in order, running delivery timers in between."""
    delivery = route.delivery
    while True:
        deadline = delivery.next_deadline()
        wait = None if deadline is None else max(0.0, deadline - clock())
        try:
            event = await route.queue.get(max_wait=wait)
        except QueueClosed:
            break
        try:
            if event is None:
                await delivery.tick()
            else:
                await delivery.handle(event)
        except Exception as exc:  # delivery must never stop; the platform may recover
            log.warning("delivery to chat failed: %s", redact_text(str(exc)))
    with contextlib.suppress(Exception):
        await delivery.close()
