"""One prompt turn of one session, for agent developers who wire the callbacks into their own loop.

Why this exists: the callbacks alone cannot keep the contracts for an embedder. Made one by one,
they had no common order and no end of turn, so a card opened just before the embedder's code
raised kept spinning. A :class:`ProgressTurn` hands out every callback (progress, thinking,
message, usage, tool observer) over the session's one ordered path, and ending it — which the
context manager always does, on success, on an exception and on cancellation — closes every card
still open and waits until the client has been sent all of it::

    async def prompt(self, prompt, session_id, **kwargs):          # your acp.Agent
        async with ProgressTurn(self.conn, session_id) as turn:
            await asyncio.to_thread(my_loop, turn, text)           # turn.progress("start", ...) …
        return PromptResponse(stop_reason=turn.stop_reason)

    with ProgressTurn(conn, session_id, loop) as turn:             # or, on a worker thread
        ...

The synchronous form blocks until the updates are delivered, so it belongs on a worker thread (on
the event loop's own thread, use ``async with``). ``make_agent_progress_cb(conn, session_id, loop)``
and the other factories of :mod:`acp_adapter.events` use the same per-session stream, so callbacks
made that way and a turn share one ordered path too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from acp.schema import StopReason, UsageUpdate

from acp_adapter.agent.outbox import PerConnection, SessionUpdateSink, shared_outbox
from acp_adapter.agent.plans import plan_callback
from acp_adapter.agent.tool_cards import AcpToolObserver, PermissionAnswer
from acp_adapter.agent.turn_outcome import summary_outcome
from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.models.base import PlanStep
from acp_adapter.tooling.presentation import PresentationRegistry

if TYPE_CHECKING:
    from acp_adapter.agent.permissions import SessionPolicy
    from acp_adapter.summary import Outcome, ProgressSummary, SummaryEvent, SummaryFactory


log = logging.getLogger("acp_progress.turn")

AgentProgressCallback = Callable[..., None]
"""The plain ``agent_progress_callback(state, name, args=None)`` an agent loop calls."""

_CANCELLATIONS = (TurnCancelled, asyncio.CancelledError, KeyboardInterrupt)

_STREAMS: PerConnection[dict[str, SessionStream]] = PerConnection()

#: the most session streams one connection keeps; past it the least recently used streams with no
#: turn open are let go (an embedder's agent that serves sessions for days on one connection must
#: not keep a stream for every session it ever saw). A stream let go and asked for again starts
#: afresh, as after a restart of the agent.
MAX_STREAMS_PER_CONNECTION = 256


def session_stream(
    conn: SessionUpdateSink, session_id: str, loop: asyncio.AbstractEventLoop
) -> SessionStream:
    """The stream of ``session_id`` on ``conn`` (created on first use, on the connection's outbox)."""
    outbox = shared_outbox(conn, loop)
    streams = _STREAMS.get(conn, dict)
    stream = streams.pop(session_id, None)
    if stream is None:
        stream = SessionStream(session_id, outbox)
    streams[session_id] = stream  # the most recently used last
    if len(streams) > MAX_STREAMS_PER_CONNECTION:
        _let_go_of_idle(streams, len(streams) - MAX_STREAMS_PER_CONNECTION)
    return stream


def _let_go_of_idle(streams: dict[str, SessionStream], count: int) -> None:
    """Drop up to ``count`` of the least recently used streams with no turn open (never one whose
    turn still runs: its cards must close on the stream that opened them)."""
    idle = [sid for sid, stream in streams.items() if not stream.turn_open][:count]
    for sid in idle:
        del streams[sid]


def progress_callback(stream: SessionStream) -> AgentProgressCallback:
    """The plain ``agent_progress_callback(state, name, args=None)`` over ``stream``.

    ``start`` opens a think card with a fresh id, ``heartbeat`` updates it with ``args["elapsed"]``
    (and ``args["status"]``), ``complete`` closes it (``failed`` when ``args["error"]`` is set).
    Heartbeat or complete without a start is a no-op.
    """

    def agent_progress_callback(state: str, name: str, args: Mapping[str, Any] | None = None) -> None:
        data = args or {}
        if state == "start":
            stream.think_start(name)
        elif state == "heartbeat":
            elapsed = data.get("elapsed")
            stream.think_heartbeat(
                name, float(elapsed) if isinstance(elapsed, int | float) else None, data.get("status") or None
            )
        elif state == "complete":
            error = data.get("error")
            stream.think_complete(name, str(error) if error else None)
        else:
            log.warning("agent_progress_callback: unknown state %r ignored", state)

    return agent_progress_callback


class ProgressTurn:
    """One turn: every callback over one ordered path, and an end that closes every open card.

    ``loop`` is the event loop the connection runs on (default: the running loop). ``cancel`` is
    the turn's cancel signal (tools and permission questions honour it; call ``turn.cancel.cancel()``
    from your ``cancel`` handler). ``registry``/``workspace`` configure tool card titles and paths.

    ``summary`` (a :class:`~acp_adapter.summary.SummaryFactory`) gives the turn a progress summary,
    as ``serve`` has: it sees every update of the turn from the first, and its sentence is shown on
    the open think card (``Still thinking… 40s — <summary>``, with ``_meta.acpProgress.summary``).
    ``user_text`` is the prompt it summarises against. It stops before the turn's cards close, so
    no summary lands after the end.

    ``audit``, ``client_capabilities`` and ``policy`` go to the tool observer: an agent that keeps
    a permission audit, uses the client's files and terminals, or remembers "always" answers per
    session (``serve`` does all three) passes them here.
    """

    def __init__(
        self,
        conn: SessionUpdateSink,
        session_id: str,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        cancel: CancelToken | None = None,
        registry: PresentationRegistry | None = None,
        workspace: str | None = None,
        stream: SessionStream | None = None,
        flush_timeout: float = 10.0,
        summary: SummaryFactory | None = None,
        user_text: str = "",
        audit: Callable[[str, str, PermissionAnswer], None] | None = None,
        client_capabilities: Any = None,
        policy: SessionPolicy | None = None,
    ) -> None:
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        self.session_id = session_id
        self.stream = stream if stream is not None else session_stream(conn, session_id, self.loop)
        self.cancel = cancel if cancel is not None else CancelToken()
        self.flush_timeout = flush_timeout
        self.stop_reason: StopReason | None = None
        #: ``agent_progress_callback(state, name, args=None)`` — the think card (the loop's three hook sites)
        self.progress: AgentProgressCallback = progress_callback(self.stream)
        #: ``thinking_callback(text)`` — thought text (redacted, streamed)
        self.thinking: Callable[[str], bool] = self.stream.send_thought_text
        #: ``message_callback(text)`` — answer text (redacted, streamed)
        self.message: Callable[[str], bool] = self.stream.send_message_text
        #: ``plan_callback(steps)`` — the model's plan as ACP ``plan`` updates
        self.plan: Callable[[Sequence[PlanStep]], bool] = plan_callback(self.stream)
        #: the toolbox observer's maker (see :attr:`tool_observer`)
        self._make_tool_observer = functools.partial(
            AcpToolObserver,
            self.stream,
            conn=conn,
            loop=self.loop,
            cancel=self.cancel,
            registry=registry,
            workspace=workspace,
            audit=audit,
            client_capabilities=client_capabilities,
            policy=policy,
        )
        self._tool_observer: AcpToolObserver | None = None
        self._observer_lock = threading.Lock()
        self._summaries = summary
        self._user_text = user_text
        #: this turn's progress summary while it runs (None without a ``summary`` factory)
        self.summary: ProgressSummary | None = None

    # ------------------------------------------------------------ callbacks

    @property
    def tool_observer(self) -> AcpToolObserver:
        """The toolbox observer: one card per tool call, progress, permission questions.

        Made on first use, not with the turn: the server builds the turn before the spinner goes
        out, and nothing of the observer (the editor's files and terminals …) is needed before
        the agent loop's first tool call. Made once, whichever thread asks first."""
        observer = self._tool_observer
        if observer is None:
            with self._observer_lock:
                observer = self._tool_observer
                if observer is None:
                    observer = self._tool_observer = self._make_tool_observer()
        return observer

    def usage(self, used: int, size: int) -> bool:
        """Send an ACP ``usage_update`` (context used / size, in tokens)."""
        return self.stream.send(
            UsageUpdate(session_update="usage_update", used=max(0, used), size=max(0, size))
        )

    def agent_callbacks(self) -> dict[str, Any]:
        """Keyword arguments that wire ``run_agent.AIAgent`` (or a look-alike) to this turn."""
        return {
            "agent_progress_callback": self.progress,
            "thinking_callback": self.thinking,
            "message_callback": self.message,
            "plan_callback": self.plan,
            "tool_observer": self.tool_observer,
            "cancel": self.cancel,
        }

    # ------------------------------------------------------------ lifecycle

    def begin(self) -> ProgressTurn:
        """Start accepting updates; a turn left open on this session is ended first."""
        if self.stream.turn_open:
            self.stream.end_turn()
        self.stream.begin_turn()
        self.stop_reason = None
        if self._summaries is not None:
            self._on_loop(self._start_summary)  # before any update of the turn is sent
        return self

    def end(
        self, stop_reason: StopReason = "end_turn", *, error: str | None = None, failed: bool = False
    ) -> int:
        """End the turn: every open card is closed (failed with ``error``, or as cancelled), nothing
        more is accepted. Idempotent. Returns how many cards had to be closed here.

        ``failed`` marks a turn that failed without a note for its cards (the prompt's JSON-RPC
        error tells the reason instead): its summary ends as failed, its cards close normally."""
        if self.stop_reason is not None:
            return 0
        self.stop_reason = stop_reason
        if self.summary is not None:
            outcome = summary_outcome(stop_reason, failed=failed or bool(error))
            self._on_loop(lambda: self.stop_summary(outcome))
        return self.stream.end_turn(reason=error, cancelled=stop_reason == "cancelled")

    # ------------------------------------------------------------ progress summary

    def _start_summary(self) -> None:
        assert self._summaries is not None
        stream = self.stream

        def show(event: SummaryEvent) -> None:
            stream.show_summary(event.summary, event.revision)

        summary = self._summaries.create(user_text=self._user_text, on_summary=show).start()
        self.summary = summary
        stream.outbox.observers(self.session_id).add(summary)

    def stop_summary(self, outcome: Outcome) -> None:
        """Stop the summary (on the loop's thread): no summary heartbeat after the turn's end. The
        agent also calls it for a turn it abandons when the client hangs up."""
        summary, self.summary = self.summary, None
        if summary is None:
            return
        self.stream.outbox.observers(self.session_id).discard(summary)
        try:
            summary.stop(outcome)
        except Exception:  # a failing summary must never break the end of the turn
            log.exception("stopping the progress summary failed")

    def _on_loop(self, work: Callable[[], None]) -> None:
        """Run ``work`` on the loop's thread and return once it ran (the summary lives there)."""
        if self._on_loop_thread():
            work()
            return

        async def run() -> None:
            work()

        self._wait_on_loop(run(), "progress summary not started or stopped")

    def _wait_on_loop(self, job: Coroutine[Any, Any, None], failure: str) -> None:
        """Run ``job`` on the loop from another thread and wait at most ``flush_timeout`` for it;
        a loop that is gone or too slow is logged as ``failure``, never raised into the embedder."""
        try:
            asyncio.run_coroutine_threadsafe(job, self.loop).result(self.flush_timeout)
        except (concurrent.futures.TimeoutError, RuntimeError) as exc:
            log.warning("%s: %s", failure, type(exc).__name__)

    def _end_for(self, exc: BaseException | None) -> None:
        if exc is None:
            self.end("cancelled" if self.cancel.cancelled else "end_turn")
        elif (
            isinstance(exc, TurnCancelled | asyncio.CancelledError | KeyboardInterrupt)
            or self.cancel.cancelled
        ):
            self.end("cancelled")
        else:
            self.end("end_turn", error=f"The agent hit an error ({type(exc).__name__})")

    async def flush(self) -> None:
        """Wait until every update of this turn so far has been handed to the connection."""
        await self.stream.flush()

    def _on_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def flush_blocking(self) -> None:
        """:meth:`flush` from a thread other than the loop's (waits at most ``flush_timeout``)."""
        if self._on_loop_thread():
            raise RuntimeError("ProgressTurn: on the event loop thread use 'async with' / 'await flush()'")
        self._wait_on_loop(self.flush(), "turn updates not confirmed delivered")

    def __enter__(self) -> ProgressTurn:
        if self._on_loop_thread():
            raise RuntimeError("ProgressTurn: on the event loop thread use 'async with'")
        return self.begin()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end_for(exc)
        self.flush_blocking()

    async def __aenter__(self) -> ProgressTurn:
        return self.begin()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._end_for(exc)
        await asyncio.shield(self.flush())
