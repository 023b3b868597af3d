"""The turns of the agent's prompts: each prompt builds a :class:`ProgressTurn` — the API the
README hands agent developers — and runs the loop (``run_agent.AIAgent``, injected by the command
line as ``turn_runner``) on a worker thread, wired through ``turn.agent_callbacks()``.

Before a prompt's answer is returned its turn is ended (every open card closed) and the outbox
flushed, so the client sees every update of the turn, in order, before the answer — on success,
error, cancel and callback failure alike. This object also owns what outlives one turn: the worker
threads, and the hang-up that cancels, waits for and finally abandons running turns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from acp.schema import PromptResponse, SessionInfoUpdate, StopReason, Usage

from acp_adapter.agent.attachments import sort_images
from acp_adapter.agent.cancel_wait import await_through_cancel
from acp_adapter.agent.heartbeat import Heartbeats, loop_heartbeats
from acp_adapter.agent.session import LiveSessions, Session, history_to_json
from acp_adapter.agent.session_mcp import SessionServers
from acp_adapter.agent.tool_cards import PermissionAnswer
from acp_adapter.agent.turn import ProgressTurn
from acp_adapter.agent.turn_outcome import TurnResult, iso_now, turn_failure
from acp_adapter.cancel import CONNECTION_CLOSED, CancelToken
from acp_adapter.models import ChatModel, ImagePart, Message, UsageReport
from acp_adapter.protocol.meta import ProgressMeta, meta_field
from acp_adapter.protocol.observer import UpdateObserver
from acp_adapter.store import BackgroundWriter
from acp_adapter.store.recorder import ConversationRecorder
from acp_adapter.text import prompt_to_text
from acp_adapter.tooling.presentation import PresentationRegistry

if TYPE_CHECKING:
    from acp_adapter.agent.outbox import UpdateOutbox
    from acp_adapter.config import Settings
    from acp_adapter.summary import SummaryFactory

__all__ = ["PromptTurns", "TurnLoop", "TurnParts", "TurnRunner"]

log = logging.getLogger("acp_progress.server")


class TurnLoop(Protocol):
    """One prompt's synchronous agent loop, run on a worker thread (``run_agent.AIAgent`` is one).
    ``images`` is passed only when the prompt has some, so a loop written without them still runs."""

    def run_conversation(
        self, user_text: str, history: Sequence[Message] = (), *, images: Sequence[ImagePart] = ()
    ) -> TurnResult: ...


#: Builds a turn's loop from the model and the callbacks wired for that turn (the keyword
#: arguments of ``run_agent.AIAgent``). The command line injects ``run_agent.AIAgent``; the package
#: never imports the top-level script, so it does not depend on it.
TurnRunner = Callable[..., TurnLoop]

SYSTEM_PROMPT = (
    "You are a helpful coding agent working in the user's workspace. Use the tools to read, list, "
    "search and run commands when the user asks about their files; answer concisely."
)


@dataclass
class TurnParts:
    """What a turn uses of the agent that holds it, handed over explicitly (nothing borrowed):
    the parts it shares, and callables for what the connection sets later (``conn``, the client's
    capabilities) or the session's configuration decides (``model_for``)."""

    turn_runner: TurnRunner
    #: the agent's settings now (a sign-in replaces them: the next turn uses the new ones)
    settings: Callable[[], Settings]
    sessions: LiveSessions
    recorder: ConversationRecorder
    writer: BackgroundWriter
    mcp: SessionServers
    registry: PresentationRegistry
    summaries: SummaryFactory | None
    scheduler: Heartbeats | None
    outbox: Callable[[], UpdateOutbox]
    conn: Callable[[], Any]
    client_capabilities: Callable[[], Any]
    model_for: Callable[[Session], ChatModel]
    #: ``audit(session_id, card_id, title, answer)``: the permission audit
    audit: Callable[[str, str, str, PermissionAnswer], None]


class PromptTurns:
    """Runs the prompts' turns and keeps track of them until they end or are abandoned."""

    def __init__(self, parts: TurnParts) -> None:
        self._parts = parts
        self._turns_running: set[asyncio.Future[None]] = set()
        self._prompt_tasks: set[asyncio.Task[Any]] = set()
        self._workers: set[asyncio.Future[Any]] = set()
        self._abandoned = False
        #: the running turn of each session (its summary is stopped if the client hangs up)
        self._turn_of: dict[str, ProgressTurn] = {}
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=parts.settings().max_workers, thread_name_prefix="acp-turn"
        )

    async def run(self, session: Session, prompt: list[Any]) -> PromptResponse:
        """Answer ``prompt`` with a turn of the agent loop (a second prompt while one runs is refused)."""
        cancel = session.begin_turn()
        loop = asyncio.get_running_loop()
        running: asyncio.Future[None] = loop.create_future()
        session.turn_done = running
        self._turns_running.add(running)
        task = asyncio.current_task()
        if task is not None:
            self._prompt_tasks.add(task)
        try:
            return await self._run_turn(session, cancel, prompt, loop)
        finally:
            if task is not None:
                self._prompt_tasks.discard(task)
            running.set_result(None)
            self._turns_running.discard(running)

    def cancel_all(self, reason: str) -> None:
        for session in self._parts.sessions.all():
            if session.cancel is not None:
                session.cancel.cancel(reason)

    @property
    def stuck(self) -> int:
        """Turns whose worker thread is still running (their work ignored cancellation)."""
        return sum(1 for worker in self._workers if not worker.done())

    async def drain(self, grace: float) -> None:
        """Cancel every running turn and wait until each has answered its prompt."""
        self.cancel_all(CONNECTION_CLOSED)
        if self._turns_running:
            await asyncio.wait(set(self._turns_running), timeout=grace)

    async def abandon(self, grace: float) -> None:
        """Stop waiting for the turns still running: their prompt tasks are cancelled (and given
        ``grace`` seconds), their summaries stopped."""
        self._abandoned = True
        for task in list(self._prompt_tasks):
            task.cancel()
        if self._prompt_tasks:
            await asyncio.wait(set(self._prompt_tasks), timeout=grace)
        for turn in list(self._turn_of.values()):
            turn.stop_summary("cancelled")
        self._turn_of.clear()

    def close(self) -> None:
        """No new worker threads; those queued are dropped (running ones are not waited for)."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _run_turn(
        self, session: Session, cancel: CancelToken, prompt: list[Any], loop: asyncio.AbstractEventLoop
    ) -> PromptResponse:
        """Start the turn and run its loop, then end it whatever happened: a turn that could not
        even be built still closes its cards, flushes and answers."""
        run = _TurnRun()
        try:
            await self._start_and_run(run, session, cancel, prompt, loop)
        except Exception as exc:  # building the turn failed: still finalise it below
            run.error = exc
        if run.error is not None:
            log.error("agent turn crashed: %s", type(run.error).__name__, exc_info=run.error)
        stop_reason = _stop_reason(cancel, run)
        failure = turn_failure(stop_reason, run.error, run.result)
        await self._finish(session, run, stop_reason, failure is not None)
        if failure is not None:
            raise failure  # every card is closed and flushed: the error is the prompt's honest answer
        return _prompt_response(stop_reason, run.result)

    # ------------------------------------------------------------ the steps of one turn

    async def _start_and_run(
        self,
        run: _TurnRun,
        session: Session,
        cancel: CancelToken,
        prompt: list[Any],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Show the spinner, wait for the session's MCP servers, record the prompt, then run the
        agent loop on a worker thread until it ends (``run`` holds what the ending needs)."""
        text = prompt_to_text(prompt)
        run.turn = turn = self._new_turn(session, cancel, text, loop)
        self._turn_of[session.id] = turn
        turn.begin()  # its summary sees the turn from its first card
        await self._show_spinner(session, cancel)
        # recorded once the spinner is out: the first card never waits for the session store
        if session.mcp is not None:  # waits for servers still starting: cancel stops the wait
            await self._wait_for_servers(session, cancel, loop)
        run.recording = self._record_prompt(session, prompt, text)
        agent = self._build_agent(session, turn)
        history = list(session.history)
        images = _accepted_images(session, prompt)
        worker = self._start_worker(agent, text, history, images, loop)
        run.result, run.error, run.interrupted = await await_through_cancel(
            worker, lambda: cancel.cancel(CONNECTION_CLOSED), lambda: self._abandoned
        )

    async def _show_spinner(self, session: Session, cancel: CancelToken) -> None:
        """The spinner goes out first, from the event loop, as the prompt lands: the agent's hook A
        adopts this card, so the person never waits for the hop to a worker thread."""
        session.stream.think_open_early()
        await await_through_cancel(
            session.stream.outbox.barrier(),
            lambda: cancel.cancel(CONNECTION_CLOSED),
            lambda: self._abandoned,
        )

    async def _wait_for_servers(
        self, session: Session, cancel: CancelToken, loop: asyncio.AbstractEventLoop
    ) -> None:
        """Wait for the session's MCP servers still starting; the turn's cancel stops the wait."""
        preparing = asyncio.ensure_future(self._parts.mcp.prepare(session))

        def stop_waiting() -> None:
            loop.call_soon_threadsafe(preparing.cancel)

        remove = cancel.on_cancel(stop_waiting)
        try:
            await await_through_cancel(preparing, give_up=lambda: self._abandoned)
        finally:
            remove()

    def _record_prompt(self, session: Session, prompt: list[Any], text: str) -> UpdateObserver:
        """The prompt joins the stored conversation, and the turn's updates follow it there (through
        the observer returned)."""
        title = self._parts.recorder.begin_turn(session.id, session.cwd, prompt, text)
        recording = self._parts.recorder.observer(session.id)
        self._parts.outbox().observers(session.id).add(recording)
        if title is not None:  # the first prompt names the session, for session/list and the client
            session.stream.send(
                SessionInfoUpdate(session_update="session_info_update", title=title, updated_at=iso_now())
            )
        return recording

    def _start_worker(
        self,
        agent: TurnLoop,
        text: str,
        history: list[Message],
        images: Sequence[ImagePart],
        loop: asyncio.AbstractEventLoop,
    ) -> asyncio.Future[TurnResult | None]:
        """The agent loop on a worker thread, tracked until it ends (see :attr:`stuck`)."""
        worker: asyncio.Future[TurnResult | None] = loop.run_in_executor(
            self._executor,
            # a loop written before images existed is still called without them
            lambda: (
                agent.run_conversation(text, history, images=images)
                if images
                else agent.run_conversation(text, history)
            ),
        )
        self._workers.add(worker)
        worker.add_done_callback(self._workers.discard)
        return worker

    async def _finish(self, session: Session, run: _TurnRun, stop_reason: StopReason, failed: bool) -> None:
        """End the turn before its answer: the summary stops, every open card closes and reaches
        the client, the conversation is stored."""
        turn = run.turn
        if turn is not None:  # the summary stops, then every open card closes
            if self._turn_of.get(session.id) is turn:
                del self._turn_of[session.id]
            turn.end(stop_reason, failed=failed)
        await await_through_cancel(self._parts.outbox().barrier(), give_up=lambda: self._abandoned)
        session.finish_turn(run.result.messages if run.result is not None else [])
        if run.recording is not None:
            self._parts.outbox().observers(session.id).discard(run.recording)
        self._parts.recorder.end_turn(
            session.id, history_to_json(session.history), stop_reason, failed=failed
        )
        # the turn is on disk before its answer, so an agent killed right after still has it;
        # bounded, so a stuck disk delays an answer by at most ``[store] flush_timeout``. Not for a
        # cancelled turn: the person is waiting for the stop (cancel -> answer within a few ms),
        # and the write is queued already — should the process die before it lands, the turn
        # loads as interrupted. Whatever reads the store next (load, list, delete) flushes first.
        if stop_reason != "cancelled":
            within = self._parts.settings().store.flush_timeout
            await await_through_cancel(
                asyncio.ensure_future(self._parts.writer.flush_async(within)),
                give_up=lambda: self._abandoned,
            )
        self._parts.sessions.touch(session.id)  # idle time counts from the end of the last prompt

    # ------------------------------------------------------------ wiring one turn

    def _new_turn(
        self, session: Session, cancel: CancelToken, text: str, loop: asyncio.AbstractEventLoop
    ) -> ProgressTurn:
        """The turn's callbacks, tool observer and summary: the same :class:`ProgressTurn` the
        README hands agent developers, on the session's stream and with its cancel signal."""
        return ProgressTurn(
            self._parts.conn(),
            session.id,
            loop,
            cancel=cancel,
            registry=self._parts.registry,
            workspace=session.cwd,
            stream=session.stream,
            summary=self._parts.summaries,
            user_text=text,
            audit=lambda card_id, title, answer: self._parts.audit(session.id, card_id, title, answer),
            client_capabilities=self._parts.client_capabilities(),
            policy=session.policy,
        )

    def _build_agent(self, session: Session, turn: ProgressTurn) -> TurnLoop:
        """The turn's agent loop, wired through ``turn.agent_callbacks()`` plus what only this
        agent has: the session's model and tools, its running cost, the loop's heartbeats."""
        stream = session.stream

        def on_usage(report: UsageReport) -> None:
            if report.cost is not None:  # usage_update's cost is the session's total so far
                session.cost = (session.cost or 0.0) + report.cost
            if report.context_window:
                used = report.input_tokens + report.output_tokens
                stream.send_usage(used, report.context_window, session.cost)

        return self._parts.turn_runner(
            self._parts.model_for(session),
            toolbox=session.toolbox,
            usage_callback=on_usage,
            scheduler=self._parts.scheduler or loop_heartbeats(turn.loop),
            settings=self._parts.settings(),
            system_prompt=SYSTEM_PROMPT,
            error_note=False,
            **turn.agent_callbacks(),
        )


@dataclass
class _TurnRun:
    """What a turn's start and run leave for its ending, even when they fail half-way: the turn
    (once built), what the agent loop returned or raised, and whether the prompt's task was
    cancelled while it waited."""

    turn: ProgressTurn | None = None
    #: the recorder's observer of the turn's updates, once the prompt is recorded
    recording: UpdateObserver | None = None
    result: TurnResult | None = None
    error: BaseException | None = None
    interrupted: bool = False


def _stop_reason(cancel: CancelToken, run: _TurnRun) -> StopReason:
    """A cancel (by the client, or its hang-up) wins over what the loop said."""
    stop_reason: StopReason = "cancelled" if cancel.cancelled or run.interrupted else "end_turn"
    if run.result is not None and not cancel.cancelled:
        stop_reason = run.result.stop_reason
    return stop_reason


def _accepted_images(session: Session, prompt: list[Any]) -> tuple[ImagePart, ...]:
    """The prompt's images the turn takes; those refused are told in the session, and the turn
    goes on with the rest."""
    attached = sort_images(prompt)
    if attached.refused:
        session.stream.send_message_text("".join(f"⚠️ {note}\n" for note in attached.refused) + "\n")
    return attached.images


def _prompt_response(stop_reason: StopReason, result: TurnResult | None) -> PromptResponse:
    """The prompt's answer. Token usage is the answer's own ``usage`` (what editors read) and, for
    the front-ends that read it there, in ``_meta`` too; with a known context window the turn
    also sent ``usage_update`` while it ran."""
    total = result.usage if result is not None else None
    usage = (
        Usage(
            total_tokens=total.total_tokens,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
        )
        if total is not None
        else None
    )
    meta = meta_field(ProgressMeta(usage=usage)) if usage is not None else None
    return PromptResponse(stop_reason=stop_reason, usage=usage, field_meta=meta)
