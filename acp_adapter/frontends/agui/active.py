"""One AG-UI run in flight: drive its ACP turn, feed the emitter and the observers, end it once.

The run is driven by its own task, not by the HTTP response: a client that disconnects mid-run
must not tear the ACP turn down half-way (that would leave the agent's cards open), it must
*cancel* it. :meth:`ActiveRun.client_gone` abandons the emitter (nothing more is written) and
sends ``session/cancel``; the drive task keeps consuming the turn until the agent answered the
prompt, so its cards close and the thread is free for the next run.

Ending is single-shot: whatever happens (success, cancel, agent error, crash, shutdown) the
observers' ``on_end`` runs, then exactly one terminal event is written (ignored if the client
left), the thread is released and waiters are woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from acp_adapter.client.driver import AgentCrashed, AgentDriver, AgentError, Turn
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.observers import ObserverSet, RunContext, RunOutcome
from acp_adapter.frontends.agui.threads import ThreadRegistry, ThreadSlot
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.active")

#: How the driver words a prompt answered with a JSON-RPC error; the run reports the agent's own words.
_PROMPT_ERROR_PREFIX = "the agent answered the prompt with an error: "

Spawn = Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]]
"""Start a background task the app keeps a reference to (and cancels at shutdown)."""


class ActiveRun:
    """The state of one run between its claim on the thread and its terminal event."""

    def __init__(
        self, context: RunContext, *, host: AgentHost, threads: ThreadRegistry, spawn: Spawn
    ) -> None:
        self.context = context
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
        """The SSE response ended before the run did: write nothing more, cancel the ACP turn."""
        if self._done.is_set() or self._gone:
            return
        self._gone = True
        self.context.emitter.abandon()
        log.info("run %s: the client disconnected; cancelling its turn", redact_text(self.run_id))
        self._cancel_turn()

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
                self._close(outcome, slot)

    async def _run(self) -> RunOutcome:
        slot = self._slot
        assert slot is not None
        for attempt in (1, 2):
            driver, session_id, reused = await self._host.session(slot)
            self._driver = driver
            self.context.session_id = session_id
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
        emitter = self.context.emitter
        async for update in turn:
            self._seen_update = True
            self.observers.observe(update)
            emitter.feed(update)
            if emitter.over_limit:  # a reader that is behind holds the update stream, not memory
                await emitter.writable()
        stop = str(turn.response.stop_reason) if turn.response is not None else "end_turn"
        self._tokens = turn.response.usage if turn.response is not None else None
        return RunOutcome("cancelled" if stop == "cancelled" else "success", stop_reason=stop)

    def _close(self, outcome: RunOutcome, slot: ThreadSlot) -> None:
        emitter = self.context.emitter
        if outcome.status == "error":
            emitter.fail(outcome.error or "run failed", code=self._code)
        else:
            emitter.finish(
                cancelled=outcome.status == "cancelled", stop_reason=outcome.stop_reason, tokens=self._tokens
            )
        self._threads.release(slot, self)
        self._done.set()
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
