"""One chat message as one ACP prompt: the chat's session opened, the turn's updates projected onto
the route's queue, its progress summary fed, its end always queued.

Transcript boundary (history is canonical): the only thing ever sent to the agent is the person's own
message text. Progress lines, typing, reactions, summaries and answers are bridge-only
deliveries; they are never stored in the session or fed back as prompt content, so the agent's
history holds exactly its own ACP events.

Progress summaries: each turn gets a :class:`~acp_adapter.summary.ProgressSummary` fed with every
update of the turn; its revisions go through the route's ordered queue as
:class:`~.events.SummaryUpdate`. The summary is stopped before the turn's ``TurnEnd`` is queued, so
no revision of a turn can follow its end. A summary that fails to start or to generate costs the
chat its status line, never its answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from acp_adapter.client.driver import AgentCrashed, AgentDriver, AgentError
from acp_adapter.client.supervisor import AgentSupervisor
from acp_adapter.frontends.bridges.config import BridgeInstance
from acp_adapter.frontends.bridges.events import ErrorNotice, Notice, SummaryUpdate, TurnEnd, TurnStart
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.bridges.routes import Route, RouteTable
from acp_adapter.frontends.bridges.sink import MessageId
from acp_adapter.frontends.bridges.state import BridgeState
from acp_adapter.protocol.observer import Observers
from acp_adapter.safety.redact import redact_text
from acp_adapter.summary import Clock, Outcome, ProgressSummary, SummaryEvent, SummaryFactory
from acp_adapter.text import flatten

log = logging.getLogger("acp_progress.bridges.chat_turn")

NEW_CONVERSATION: Final = "ℹ️ This is a new conversation: {why}."
"""Said in a chat whose stored session could not be loaded after a restart (one short line)."""
PROMPT_ERROR_PREFIX: Final = "the agent answered the prompt with an error: "


class ChatTurns:
    """Runs a route's prompts on the bridge's one agent (restarted by its supervisor when it dies).

    ``new_projection`` makes each turn's projection of updates into chat events. ``stopping`` is
    the reason the bridge is stopping (None while it runs): a turn it cancels ends with that reason
    on its open lines. ``state`` keeps each chat's session across restarts.
    """

    def __init__(
        self,
        instance: BridgeInstance,
        *,
        agent: AgentSupervisor,
        routes: RouteTable,
        new_projection: Callable[[], TurnProjection],
        clock: Callable[[], float],
        state: BridgeState | None,
        stopping: Callable[[], str | None],
    ) -> None:
        self._name = instance.name
        self._cwd = instance.cwd
        self._agent = agent
        self._routes = routes
        self._new_projection = new_projection
        self._clock = clock
        self._state = state
        self._stopping = stopping

    async def run(
        self,
        route: Route,
        text: str,
        user_message: MessageId,
        inbox: str | None,
        summaries: SummaryFactory | None,
        summary_clock: Clock | None,
    ) -> None:
        """One turn; the chat always learns it ended (answered, cancelled, failed or a bug below).

        ``inbox``: the message's durable inbox key, marked running once the prompt goes to the
        agent. ``summaries`` makes the turn's progress summary (None: none), paced by ``summary_clock``.
        """
        route.queue.put(TurnStart(user_message))
        summary: ProgressSummary | None = None
        driver: AgentDriver | None = None
        ended = False
        try:
            driver = await self._agent.driver()
            self._routes.follow_generation(self._agent.generation)
            if not route.session_id:
                await self._open_session(driver, route)
            summary = self._start_summary(route, text, summaries, summary_clock)
            if inbox is not None and self._state is not None:
                self._state.running(inbox)  # from here on a crash means "interrupted", never a re-send
            stop = await self._prompt(driver, route, text, summary)
            _stop(summary, "cancelled" if stop == "cancelled" else "finished")
            route.queue.put(TurnEnd(stop))
            ended = True
        except asyncio.CancelledError:
            _stop(summary, "cancelled")
            route.queue.put(TurnEnd("cancelled", interrupted=self._stopping() or "cancelled"))
            ended = True
            raise
        except AgentError as exc:
            _stop(summary, "failed")
            ended = True
            await self._failed(route, driver, exc)
        finally:
            _stop(summary, "failed")  # a no-op unless the turn ended some other way
            if not ended:  # a bug below us: the chat still learns the turn is over
                route.queue.put(ErrorNotice("the bridge failed on this message"))
                route.queue.put(TurnEnd("error"))
            route.typing = False  # TurnEnd turns typing off in delivery

    async def _prompt(
        self, driver: AgentDriver, route: Route, text: str, summary: ProgressSummary | None
    ) -> str:
        """Send the prompt and queue the projection of each update; returns the stop reason."""
        projection = self._new_projection()
        # a summary bug costs the status line, never the turn
        watching = Observers([summary] if summary is not None else [], name="progress summary")
        turn = driver.prompt(route.session_id, text)
        async for update in turn:
            watching.observe(update)
            for event in projection.project(update, self._clock()):
                route.queue.put(event)
            route.show_typing(projection.active)
        for event in projection.finish():  # a thought the turn ended on
            route.queue.put(event)
        return str(turn.response.stop_reason if turn.response is not None else "end_turn")

    async def _failed(self, route: Route, driver: AgentDriver | None, exc: AgentError) -> None:
        """The agent failed the turn: the chat reads its reason; a crashed agent goes to its supervisor."""
        log.warning("bridge %s: turn failed: %s", self._name, redact_text(str(exc)))
        route.queue.put(ErrorNotice(_short_reason(exc)))
        route.queue.put(TurnEnd("error"))
        if isinstance(exc, AgentCrashed) and driver is not None:
            await self._agent.crashed(driver, exc)

    async def _open_session(self, driver: AgentDriver, route: Route) -> None:
        """The chat's session: the stored one loaded (replay not posted), else a new one (said so)."""
        stored = self._state.session(route.chat_id) if self._state is not None else None
        if stored:
            why = await self._load(driver, route, stored)
            if not why:
                return
            route.queue.put(Notice(NEW_CONVERSATION.format(why=why)))
        self._routes.bind(route, await driver.new_session(cwd=self._cwd))
        if self._state is not None:
            self._state.set_session(route.chat_id, route.session_id)

    async def _load(self, driver: AgentDriver, route: Route, stored: str) -> str:
        """Load the chat's stored session; returns why it could not be ("" once it goes on)."""
        if not driver.sessions.can_load:
            return "the agent cannot reload the earlier one"
        try:
            await driver.load_session(stored, self._cwd, on_replay=None)
        except AgentCrashed:
            raise
        except AgentError as exc:
            log.warning("bridge %s: %s", self._name, redact_text(str(exc)))
            return "the earlier one could not be loaded"
        self._routes.bind(route, stored)
        log.info("bridge %s: chat %s goes on in session %s", self._name, route.chat_id, stored)
        return ""

    def _start_summary(
        self, route: Route, text: str, factory: SummaryFactory | None, clock: Clock | None
    ) -> ProgressSummary | None:
        """The turn's progress summary, its revisions queued for the route's placeholder."""
        if factory is None:
            return None
        queue = route.queue

        def show(event: SummaryEvent) -> None:
            queue.put(SummaryUpdate(redact_text(event.summary), event.revision))

        try:
            return factory.create(user_text=text, on_summary=show, clock=clock).start()
        except Exception as exc:
            log.warning(
                "bridge %s: progress summary unavailable for this turn: %s",
                self._name,
                redact_text(f"{type(exc).__name__}: {exc}")[:300],
            )
            return None


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
