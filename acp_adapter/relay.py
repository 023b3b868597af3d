"""``acp-progress relay -- CMD``: give any ACP agent a spinner without changing a byte of its protocol.

The relay is an ACP agent for the editor and an ACP client for ``CMD``. It forwards every line both
ways unchanged and in order — requests, responses, notifications, extension methods, ``_meta`` and
fields this SDK version does not know — so it works at the JSON-RPC line level rather than through
typed SDK objects, which would drop what they do not model.

What it adds: while a ``session/prompt`` is outstanding and the wrapped agent has said nothing about
that session for ``think_after`` seconds, the relay opens a ``kind="think"`` card itself (seed 003
semantics: ``in_progress``, heartbeats with the elapsed time), and closes it just before it forwards
the agent's next message for that session, or before the prompt response. All writes to the editor
happen on the event loop in program order, so "close the injected card, then forward" can never be
reordered. An agent that streams promptly gets nothing injected.

With progress summaries on (``--summary``/``ACP_PROGRESS_SUMMARY``, off by default for the relay),
each prompt gets a :class:`~acp_adapter.summary.ProgressSummary` fed with what the editor sees —
the wrapped agent's forwarded updates (parsed into SDK objects only for this) and the injected
card — and the injected card's heartbeats end with the latest sentence. The forwarded lines
themselves are never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.helpers import SessionUpdate
from acp.meta import CLIENT_METHODS
from acp.schema import PromptRequest, SessionNotification
from pydantic import ValidationError

from .procgroup import end_process_group
from .redact import redact_text
from .tools import (
    build_thinking_complete,
    build_thinking_failed,
    build_thinking_progress,
    build_thinking_start,
)

if TYPE_CHECKING:
    from .summary import Outcome, ProgressSummary, SummaryEvent, SummaryFactory

__all__ = ["Relay", "RelayOptions", "run_relay"]

log = logging.getLogger("acp_progress.relay")

LINE_LIMIT = 50 * 1024 * 1024
SESSION_UPDATE = CLIENT_METHODS["session_update"]
PROMPT = "session/prompt"
CANCEL = "session/cancel"


@dataclass(frozen=True)
class RelayOptions:
    """``think_after`` None disables injection; ``heartbeat`` None disables heartbeats;
    ``summary`` (None: off) makes a progress summary per prompt for the injected card."""

    think_after: float | None = 0.5
    heartbeat: float | None = 30.0
    summary: SummaryFactory | None = None


@dataclass
class _Turn:
    """One outstanding prompt of one session, as the relay tracks it."""

    session_id: str
    last_activity: float
    card_id: str | None = None
    card_opened: float = 0.0
    waiting_on_editor: int = 0  # agent→editor requests (permission, fs …) not answered yet
    cancelled: bool = False
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    summary: ProgressSummary | None = field(default=None, repr=False)
    shown: SummaryEvent | None = None  # the latest summary, carried by the card's heartbeats


def _key(request_id: Any) -> str:
    """JSON-RPC ids may be numbers or strings; ``1`` and ``"1"`` are different ids."""
    return json.dumps(request_id)


def _session_of(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        session_id = params.get("sessionId")
        if isinstance(session_id, str):
            return session_id
    return None


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


class Relay:
    """Forward between an editor's streams and the wrapped agent's pipes, injecting think cards."""

    def __init__(
        self,
        editor_reader: asyncio.StreamReader,
        editor_writer: asyncio.StreamWriter,
        agent_reader: asyncio.StreamReader,
        agent_writer: asyncio.StreamWriter,
        options: RelayOptions,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.editor_reader = editor_reader
        self.editor_writer = editor_writer
        self.agent_reader = agent_reader
        self.agent_writer = agent_writer
        self.options = options
        self._loop = asyncio.get_running_loop()
        self._clock = clock or self._loop.time
        self._turns: dict[str, _Turn] = {}
        self._prompt_sessions: dict[str, str] = {}  # prompt request id → session id
        self._editor_pending: dict[str, Any] = {}  # editor request id → raw id (answered on agent death)
        self._agent_requests: dict[str, str] = {}  # agent→editor request id → session id
        self._card_ids = itertools.count(1)
        self.injected_updates = 0
        self.editor_closed = False

    # ------------------------------------------------------------ writing to the editor

    def _to_editor(self, data: bytes) -> None:
        if self.editor_closed:
            return
        try:
            self.editor_writer.write(data)
        except (ConnectionError, RuntimeError):
            self.editor_closed = True

    def _inject(self, session_id: str, update: SessionUpdate) -> None:
        notification = SessionNotification(session_id=session_id, update=update)
        params = notification.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.injected_updates += 1
        self._to_editor(_line({"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params}))
        turn = self._turns.get(session_id)
        if turn is not None and turn.summary is not None:
            turn.summary.observe(update)  # the summary sees what the editor sees, injected card included

    # ------------------------------------------------------------ progress summaries

    def _heartbeat(self, turn: _Turn, card_id: str) -> SessionUpdate:
        elapsed = self._clock() - turn.card_opened
        shown = turn.shown
        if shown is None:
            return build_thinking_progress(card_id, elapsed)
        return build_thinking_progress(
            card_id, elapsed, summary=shown.summary, summary_revision=shown.revision
        )

    def _start_summary(self, turn: _Turn, params: dict[str, Any]) -> None:
        if self.options.summary is None or self.options.think_after is None:
            return  # off, or no card will ever show it (--no-think)
        try:
            from .summary import user_text_from_prompt

            text = user_text_from_prompt(PromptRequest.model_validate(params).prompt)
        except ValidationError:
            text = ""  # the agent will answer the bad prompt; the summary just knows less

        def show(event: SummaryEvent) -> None:
            if self._turns.get(turn.session_id) is not turn or turn.cancelled:
                return
            turn.shown = event
            if turn.card_id is not None:  # the open card shows it now, not a heartbeat later
                self._inject(turn.session_id, self._heartbeat(turn, turn.card_id))

        turn.summary = self.options.summary.create(user_text=text, on_summary=show).start()

    def _stop_summary(self, turn: _Turn, outcome: Outcome) -> None:
        summary, turn.summary = turn.summary, None
        if summary is not None:
            summary.stop(outcome)

    def stop_summaries(self) -> None:
        """The relay is ending: no turn's summary may write anything more."""
        for turn in self._turns.values():
            self._stop_summary(turn, "cancelled")

    def _observe_forwarded(self, message: dict[str, Any]) -> None:
        """Feed a forwarded ``session/update`` to its turn's summary (SDK objects, never raw JSON)."""
        session_id = _session_of(message)
        turn = self._turns.get(session_id) if session_id is not None else None
        if turn is None or turn.summary is None:
            return
        try:
            notification = SessionNotification.model_validate(message.get("params"))
        except ValidationError:
            return  # an update this SDK does not know: forwarded all the same, just not summarised
        turn.summary.observe(notification.update)

    # ------------------------------------------------------------ the injected card

    def _schedule(self, turn: _Turn, delay: float) -> None:
        if turn.timer is not None:
            turn.timer.cancel()
        turn.timer = self._loop.call_later(max(0.0, delay), self._on_timer, turn)

    def _on_timer(self, turn: _Turn) -> None:
        """One timer per turn: it opens the card after a silent gap, then beats while it is open."""
        turn.timer = None
        if self._turns.get(turn.session_id) is not turn or turn.cancelled or self.options.think_after is None:
            return
        now = self._clock()
        if turn.card_id is None:
            if turn.waiting_on_editor:
                return  # the agent waits for the person, not for a model: no spinner; re-armed on the answer
            silent_for = now - turn.last_activity
            if silent_for < self.options.think_after:
                self._schedule(turn, self.options.think_after - silent_for)
                return
            turn.card_id = f"relay-think-{next(self._card_ids)}"
            turn.card_opened = now
            self._inject(turn.session_id, build_thinking_start(turn.card_id))
        else:
            self._inject(turn.session_id, self._heartbeat(turn, turn.card_id))
        if self.options.heartbeat is not None:
            self._schedule(turn, self.options.heartbeat)

    def _close_card(self, turn: _Turn, failure: str | None = None) -> None:
        if turn.card_id is None:
            return
        elapsed = self._clock() - turn.card_opened
        card_id, turn.card_id = turn.card_id, None
        if turn.timer is not None:
            turn.timer.cancel()
            turn.timer = None
        if failure is None:
            self._inject(turn.session_id, build_thinking_complete(card_id, elapsed))
        else:
            self._inject(turn.session_id, build_thinking_failed(card_id, failure, elapsed))

    def _activity(self, turn: _Turn) -> None:
        """The agent spoke about this session: close the injected card first, restart the silence clock."""
        self._close_card(turn)
        turn.last_activity = self._clock()
        if turn.timer is None and not turn.cancelled and self.options.think_after is not None:
            self._schedule(turn, self.options.think_after)

    def _end_turn(self, session_id: str, failure: str | None = None) -> None:
        turn = self._turns.get(session_id)
        if turn is None:
            return
        self._stop_summary(turn, "cancelled" if turn.cancelled else "failed" if failure else "finished")
        del self._turns[session_id]
        self._close_card(turn, failure)
        if turn.timer is not None:
            turn.timer.cancel()

    # ------------------------------------------------------------ the two directions

    async def editor_to_agent(self) -> None:
        """Forward the editor's lines unchanged; note prompts, cancels and answers to the agent."""
        while line := await _readline(self.editor_reader):
            message = _parse(line)
            if message is not None:
                self._note_from_editor(message)
            self.agent_writer.write(line if line.endswith(b"\n") else line + b"\n")
            await self.agent_writer.drain()

    def _note_from_editor(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        has_id = "id" in message
        if method is None:
            if has_id:  # the editor answers a request of the agent (permission, fs, terminal …)
                session_id = self._agent_requests.pop(_key(message["id"]), None)
                turn = self._turns.get(session_id) if session_id is not None else None
                if turn is not None:
                    turn.waiting_on_editor = max(0, turn.waiting_on_editor - 1)
                    self._activity(turn)
            return
        if has_id:
            self._editor_pending[_key(message["id"])] = message["id"]
        session_id = _session_of(message)
        if session_id is None:
            return
        if method == PROMPT and has_id:
            self._prompt_sessions[_key(message["id"])] = session_id
            turn = _Turn(session_id, last_activity=self._clock())
            self._turns[session_id] = turn
            self._start_summary(turn, message.get("params") or {})
            if self.options.think_after is not None:
                self._schedule(turn, self.options.think_after)
        elif method == CANCEL:
            turn = self._turns.get(session_id)
            if turn is not None:
                turn.cancelled = True
                self._stop_summary(turn, "cancelled")
                self._close_card(turn, "Cancelled")

    async def agent_to_editor(self) -> None:
        """Forward the agent's messages unchanged, closing an injected card before each one it concerns."""
        while line := await _readline(self.agent_reader):
            message = _parse(line)
            if message is None:
                if line.strip():
                    log.warning("dropped a non-JSON-RPC line from the agent: %s", _sample(line))
                continue
            self._note_from_agent(message)
            self._to_editor(line if line.endswith(b"\n") else line + b"\n")
            if self.options.summary is not None and message.get("method") == SESSION_UPDATE:
                self._observe_forwarded(message)
            if not self.editor_closed:
                with contextlib.suppress(ConnectionError):
                    await self.editor_writer.drain()

    def _note_from_agent(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        has_id = "id" in message
        if method is not None:
            session_id = _session_of(message)
            turn = self._turns.get(session_id) if session_id is not None else None
            if turn is not None:
                self._activity(turn)
                if has_id:  # the agent now waits for the editor's answer
                    self._agent_requests[_key(message["id"])] = turn.session_id
                    turn.waiting_on_editor += 1
            return
        if has_id:  # a response to an editor request
            key = _key(message["id"])
            self._editor_pending.pop(key, None)
            session_id = self._prompt_sessions.pop(key, None)
            if session_id is not None:
                self._end_turn(session_id, "The agent answered with an error" if "error" in message else None)

    # ------------------------------------------------------------ ending

    def agent_died(self, reason: str) -> None:
        """Close every injected card as failed, then answer every outstanding editor request."""
        for session_id in list(self._turns):
            self._end_turn(session_id, reason)
        for raw_id in self._editor_pending.values():
            error = RequestError.internal_error({"details": reason}).to_error_obj()
            self._to_editor(_line({"jsonrpc": "2.0", "id": raw_id, "error": error}))
        self._editor_pending.clear()
        self._prompt_sessions.clear()


async def _readline(reader: asyncio.StreamReader) -> bytes:
    """One line (possibly the last, unterminated); b"" at EOF. Over-long lines are skipped whole."""
    while True:
        try:
            return await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
            log.warning("skipped a line longer than %d bytes", LINE_LIMIT)


def _sample(line: bytes) -> str:
    return redact_text(line[:200].decode(errors="replace").strip())


async def run_relay(argv: Sequence[str], options: RelayOptions) -> int:
    """Serve the editor on this process's stdio, with ``argv`` as the real agent. Returns the exit code."""
    from .stdio_guard import open_protocol_streams, protect_stdio

    fds = protect_stdio()
    editor_reader, editor_writer = await open_protocol_streams(fds)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT,
            start_new_session=True,  # its own process group: the relay can end everything it started
        )
    except OSError as exc:
        log.error("cannot start the agent %r: %s", argv[0], exc.strerror or exc)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    assert process.stdin is not None and process.stdout is not None
    relay = Relay(editor_reader, editor_writer, process.stdout, process.stdin, options)
    from_editor = asyncio.ensure_future(relay.editor_to_agent())
    from_agent = asyncio.ensure_future(relay.agent_to_editor())
    done, _ = await asyncio.wait({from_editor, from_agent}, return_when=asyncio.FIRST_COMPLETED)
    code = 0
    if from_agent in done:  # the agent closed its stdout: it died or quit while the editor is still here
        returncode = await _wait_exit(process, 2.0)
        reason = f"the wrapped agent exited{f' with code {returncode}' if returncode is not None else ''}"
        relay.agent_died(reason)
        log.error("%s; the relay stops", reason)
        code = 1
    # else the editor hung up: the agent sees EOF on stdin below and gets a moment to finish
    for task in (from_editor, from_agent):
        task.cancel()
    relay.stop_summaries()
    if options.summary is not None:
        await options.summary.aclose()
    await end_process_group(process)
    with contextlib.suppress(Exception):
        await editor_writer.drain()
    return code


async def _wait_exit(process: asyncio.subprocess.Process, seconds: float) -> int | None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), seconds)
    return process.returncode
