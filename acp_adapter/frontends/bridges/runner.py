"""The bridge runner: chat messages in, ACP prompts through the client driver, delivery out.

One :class:`BridgeRunner` per running bridge instance owns one agent process (through
:class:`~acp_adapter.client.driver.AgentDriver`) and one :class:`Route` per chat. A route has its own
ACP session, its own ordered :class:`~.queue.RouteQueue` and a delivery worker that drains it
onto the chat's sink, so a slow chat never holds up another.

Transcript boundary (history is canonical): the only thing ever sent to the agent is the person's own
message text. Progress lines, typing, reactions, summaries and answers are bridge-only
deliveries; they are never stored in the session or fed back as prompt content, so the agent's
history holds exactly its own ACP events.

Progress summaries (``summary=``, a :class:`~acp_adapter.summary.SummaryFactory`; ``None``: off):
each turn gets a :class:`~acp_adapter.summary.ProgressSummary` fed with every update of the
turn; its revisions go through the route's ordered queue as :class:`~.events.SummaryUpdate` and
the delivery layer shows them in a placeholder message. The summary is stopped before the
turn's ``TurnEnd`` is queued, so no revision of a turn can follow its end. A summary that fails
to start or to generate costs the chat its status line, never its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from acp.schema import DeniedOutcome, RequestPermissionResponse

from acp_adapter.client.driver import (
    AgentCrashed,
    AgentDriver,
    AgentError,
    PermissionRequest,
    permission_response,
)
from acp_adapter.client.questions import QuestionRequest, QuestionResponse, cancel, decline
from acp_adapter.client.supervisor import AgentSupervisor
from acp_adapter.frontends.bridges.config import BridgeInstance, resolve_progress
from acp_adapter.frontends.bridges.delivery import (
    DeliveryStats,
    RouteDelivery,
)
from acp_adapter.frontends.bridges.events import (
    ErrorNotice,
    Notice,
    SummaryUpdate,
    TurnEnd,
    TurnStart,
    TypingEvent,
)
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.bridges.queue import QueueClosed, QueueMetrics, RouteQueue
from acp_adapter.frontends.bridges.sink import ChatSink, MessageId
from acp_adapter.frontends.questions import ask_by_lines
from acp_adapter.protocol.observer import Observers
from acp_adapter.safety.redact import redact_text
from acp_adapter.summary import Outcome, ProgressSummary, SummaryEvent
from acp_adapter.text import flatten
from acp_adapter.tooling.presentation import PresentationRegistry

log = logging.getLogger("acp_progress.bridges.runner")

NEW_CONVERSATION: Final = "ℹ️ This is a new conversation: {why}."
"""Said in a chat whose stored session could not be loaded after a restart (one short line)."""
PROMPT_ERROR_PREFIX: Final = "the agent answered the prompt with an error: "

STOPPED: Final = "the bridge stopped"
"""The reason shown on a turn's open progress lines when ``bridge run`` is stopped mid-turn."""


@dataclass(frozen=True)
class Person:
    """Who sent a prompt: the platform's user id and a name to show ("only Ada can answer this")."""

    id: Any
    name: str


@dataclass(frozen=True)
class Verdict:
    """A person's answer to a permission question, and who gave it (``telegram:<user id>`` …), so
    the agent's audit says who allowed a command, not only that a client did."""

    allowed: bool
    by: str


PermissionAsker = Callable[
    [Any, PermissionRequest, float, "Person | None"], Awaitable["Verdict | bool | None"]
]
"""``(chat_id, request, timeout, requester) -> answer``: the platform asks the chat (buttons, a
reply…). A :class:`Verdict` when a person answered; ``False`` when it was denied with nobody
answering (a timeout, a failed send); ``None`` when nobody answered because the bridge is stopping
(the agent is told "cancelled", never "denied by the user")."""

LineAsker = Callable[[Any, str, float, "Person | None"], Awaitable["str | None"]]
"""``(chat_id, prompt, timeout, requester) -> line``: the platform shows ``prompt`` in the chat and
waits for one line from the person who started the turn; None when nobody answered in time, the
input ended or the bridge is stopping (the question is then cancelled)."""

AGENT_SUMMARY_ENV = "ACP_PROGRESS_SUMMARY"
"""The agent's own summary would only decorate think cards, which a chat never shows: the bridge
writes the turn's summary itself and asks the agent (unless ``agent_env`` says otherwise) not to."""


@dataclass
class _ChatLines:
    """One question's lines in one chat: notes (the message, a field's help) go with the next prompt."""

    asker: LineAsker
    chat_id: Any
    timeout: float
    requester: Person | None
    notes: list[str] = field(default_factory=list)

    async def ask_line(self, prompt: str) -> str | None:
        said = "\n".join([*self.notes, prompt.strip()])
        self.notes.clear()
        return await self.asker(self.chat_id, said, self.timeout, self.requester)


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


class BridgeRunner:
    """Runs one bridge instance: an agent, a session per chat, delivery per chat."""

    def __init__(self, instance: BridgeInstance, options: BridgeOptions | None = None) -> None:
        options = options if options is not None else BridgeOptions()
        self.instance = instance
        self.options = options
        #: durable chat sessions, inbox and outbox (None: nothing survives a restart)
        self.state = options.state
        self.config = options.config or resolve_progress(instance)
        self.agent_env = dict(options.agent_env)
        self.agent_env.setdefault(AGENT_SUMMARY_ENV, "off")
        #: makes each turn's progress summary (None: no summaries, no placeholder)
        self.summary = options.summary
        self.placeholder_delay = options.placeholder_delay
        self.summary_clock = options.summary_clock
        self.clock = options.clock
        self.window = options.window
        self.soft_bound = options.soft_bound
        self.permission_timeout = options.permission_timeout
        self.registry = options.registry or PresentationRegistry()
        self.stderr_log = options.stderr_log
        #: sent in every session/new and session/load (--mcp-config, the settings file's [mcp_servers])
        self.mcp_servers = list(options.mcp_servers)
        self.ask_permission: PermissionAsker | None = None
        #: asks the chat for one line (the agent's questions, field by field); None: the platform
        #: cannot, and every question is declined
        self.ask_line: LineAsker | None = None
        #: the agent process: started by the first message, restarted after it died (bounded)
        self.agent = AgentSupervisor(
            self._make_driver, name=f"bridge {instance.name}", policy=options.restart
        )
        #: the agent generation whose sessions the routes hold (an older one's are gone)
        self._sessions_generation = 0
        self._routes: dict[Any, Route] = {}
        self._chat_of_session: dict[str, Any] = {}
        self._stopping: str | None = None
        self._closed = False
        #: a chat reached the runner (``bridge run`` prints metrics only for a run that did work)
        self.started = False
        #: the signal that stopped the bridge (SIGINT, SIGTERM), None while none did
        self.stop_signal: int | None = None
        #: told one line when the platform is ready for messages (``bridge run`` prints it)
        self.on_ready: Callable[[str], None] | None = None

    def ready(self, text: str) -> None:
        """The platform is ready for messages: say so once (a person at a terminal otherwise sees
        nothing until they type)."""
        if self.on_ready is not None:
            self.on_ready(text)

    # ------------------------------------------------------------------------ agent

    def _make_driver(self) -> AgentDriver:
        return AgentDriver(
            self.instance.agent and list(self.instance.agent),
            env=self.agent_env,
            cwd=self.instance.cwd,
            permission_policy=self._permission_policy,
            question_policy=self._question_policy,
            stderr_log=self.stderr_log,
            client_name="acp-progress-bridge",
            mcp_servers=self.mcp_servers,
        )

    async def _driver_for_turn(self) -> AgentDriver:
        """The running agent; after a restart the chats' sessions of the dead one are forgotten
        (each chat's stored session is loaded again, or replaced, on its next message)."""
        driver = await self.agent.driver()
        if self.agent.generation != self._sessions_generation:
            self._sessions_generation = self.agent.generation
            for route in self._routes.values():
                route.session_id = ""
            self._chat_of_session.clear()
        return driver

    async def _permission_policy(self, request: PermissionRequest) -> RequestPermissionResponse:
        chat_id = self._chat_of_session.get(request.session_id)
        if self._stopping is not None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if chat_id is None or self.ask_permission is None:
            return permission_response(request, False, automatic=True)
        route = self._routes.get(chat_id)
        if route is not None:
            self._typing(route, False)  # waiting for the person, not working
        try:
            allowed = await self.ask_permission(
                chat_id, request, self.permission_timeout, route.sender if route is not None else None
            )
        except Exception as exc:
            log.warning("permission prompt failed, denying: %s", redact_text(str(exc)))
            return permission_response(request, False, automatic=True)
        if allowed is None:  # the bridge is stopping: nobody answered, nobody denied
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        if isinstance(allowed, Verdict):
            return permission_response(
                request, allowed.allowed, decided_by=allowed.by, surface=self.instance.platform
            )
        return permission_response(request, allowed, surface=self.instance.platform)

    async def _question_policy(self, request: QuestionRequest) -> QuestionResponse:
        """The agent's question, asked in the chat of its session (only its sender answers)."""
        chat_id = self._chat_of_session.get(request.session_id or "")
        asker = self.ask_line
        if self._stopping is not None:
            return cancel()
        if chat_id is None or asker is None:
            return decline()
        route = self._routes.get(chat_id)
        if route is not None:
            self._typing(route, False)  # waiting for the person, not working
        chat = _ChatLines(
            asker, chat_id, self.permission_timeout, route.sender if route is not None else None
        )
        try:
            return await ask_by_lines(chat, request, chat.notes.append)
        except Exception as exc:
            log.warning("a question to the chat failed, declining: %s", redact_text(str(exc)))
            return decline()

    @staticmethod
    def _typing(route: Route, on: bool) -> None:
        """Queue a typing change (only changes): in order with the route's other deliveries."""
        if route.typing != on:
            route.typing = on
            route.queue.put(TypingEvent(on))

    # ------------------------------------------------------------------------ routes

    def route(self, chat_id: Any) -> Route | None:
        return self._routes.get(chat_id)

    def _route_for(self, chat_id: Any, sink: ChatSink) -> Route:
        route = self._routes.get(chat_id)
        if route is None:
            self.started = True
            queue = RouteQueue(self.soft_bound)
            delivery = RouteDelivery(
                sink,
                self.config,
                self.clock,
                window=self.window,
                placeholder_delay=self.placeholder_delay,
                state=self.state,
                chat=chat_id,
            )
            route = Route(chat_id=chat_id, session_id="", queue=queue, delivery=delivery)
            route.worker = asyncio.create_task(self._deliver(route), name=f"bridge-route-{chat_id}")
            self._routes[chat_id] = route
        return route

    async def _deliver(self, route: Route) -> None:
        """The route's worker: drain the queue in order, running delivery timers in between."""
        delivery = route.delivery
        while True:
            deadline = delivery.next_deadline()
            wait = None if deadline is None else max(0.0, deadline - self.clock())
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

    async def handle_message(
        self,
        chat_id: Any,
        text: str,
        sink: ChatSink,
        user_message: MessageId = None,
        sender: Person | None = None,
        inbox: str | None = None,
    ) -> None:
        """Run one chat message as a prompt in the chat's session; returns when the turn ended.

        Messages of one chat run one after another (the route lock is FIFO); other chats run
        concurrently in their own sessions. ``sender`` is who may answer the turn's permission
        questions (with the platform's approvers). Once the bridge is stopping, nothing new runs.
        ``inbox``: the message's durable inbox key (:meth:`BridgeState.accept`): marked running
        when the prompt goes to the agent, removed when the turn ended.
        """
        if self._stopping is not None or self._closed:
            return
        route = self._route_for(chat_id, sink)
        async with route.lock:
            if self._stopping is not None:
                return
            route.sender = sender
            task = asyncio.create_task(
                self._turn(route, text, user_message, inbox), name=f"bridge-turn-{chat_id}"
            )
            route.turn = task
            try:
                await asyncio.wait([task])  # the turn's own cancellation (bridge stopping) ends here
            finally:
                route.turn = None
                route.sender = None
                if inbox is not None and self.state is not None:
                    # ended (or stopped, which the chat was told): only a killed bridge leaves it
                    self.state.done(inbox)
            if not task.cancelled() and task.exception() is not None:
                log.warning(
                    "bridge %s: turn crashed: %s", self.instance.name, redact_text(str(task.exception()))
                )

    async def _open_session(self, driver: AgentDriver, route: Route) -> None:
        """The chat's session: the stored one loaded (replay not posted), else a new one (said so)."""
        stored = self.state.session(route.chat_id) if self.state is not None else None
        if stored:
            why = ""
            if not driver.sessions.can_load:
                why = "the agent cannot reload the earlier one"
            else:
                try:
                    await driver.load_session(stored, self.instance.cwd, on_replay=None)
                except AgentCrashed:
                    raise
                except AgentError as exc:
                    log.warning("bridge %s: %s", self.instance.name, redact_text(str(exc)))
                    why = "the earlier one could not be loaded"
                else:
                    route.session_id = stored
                    self._chat_of_session[stored] = route.chat_id
                    log.info(
                        "bridge %s: chat %s goes on in session %s", self.instance.name, route.chat_id, stored
                    )
                    return
            route.queue.put(Notice(NEW_CONVERSATION.format(why=why)))
        route.session_id = await driver.new_session(cwd=self.instance.cwd)
        self._chat_of_session[route.session_id] = route.chat_id
        if self.state is not None:
            self.state.set_session(route.chat_id, route.session_id)

    async def _turn(self, route: Route, text: str, user_message: MessageId, inbox: str | None = None) -> None:
        route.queue.put(TurnStart(user_message))
        projection = TurnProjection(self.config, registry=self.registry, workspace_id=self.instance.cwd)
        summary: ProgressSummary | None = None
        driver: AgentDriver | None = None
        ended = False
        try:
            driver = await self._driver_for_turn()
            if not route.session_id:
                await self._open_session(driver, route)
            summary = self._start_summary(route, text)
            # a summary bug costs the status line, never the turn
            watching = Observers([summary] if summary is not None else [], name="progress summary")
            if inbox is not None and self.state is not None:
                self.state.running(inbox)  # from here on a crash means "interrupted", never a re-send
            turn = driver.prompt(route.session_id, text)
            async for update in turn:
                watching.observe(update)
                for event in projection.project(update, self.clock()):
                    route.queue.put(event)
                self._typing(route, projection.active)
            for event in projection.finish():  # a thought the turn ended on
                route.queue.put(event)
            stop = turn.response.stop_reason if turn.response is not None else "end_turn"
            _stop(summary, "cancelled" if str(stop) == "cancelled" else "finished")
            route.queue.put(TurnEnd(str(stop)))
            ended = True
        except asyncio.CancelledError:
            _stop(summary, "cancelled")
            route.queue.put(TurnEnd("cancelled", interrupted=self._stopping or "cancelled"))
            ended = True
            raise
        except AgentError as exc:
            _stop(summary, "failed")
            log.warning("bridge %s: turn failed: %s", self.instance.name, redact_text(str(exc)))
            route.queue.put(ErrorNotice(_short_reason(exc)))
            route.queue.put(TurnEnd("error"))
            ended = True
            if isinstance(exc, AgentCrashed) and driver is not None:
                await self.agent.crashed(driver, exc)
        finally:
            _stop(summary, "failed")  # a no-op unless the turn ended some other way
            if not ended:  # a bug below us: the chat still learns the turn is over
                route.queue.put(ErrorNotice("the bridge failed on this message"))
                route.queue.put(TurnEnd("error"))
            route.typing = False  # TurnEnd turns typing off in delivery

    def _start_summary(self, route: Route, text: str) -> ProgressSummary | None:
        """The turn's progress summary, its revisions queued for the route's placeholder."""
        if self.summary is None:
            return None
        queue = route.queue

        def show(event: SummaryEvent) -> None:
            queue.put(SummaryUpdate(redact_text(event.summary), event.revision))

        try:
            return self.summary.create(user_text=text, on_summary=show, clock=self.summary_clock).start()
        except Exception as exc:
            log.warning(
                "bridge %s: progress summary unavailable for this turn: %s",
                self.instance.name,
                redact_text(f"{type(exc).__name__}: {exc}")[:300],
            )
            return None

    async def cancel(self, chat_id: Any) -> bool:
        """Cancel the chat's running turn (``session/cancel``); False when nothing runs."""
        route = self._routes.get(chat_id)
        driver = self.agent.current
        if route is None or not route.session_id or not route.lock.locked() or driver is None:
            return False
        await driver.cancel(route.session_id)
        return True

    # ------------------------------------------------------------------------ metrics / shutdown

    def metrics(self) -> QueueMetrics:
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

    def interrupt(self, reason: str = STOPPED) -> list[asyncio.Task[None]]:
        """Cancel every running turn now (nothing the agent sends afterwards reaches a chat)."""
        if self._stopping is None:
            self._stopping = reason
        turns = [r.turn for r in self._routes.values() if r.turn is not None and not r.turn.done()]
        for task in turns:
            task.cancel()
        return turns

    async def shutdown(self, reason: str = STOPPED, *, grace: float = 3.0) -> None:
        """Stop now (Ctrl-C, SIGTERM): cancel running turns, deliver their last lines, stop the agent.

        Running turns are cancelled; their open progress lines end ``❌ … — <reason>`` and the chat
        reads ``⏹ Stopped: <reason>.``; pending permission questions are answered "cancelled".
        Delivery gets ``grace`` seconds for those last edits (retry waits are the platform's to
        interrupt), then whatever is still in flight is cancelled. Idempotent; :meth:`close` after it
        only logs the metrics.
        """
        turns = self.interrupt(reason)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        if turns:
            await asyncio.wait(turns, timeout=max(0.0, deadline - loop.time()))
        await self.close(deadline=deadline)

    async def close(self, *, deadline: float | None = None) -> None:
        """Let queued events reach the chats, flush pending edits, stop the agent, log the metrics.

        ``deadline`` (loop time): delivery workers still running then are cancelled, so a platform
        that stalls cannot hold the process."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        for route in list(self._routes.values()):
            route.queue.close()
        workers = [r.worker for r in self._routes.values() if r.worker is not None]
        if workers:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            _, late = await asyncio.wait(workers, timeout=timeout)
            for task in late:
                log.warning("bridge %s: a chat's last deliveries did not finish in time", self.instance.name)
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=1.0)
        await self.agent.close(grace=1.0 if deadline is not None else 2.0, give_up_after=5.0)
        if self.summary is not None:
            await self.summary.aclose()  # the summary model's connections, on this loop
        m = self.metrics()
        s = self.delivery_stats()
        log.info(
            "bridge %s: delivery metrics enqueued=%d delivered=%d coalesced=%d max_depth=%d "
            "delivery_dropped_by_reason=%s posts=%d edits=%d failures=%d",
            self.instance.name,
            m.enqueued,
            m.delivered,
            m.coalesced,
            m.max_depth,
            m.delivery_dropped_by_reason,
            s.posts,
            s.edits,
            s.failures,
        )


def _short_reason(exc: AgentError) -> str:
    """The chat's line for a failed turn: the agent's own reason (``The model request failed: …``)
    without the driver's framing, one line, redacted, at most 300 characters."""
    text = str(exc)
    if text.startswith(PROMPT_ERROR_PREFIX):
        text = text[len(PROMPT_ERROR_PREFIX) :]
    return flatten(redact_text(text), 300)


def _stop(summary: ProgressSummary | None, outcome: Outcome) -> None:
    """Stop the turn's summary (idempotent): once this returned it queues nothing more."""
    if summary is None:
        return
    try:
        summary.stop(outcome)
    except Exception as exc:
        log.warning("stopping the progress summary failed: %s", redact_text(str(exc))[:300])
