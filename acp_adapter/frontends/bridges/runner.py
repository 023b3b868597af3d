"""The bridge runner: chat messages in, ACP prompts through the client driver, delivery out.

One :class:`BridgeRunner` per running bridge instance owns one agent process (through
:class:`~acp_adapter.client.driver.AgentDriver`, restarted by its supervisor) and hands the work to
the parts it holds: the chats' routes (:class:`~.routes.RouteTable`: a session, an ordered queue and
a delivery worker per chat, so a slow chat never holds up another), the turns
(:class:`~.chat_turn.ChatTurns`: one message, one prompt) and the agent's questions
(:class:`~.chat_questions.ChatQuestions`: asked in the chat that caused them). What stays here is
the order of a chat's messages and the bridge's stop: once it stops, nothing new runs.

Progress summaries (``summary=``, a :class:`~acp_adapter.summary.SummaryFactory`; ``None``: off):
each turn gets one; its revisions are shown in a placeholder message by the delivery layer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Final

from acp_adapter.client.driver import AgentDriver
from acp_adapter.client.supervisor import AgentSupervisor
from acp_adapter.frontends.bridges.chat_questions import ChatQuestions
from acp_adapter.frontends.bridges.chat_turn import ChatTurns
from acp_adapter.frontends.bridges.config import BridgeInstance, resolve_progress
from acp_adapter.frontends.bridges.delivery import RouteDelivery
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.bridges.queue import QueueMetrics
from acp_adapter.frontends.bridges.routes import Person, Route, RouteTable
from acp_adapter.frontends.bridges.sink import ChatSink, MessageId
from acp_adapter.frontends.bridges.sink_calls import DeliveryStats
from acp_adapter.safety.redact import redact_text
from acp_adapter.tooling.presentation import PresentationRegistry

log = logging.getLogger("acp_progress.bridges.runner")

STOPPED: Final = "the bridge stopped"
"""The reason shown on a turn's open progress lines when ``bridge run`` is stopped mid-turn."""

AGENT_SUMMARY_ENV = "ACP_PROGRESS_SUMMARY"
"""The agent's own summary would only decorate think cards, which a chat never shows: the bridge
writes the turn's summary itself and asks the agent (unless ``agent_env`` says otherwise) not to."""


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
        self.window = options.window
        self.permission_timeout = options.permission_timeout
        self.registry = options.registry or PresentationRegistry()
        #: why the bridge is stopping (None while it runs): nothing new starts once it is set
        self._stopping: str | None = None
        self._closed = False
        self.routes = RouteTable(self._new_delivery, options.soft_bound, options.clock)
        #: the agent's permission requests and questions; the platform installs its askers there
        self.questions = ChatQuestions(
            self.routes, self.permission_timeout, instance.platform, lambda: self._stopping is not None
        )
        #: the agent process: started by the first message, restarted after it died (bounded)
        self.agent = AgentSupervisor(
            self._make_driver, name=f"bridge {instance.name}", policy=options.restart
        )
        self.turns = ChatTurns(
            instance,
            agent=self.agent,
            routes=self.routes,
            new_projection=self._new_projection,
            clock=options.clock,
            state=self.state,
            stopping=lambda: self._stopping,
        )
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

    def _make_driver(self) -> AgentDriver:
        return AgentDriver(
            self.instance.agent and list(self.instance.agent),
            env=self.agent_env,
            cwd=self.instance.cwd,
            permission_policy=self.questions.permission,
            question_policy=self.questions.question,
            stderr_log=self.options.stderr_log,
            client_name="acp-progress-bridge",
            # sent in every session/new and session/load (--mcp-config, the settings file's [mcp_servers])
            mcp_servers=list(self.options.mcp_servers),
        )

    def _new_delivery(self, chat_id: Any, sink: ChatSink) -> RouteDelivery:
        options = self.options
        return RouteDelivery(
            sink,
            self.config,
            options.clock,
            window=self.window,
            placeholder_delay=options.placeholder_delay,
            state=self.state,
            chat=chat_id,
        )

    def _new_projection(self) -> TurnProjection:
        return TurnProjection(self.config, registry=self.registry, workspace_id=self.instance.cwd)

    def route(self, chat_id: Any) -> Route | None:
        return self.routes.get(chat_id)

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
        self.started = True
        route = self.routes.open(chat_id, sink)
        async with route.lock:
            if self._stopping is not None:
                return
            route.sender = sender
            task = asyncio.create_task(
                self.turns.run(route, text, user_message, inbox, self.summary, self.options.summary_clock),
                name=f"bridge-turn-{chat_id}",
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

    async def cancel(self, chat_id: Any) -> bool:
        """Cancel the chat's running turn (``session/cancel``); False when nothing runs."""
        route = self.routes.get(chat_id)
        driver = self.agent.current
        if route is None or not route.session_id or not route.lock.locked() or driver is None:
            return False
        await driver.cancel(route.session_id)
        return True

    # ------------------------------------------------------------------------ metrics / shutdown

    def metrics(self) -> QueueMetrics:
        """Queue counters of every chat, with what the platform layer dropped by policy."""
        return self.routes.queue_metrics()

    def delivery_stats(self) -> DeliveryStats:
        return self.routes.delivery_stats()

    def interrupt(self, reason: str = STOPPED) -> list[asyncio.Task[None]]:
        """Cancel every running turn now (nothing the agent sends afterwards reaches a chat)."""
        if self._stopping is None:
            self._stopping = reason
        turns = self.routes.running_turns()
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
        await self.routes.drain(deadline, self.instance.name)
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
