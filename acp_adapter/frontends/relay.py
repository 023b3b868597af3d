"""``acp-progress relay -- CMD``: give any ACP agent a spinner without changing a byte of its protocol.

The relay is an ACP agent for the editor and an ACP client for ``CMD``. It forwards every line both
ways unchanged and in order — requests, responses, notifications, extension methods, ``_meta`` and
fields this SDK version does not know — so it works at the JSON-RPC line level rather than through
typed SDK objects, which would drop what they do not model.

What it adds comes from :class:`~acp_adapter.frontends.foreign_watch.ForeignAgentWatch`, the one
implementation of "watch a foreign agent and keep the person informed" that the in-process wrapper
:func:`~acp_adapter.with_progress` uses too: a ``kind="think"`` card while a ``session/prompt`` is
outstanding and the agent has said nothing about that session for ``think_after`` seconds, its
heartbeats, and its close just before the agent's next message for that session or the prompt
response; never a card where the agent shows thinking or a live card of its own. The relay is the
transport around it: it tells the watcher what each line is, and writes what the watcher posts as
lines to the editor on the event loop, in program order, so "close the injected card, then forward"
can never be reordered. The think timer runs only while a ``session/prompt`` is outstanding:
``session/load`` (whose replayed updates can take a while) and ``session/list`` are forwarded like
everything else and never get a card. Turns are keyed by the prompt's request id: after a cancel and
a new prompt, the old prompt's answer ends only the old turn.

Both directions are read through the package's one line reader (:mod:`acp_adapter.protocol.ndjson`):
a line it refuses (too long, too deep, not strict UTF-8 JSON, a bad id) is never forwarded. From the
editor it is answered to the editor; from the agent it is dropped and logged, and if it plainly was
the answer to an editor request, the editor gets an error for that request instead of waiting.

Ending: when the wrapped agent dies, closes its stdout or cannot be written to (a broken pipe is
the agent's failure, not the editor's), the relay fails the open cards, answers every pending editor
request with an error, logs a one-line reason and exits 1. When the editor closes our stdin, the
relay cancels the running prompts, keeps delivering the answers still in flight (up to
``hangup_grace`` seconds), answers what is left with an error, and exits 0.

With progress summaries on (``--summary``/``ACP_PROGRESS_SUMMARY``, off by default for the relay),
each prompt gets a :class:`~acp_adapter.summary.ProgressSummary` fed with what the editor sees —
the wrapped agent's forwarded updates (parsed into SDK objects only for this) and the injected
card — and the injected card's heartbeats end with the latest sentence. The forwarded lines
themselves are never touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp import RequestError
from acp.helpers import SessionUpdate
from acp.meta import AGENT_METHODS, CLIENT_METHODS
from acp.schema import CancelNotification, PromptRequest, SessionNotification
from pydantic import ValidationError

from acp_adapter.client.procgroup import end_process_group, exit_status_within
from acp_adapter.clock import Clock, LoopClock
from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.foreign_watch import (
    ForeignAgentWatch,
    ProgressOptions,
    WatchedTurn,
    facts_of_json,
    shows_own_think_cards,
)
from acp_adapter.protocol import (
    CHUNK_BYTES,
    MessageReader,
    Refused,
    StreamLimits,
    dumps_line,
    error_answer,
    sniff_response_id,
)
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import prompt_to_text

__all__ = ["AgentGone", "Relay", "RelayOptions", "relay_error", "run_relay", "shows_own_think_cards"]

log = logging.getLogger("acp_progress.relay")

SESSION_UPDATE = CLIENT_METHODS["session_update"]
PROMPT = AGENT_METHODS["session_prompt"]
CANCEL = AGENT_METHODS["session_cancel"]
INITIALIZE = AGENT_METHODS["initialize"]


@dataclass(frozen=True)
class RelayOptions(ProgressOptions):
    """The watcher's options (``think_after``, ``heartbeat``, ``summary``: see
    :class:`~acp_adapter.frontends.foreign_watch.ProgressOptions`) plus the transport's: ``limits``
    are both directions' stream limits; ``hangup_grace`` is how long, after the editor closed our
    stdin, the relay keeps delivering answers still in flight (default 5 s); ``stop_grace`` is the
    grace of ending the agent's process group (:func:`~acp_adapter.client.procgroup.end_process_group`:
    half of it for the agent to exit on its closed stdin, then SIGTERM; default 2 s)."""

    limits: StreamLimits = field(default_factory=StreamLimits)
    hangup_grace: float = 5.0
    stop_grace: float = 2.0


class AgentGone(AcpProgressError):
    """The wrapped agent cannot be written to (broken pipe, reset): its failure, not the editor's."""


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


def _line(message: dict[str, Any]) -> bytes:
    return dumps_line(message)


def _prompt_text(params: Any) -> str:
    try:
        return prompt_to_text(PromptRequest.model_validate(params).prompt, attachments=False)
    except ValidationError:
        return ""  # the agent will answer the bad prompt; the summary just knows less


class Relay:
    """Forward between an editor's streams and the wrapped agent's pipes; the think cards come from
    the shared :class:`~acp_adapter.frontends.foreign_watch.ForeignAgentWatch`, written to the editor
    as lines in program order."""

    def __init__(
        self,
        editor_reader: asyncio.StreamReader,
        editor_writer: asyncio.StreamWriter,
        agent_reader: asyncio.StreamReader,
        agent_writer: asyncio.StreamWriter,
        options: RelayOptions,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.editor_reader = editor_reader
        self.editor_writer = editor_writer
        self.agent_reader = agent_reader
        self.agent_writer = agent_writer
        self.options = options
        #: the think-after and heartbeat timers' time (the loop's; a ManualClock in tests)
        time = clock if clock is not None else LoopClock(asyncio.get_running_loop())
        self.watch = ForeignAgentWatch(options, self._inject, time, card_prefix="relay-think")
        self._editor_pending: dict[str, Any] = {}  # editor request id → raw id (answered on agent death)
        #: agent→editor request id → (raw id, the turn it came in)
        self._agent_requests: dict[str, tuple[Any, WatchedTurn | None]] = {}
        #: the editor's ``initialize`` request ids not answered yet (their answers may carry the flag)
        self._initialize_ids: set[str] = set()
        self._all_answered = asyncio.Event()
        self._all_answered.set()
        self.editor_closed = False

    @property
    def injected_updates(self) -> int:
        return self.watch.injected_updates

    # ------------------------------------------------------------ writing

    def _to_editor(self, data: bytes) -> None:
        if self.editor_closed:
            return
        try:
            self.editor_writer.write(data)
        except (ConnectionError, RuntimeError):
            self.editor_closed = True

    async def _drain_editor(self) -> None:
        if not self.editor_closed:
            with contextlib.suppress(ConnectionError):
                await self.editor_writer.drain()

    async def _to_agent(self, data: bytes) -> None:
        """Write one line to the agent; a failure is the agent's (:class:`AgentGone`)."""
        if self.agent_writer.is_closing():
            raise AgentGone("cannot write to the wrapped agent: its stdin is closed")
        try:
            self.agent_writer.write(data)
            await self.agent_writer.drain()
        except (ConnectionError, OSError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise AgentGone(f"cannot write to the wrapped agent: {reason}") from None

    def _inject(self, session_id: str, update: SessionUpdate) -> None:
        """The watcher's post: one ``session/update`` line to the editor, written now."""
        notification = SessionNotification(session_id=session_id, update=update)
        params = notification.model_dump(mode="json", by_alias=True, exclude_none=True)
        self._to_editor(_line({"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params}))

    def _answer_editor(self, key: str, reason: str) -> None:
        """Answer the pending editor request ``key`` with an error (it will get no other answer)."""
        if key not in self._editor_pending:
            return
        raw_id = self._editor_pending.pop(key)
        error = relay_error(reason)
        self._to_editor(_line(error_answer(error, raw_id)))
        self._note_answered()
        self.watch.prompt_ended(key, reason)

    def _note_answered(self) -> None:
        if not self._editor_pending:
            self._all_answered.set()

    def stop_summaries(self) -> None:
        """The relay is ending: no turn's summary may write anything more."""
        self.watch.stop_summaries()

    def _observe_forwarded(self, message: dict[str, Any]) -> None:
        """Feed a forwarded ``session/update`` to its turn's summary (SDK objects, never raw JSON)."""
        session_id = _session_of(message)
        if session_id is None or not self.watch.summarising(session_id):
            return
        try:
            notification = SessionNotification.model_validate(message.get("params"))
        except ValidationError:
            return  # an update this SDK does not know: forwarded all the same, just not summarised
        self.watch.observe(session_id, notification.update)

    # ------------------------------------------------------------ the two directions

    async def editor_to_agent(self) -> None:
        """Forward the editor's accepted lines unchanged; answer the refused ones to the editor."""
        reader = MessageReader(self.editor_reader, self.options.limits)
        while (item := await reader.next()) is not None:
            if isinstance(item, Refused):
                await self._refused_from_editor(item)
                continue
            self._note_from_editor(item.message)
            await self._to_agent(item.raw + b"\n")

    async def _refused_from_editor(self, refused: Refused) -> None:
        log.warning("refused a line from the editor (not forwarded): %s", refused.reason)
        if refused.answer is not None:
            self._to_editor(dumps_line(refused.answer))
            await self._drain_editor()
        # it may have been the editor's answer to an agent request: the agent must not wait for it
        sniffed = sniff_response_id(refused.head)
        if sniffed is not None and (pending := self._agent_requests.pop(_key(sniffed), None)) is not None:
            raw_id, turn = pending
            details = "the editor's answer was refused by the relay: " + refused.reason
            error = relay_error(details)
            await self._to_agent(_line(error_answer(error, raw_id)))
            self.watch.editor_answered(turn)

    def _note_from_editor(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        has_id = "id" in message
        if method is None:
            if has_id:  # the editor answers a request of the agent (permission, fs, terminal …)
                _raw, turn = self._agent_requests.pop(_key(message["id"]), (None, None))
                self.watch.editor_answered(turn)
            return
        if has_id:
            self._editor_pending[_key(message["id"])] = message["id"]
            self._all_answered.clear()
            if method == INITIALIZE:
                self._initialize_ids.add(_key(message["id"]))
        session_id = _session_of(message)
        if session_id is None:
            return
        if method == PROMPT and has_id:
            params = message.get("params") or {}
            self.watch.prompt_started(_key(message["id"]), session_id, lambda: _prompt_text(params))
        elif method == CANCEL:
            self.watch.cancel_requested(session_id)

    async def agent_to_editor(self) -> None:
        """Forward the agent's accepted lines unchanged, closing an injected card before each one it
        concerns; drop (and log) the refused ones."""
        reader = MessageReader(self.agent_reader, self.options.limits)
        while (item := await reader.next()) is not None:
            if isinstance(item, Refused):
                self._refused_from_agent(item)
                await self._drain_editor()
                continue
            message = item.message
            self._note_from_agent(message)
            self._to_editor(item.raw + b"\n")
            if self.options.summary is not None and message.get("method") == SESSION_UPDATE:
                self._observe_forwarded(message)
            await self._drain_editor()

    def _refused_from_agent(self, refused: Refused) -> None:
        sample = _sample(refused.head)
        log.warning("dropped a non-JSON-RPC line from the agent: %s (%s)", sample, refused.reason)
        sniffed = sniff_response_id(refused.head)
        if sniffed is None:
            return
        key = _key(sniffed)
        if key in self._editor_pending:  # it was the answer to an editor request: answer with an error
            self._answer_editor(key, f"the wrapped agent's answer was refused: {refused.reason}")

    def _note_from_agent(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        has_id = "id" in message
        if method is not None:
            session_id = _session_of(message)
            if has_id:  # the agent now waits for the editor's answer
                turn = self.watch.agent_asked(session_id)
                self._agent_requests[_key(message["id"])] = (message["id"], turn)
            elif method == SESSION_UPDATE and session_id is not None:
                self.watch.agent_spoke(session_id, facts_of_json(message["params"].get("update")))
            else:
                self.watch.agent_spoke(session_id)
            return
        if has_id:  # a response to an editor request
            key = _key(message["id"])
            if key in self._initialize_ids:
                self._initialize_ids.discard(key)
                self.watch.agent_initialized(message.get("result"))
            self._editor_pending.pop(key, None)
            self._note_answered()
            self.watch.prompt_ended(key, "The agent answered with an error" if "error" in message else None)

    # ------------------------------------------------------------ ending

    @property
    def pending(self) -> int:
        """Editor requests the agent has not answered yet."""
        return len(self._editor_pending)

    async def wait_answered(self) -> None:
        await self._all_answered.wait()

    async def cancel_running(self) -> None:
        """The editor hung up: cancel every running prompt, as the editor would have."""
        for session_id in self.watch.running_sessions():
            notification = CancelNotification(session_id=session_id)
            params = notification.model_dump(mode="json", by_alias=True, exclude_none=True)
            await self._to_agent(_line({"jsonrpc": "2.0", "method": CANCEL, "params": params}))

    def agent_died(self, reason: str) -> None:
        """Close every injected card as failed, then answer every outstanding editor request."""
        self.watch.end_all(reason)
        for raw_id in self._editor_pending.values():
            self._to_editor(_line(error_answer(relay_error(reason), raw_id)))
        self._editor_pending.clear()
        self._all_answered.set()


def relay_error(reason: str) -> RequestError:
    """The error an editor request gets when the relay answers it: the reason is the message
    itself (``the wrapped agent exited with code 3``), not only in ``data``, so a client that shows
    the message says what happened."""
    return RequestError(-32603, reason, {"details": reason})


def _sample(head: bytes) -> str:
    return redact_text(head[:200].decode(errors="replace").strip())


async def run_relay(argv: Sequence[str], options: RelayOptions) -> int:
    """Serve the editor on this process's stdio, with ``argv`` as the real agent. Returns the exit code:
    0 when the editor hung up, 1 for a failure of the agent or the relay (logged as one line)."""
    from acp_adapter.protocol.stdio import open_protocol_streams, protect_stdio

    fds = protect_stdio()
    editor_reader, editor_writer = await open_protocol_streams(fds)
    return await relay_streams(editor_reader, editor_writer, argv, options)


async def relay_streams(
    editor_reader: asyncio.StreamReader,
    editor_writer: asyncio.StreamWriter,
    argv: Sequence[str],
    options: RelayOptions,
) -> int:
    """The relay between an editor on these streams and ``argv`` as the real agent (what
    :func:`run_relay` runs on stdio; a test may hand it a socket instead). Returns the exit code."""
    process = await _start_agent(argv)
    if isinstance(process, int):
        return process
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stderr_pump = asyncio.ensure_future(_forward_stderr(process.stderr))
    relay = Relay(editor_reader, editor_writer, process.stdout, process.stdin, options)
    from_editor = asyncio.ensure_future(relay.editor_to_agent())
    from_agent = asyncio.ensure_future(relay.agent_to_editor())
    done, _ = await asyncio.wait({from_editor, from_agent}, return_when=asyncio.FIRST_COMPLETED)
    failure = await _why_it_ended(from_editor, from_agent, from_agent in done, process)
    if failure is None:  # the editor hung up (EOF): deliver the answers in flight, then go
        await _finish_after_hang_up(relay, process, from_agent, options.hangup_grace)
    else:
        relay.agent_died(failure)
        log.error("%s; the relay stops", failure)
    for task in (from_editor, from_agent):
        task.cancel()
    relay.stop_summaries()
    if options.summary is not None:
        await options.summary.aclose()
    await end_process_group(process, options.stop_grace)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(stderr_pump), 0.5)  # its last lines
    stderr_pump.cancel()
    with contextlib.suppress(Exception):
        await editor_writer.drain()
    return 0 if failure is None else 1


async def _start_agent(argv: Sequence[str]) -> asyncio.subprocess.Process | int:
    """The real agent's process, or the exit code a shell gives a command it cannot start."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,  # through our stderr, shown not obeyed (_forward_stderr)
            limit=CHUNK_BYTES,  # the line reader enforces the line limit; this only sizes the pipe buffer
            start_new_session=True,  # its own process group: the relay can end everything it started
        )
    except OSError as exc:
        log.error("cannot start the agent %r: %s", argv[0], exc.strerror or exc)
        return 127 if isinstance(exc, FileNotFoundError) else 126


async def _why_it_ended(
    from_editor: asyncio.Future[None],
    from_agent: asyncio.Future[None],
    agent_ended: bool,
    process: asyncio.subprocess.Process,
) -> str | None:
    """What ended the relay, as the log and the editor are told it; None when the editor hung up
    (the one ordinary end)."""
    if not agent_ended:
        return _failure_of(from_editor, "reading the editor")
    # the agent closed its stdout: it died or quit while the editor is still here
    failure = _failure_of(from_agent, "reading the wrapped agent")
    if failure is None:
        returncode = await exit_status_within(process, 2.0)
        code = f" with code {returncode}" if returncode is not None else ""
        failure = f"the wrapped agent exited{code}"
    return failure


async def _forward_stderr(stream: asyncio.StreamReader) -> None:
    """The wrapped agent's stderr, line by line, onto ours — whose every write goes through the
    terminal-text sanitizer — instead of handing it our descriptor: a person running the relay in a
    terminal sees an escape or a bidi override in it shown, never obeyed."""
    while True:
        try:
            line = await stream.readline()
        except (asyncio.LimitOverrunError, ValueError):  # a line past the buffer is dropped
            continue
        if not line:
            return
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()


def _failure_of(task: asyncio.Future[None], doing: str) -> str | None:
    """The one-line reason a direction ended with an error (None: it reached the end of its input)."""
    if task.cancelled():
        return f"the relay was cancelled while {doing}"
    exc = task.exception()
    if exc is None:
        return None
    if isinstance(exc, AgentGone):
        return str(exc)
    log.debug("the relay failed", exc_info=exc)
    return f"the relay failed while {doing}: {type(exc).__name__}: {redact_text(str(exc))}"


async def _finish_after_hang_up(
    relay: Relay, process: asyncio.subprocess.Process, from_agent: asyncio.Future[None], grace: float
) -> None:
    """The editor closed our stdin (it may still read our stdout): cancel the running prompts, wait up
    to ``grace`` for every pending answer, then close the agent's stdin; whatever is still pending
    gets an error."""
    try:
        await relay.cancel_running()
        answered = asyncio.ensure_future(relay.wait_answered())
        await asyncio.wait({answered, from_agent}, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        answered.cancel()
    except AgentGone as exc:
        log.info("%s", exc)
    with contextlib.suppress(Exception):
        process.stdin.close()  # type: ignore[union-attr]
    if relay.pending:
        relay.agent_died("the editor hung up and the wrapped agent did not answer in time")
