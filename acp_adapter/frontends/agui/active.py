"""One AG-UI run in flight: drive its ACP turn, feed the emitter and the observers, end it once.

The run is driven by its own task, not by the HTTP response: a client that disconnects mid-run
must not tear the ACP turn down half-way (that would leave the agent's cards open), it must
*cancel* it. :meth:`ActiveRun.client_gone` abandons the emitter (nothing more is written) and
sends ``session/cancel``; the drive task keeps consuming the turn until the agent answered the
prompt, so its cards close and the thread is free for the next run.

A run whose client answers permission questions can *pause* (:mod:`.interrupts`): its stream ends
with the interrupt, its turn goes on waiting, the updates that still arrive are held, and a resume
swaps in the next run's emitter over the same projection, so the rest of the turn is that run's.

Ending is single-shot: whatever happens (success, cancel, agent error, crash, shutdown) the
observers' ``on_end`` runs, the thread is released (at every replica) and waiters are woken,
then exactly one terminal event is written (ignored if the client left): a client that got
``RUN_FINISHED`` may post the thread's next run at once, to any replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from acp.schema import SessionInfoUpdate
from ag_ui.core import RunAgentInput

from acp_adapter.client.driver import AgentCrashed, AgentDriver, AgentError, Turn
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.interrupts import PendingInterrupt, PermissionBroker
from acp_adapter.frontends.agui.observers import ObserverSet, RunContext, RunOutcome
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.frontends.agui.threads import ThreadRegistry, ThreadSlot
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.active")

#: How the driver words a prompt answered with a JSON-RPC error; the run reports the agent's own words.
_PROMPT_ERROR_PREFIX = "the agent answered the prompt with an error: "

#: Updates held while a run is paused on a question, at most (the agent waits; few arrive).
MAX_HELD_UPDATES = 10_000

Spawn = Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]]
"""Start a background task the app keeps a reference to (and cancels at shutdown)."""

Release = Callable[[], Awaitable[None]]
"""Let go of what holds the thread beyond this process (another replica's claim): awaited before the
run's terminal event is written, so a client that saw it may run the thread anywhere at once."""


class ActiveRun:
    """The state of one run between its claim on the thread and its terminal event."""

    def __init__(
        self,
        context: RunContext,
        *,
        host: AgentHost,
        threads: ThreadRegistry,
        spawn: Spawn,
        broker: PermissionBroker | None = None,
        asks_permission: bool = False,
    ) -> None:
        self.context = context
        self._broker = broker
        #: the client answers permission questions (interrupts); else the static policy does
        self.asks_permission = asks_permission and broker is not None
        #: the question the run is paused on (its stream ended with the interrupt)
        self.paused: PendingInterrupt | None = None
        self._held: list[Any] = []
        self.observers = ObserverSet(())
        self._host = host
        self._threads = threads
        self._spawn = spawn
        self._slot: ThreadSlot | None = None
        self._driver: AgentDriver | None = None
        self._turn: Turn | None = None
        self._gone = False
        self._seen_update = False
        self._code: str | None = None
        #: the prompt response's token counts (RUN_FINISHED.usage)
        self._tokens: Any = None
        self._done = asyncio.Event()
        #: the cross-replica half of the thread's claim, released before the terminal event
        self.release_elsewhere: Release | None = None

    # ------------------------------------------------------------------ what the registry asks

    @property
    def run_id(self) -> str:
        return self.context.run_id

    @property
    def abandoned(self) -> bool:
        return self._gone and not self._done.is_set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    async def wait_done(self, within: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), within)
        return self._done.is_set()

    # ------------------------------------------------------------------ the client side

    def client_gone(self) -> None:
        """The SSE response ended before the run did: write nothing more, cancel the ACP turn.

        Not while paused on a question: that stream ended on purpose, the turn waits for a resume."""
        if self._done.is_set() or self._gone or self.paused is not None:
            return
        self._give_up()

    def _give_up(self) -> None:
        self._gone = True
        self.paused = None
        self._held.clear()
        self.context.emitter.abandon()
        log.info("run %s: the client is gone; cancelling its turn", redact_text(self.run_id))
        self._cancel_turn()

    # ------------------------------------------------------------------ questions (interrupts)

    def pause(self, pending: PendingInterrupt) -> bool:
        """End this run's stream with ``pending``'s interrupt; the turn waits for :meth:`resume`."""
        if not self.asks_permission or self._gone or self._done.is_set() or self.paused is not None:
            return False
        self.paused = pending
        if not self.context.emitter.interrupt([pending.interrupt()]):
            self.paused = None
            return False
        return True

    def expire(self, pending: PendingInterrupt) -> None:
        """Nobody answered ``pending`` in time: the static policy answers and the turn is cancelled."""
        if self.paused is pending:
            self._give_up()

    def decline(self) -> None:
        """A plain run came to the paused thread: the static policy answers the question and the
        paused turn is cancelled (the new run waits for it, like for a disconnected one)."""
        pending = self.paused
        if pending is None:
            return
        self._give_up()
        pending.answer(None)

    def resume(self, emitter: RunEmitter, run_input: RunAgentInput, answer: Any) -> None:
        """Continue the paused turn as the run of ``run_input`` (streaming to ``emitter``, over the
        same projection), then give the agent the answer: the held updates go out first."""
        pending = self.paused
        assert pending is not None
        self.context.emitter = emitter
        self.context.run_id = run_input.run_id
        self.context.input = run_input
        self.paused = None
        emitter.start()
        held, self._held = self._held, []
        for update in held:
            emitter.feed(update)
        pending.answer(answer)

    def _cancel_turn(self) -> None:
        turn, driver = self._turn, self._driver
        if turn is None or driver is None or turn.done:
            return  # no prompt sent yet: drive() sees the flag before sending one
        self._spawn(self._send_cancel(driver, turn.session_id), f"agui-cancel-{self.run_id}")

    @staticmethod
    async def _send_cancel(driver: AgentDriver, session_id: str) -> None:
        try:
            await driver.cancel(session_id)
        except Exception as exc:
            log.warning("session/cancel failed: %s", redact_text(str(exc)))

    # ------------------------------------------------------------------ driving the turn

    async def drive(self, slot: ThreadSlot) -> None:
        """Run the ACP turn to its end; always finishes with exactly one terminal event."""
        self._slot = slot
        outcome = RunOutcome("error", error="the run ended unexpectedly")
        try:
            outcome = await self._run()
        except asyncio.CancelledError:
            self._code = "SHUTDOWN"
            outcome = RunOutcome("error", error="the server is stopping")
            raise
        except AgentError as exc:
            self._code = "AGENT_CRASHED" if isinstance(exc, AgentCrashed) else "AGENT_ERROR"
            outcome = RunOutcome("error", error=_short_reason(exc))
            log.warning("run %s failed: %s", redact_text(self.run_id), exc)
            if isinstance(exc, AgentCrashed) and self._driver is not None:
                await self._host.crashed(self._driver, exc)
        except Exception:
            self._code = "INTERNAL_ERROR"
            outcome = RunOutcome("error", error="internal error in the AG-UI endpoint")
            log.exception("run %s: unexpected failure", redact_text(self.run_id))
        finally:
            outcome = RunOutcome(outcome.status, outcome.stop_reason, outcome.error, abandoned=self._gone)
            try:
                await self.observers.end(outcome)
            finally:
                try:
                    await self._release_elsewhere()
                finally:
                    self._close(outcome, slot)

    async def _release_elsewhere(self) -> None:
        """The thread is free at every replica before its run says it ended (a failed release is
        logged: the lock goes with the database connection at the latest)."""
        release, self.release_elsewhere = self.release_elsewhere, None
        if release is None:
            return
        try:
            await release()
        except Exception as exc:
            log.warning("run %s: could not release its thread: %s", redact_text(self.run_id), exc)

    async def _run(self) -> RunOutcome:
        slot = self._slot
        assert slot is not None
        for attempt in (1, 2):
            driver, session_id, reused = await self._host.session(slot)
            self._driver = driver
            self.context.session_id = session_id
            if self._broker is not None:
                self._broker.attach(session_id, self)
            if self._gone:
                return RunOutcome("cancelled", stop_reason="cancelled")  # left before the prompt went out
            turn = driver.prompt(session_id, self.context.prompt)
            self._turn = turn
            if self._gone:
                self._cancel_turn()
            try:
                return await self._consume(turn)
            except AgentCrashed:
                raise
            except AgentError as exc:
                # A reused session the agent no longer knows (freed when idle) fails before any
                # update: open a new one once rather than failing this thread forever.
                if attempt == 2 or not reused or self._seen_update or self._gone:
                    raise
                log.info(
                    "thread %s: the agent refused its session (%s); opening a new one", slot.thread_id, exc
                )
                self._threads.forget_session(slot)
        raise AssertionError("unreachable")

    async def _consume(self, turn: Turn) -> RunOutcome:
        async for update in turn:
            self._seen_update = True
            self.observers.observe(update)
            if isinstance(update, SessionInfoUpdate) and update.title:
                self._retitle(update.title)
            if self.paused is not None:  # the next run (the resume) gets it
                if len(self._held) < MAX_HELD_UPDATES:
                    self._held.append(update)
                continue
            emitter = self.context.emitter  # a resume swaps it
            emitter.feed(update)
            if emitter.over_limit:  # a reader that is behind holds the update stream, not memory
                await emitter.writable()
        stop = str(turn.response.stop_reason) if turn.response is not None else "end_turn"
        self._tokens = turn.response.usage if turn.response is not None else None
        return RunOutcome("cancelled" if stop == "cancelled" else "success", stop_reason=stop)

    def _retitle(self, title: str) -> None:
        """The agent titled the session: the thread list shows that title from now on."""
        if self._slot is not None and self.context.session_id is not None:
            self._host.threads.retitle(self._slot.thread_id, self.context.session_id, self._host.cwd, title)

    def _close(self, outcome: RunOutcome, slot: ThreadSlot) -> None:
        if self._broker is not None:
            self._broker.detach(self.context.session_id, self)
        if self.paused is not None:  # the turn ended while waiting (a crash): the question is moot
            self.paused.answer(None)
            self.paused = None
        emitter = self.context.emitter
        # the thread is free before the client hears that its run ended: the next run is admitted
        self._threads.release(slot, self)
        self._done.set()
        if outcome.status == "error":
            emitter.fail(outcome.error or "run failed", code=self._code)
        else:
            emitter.finish(
                cancelled=outcome.status == "cancelled", stop_reason=outcome.stop_reason, tokens=self._tokens
            )
        log.info(
            "run %s on thread %s ended: %s%s",
            redact_text(self.run_id),
            redact_text(self.context.thread_id),
            outcome.status,
            " (client gone)" if outcome.abandoned else "",
        )


def _short_reason(exc: AgentError) -> str:
    """The short reason a run failed: for a prompt the agent answered with an error (a failed model
    call: ``The model request failed: <reason>``), the agent's message itself."""
    text = str(exc)
    if not isinstance(exc, AgentCrashed) and text.startswith(_PROMPT_ERROR_PREFIX):
        return text[len(_PROMPT_ERROR_PREFIX) :] or text
    return text
