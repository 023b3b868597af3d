"""The console platform: shows on a text stream what a chat would show, reads messages from another.

Offline and deterministic, for demos and tests. Posts print as ``[#3] text``, edits as
``[#3 edited] text`` (the whole new text, as the chat would now show it), typing and reactions
as markers. Every line of input is a chat message; while a permission request is pending, the
next line answers it (``y``/``yes`` allows, anything else denies).

Stopping (Ctrl-C, SIGTERM) works while the bridge waits for input: stdin is read by a daemon
thread (never a thread the event loop waits for), running turns are cancelled, and their open
lines end ``❌ … — the bridge stopped``, within ``stop_grace`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any, Final, TextIO

from acp_adapter.client.driver import PermissionRequest
from acp_adapter.frontends._person import terminal_user
from acp_adapter.frontends.bridges.answers import flush_outbox
from acp_adapter.frontends.bridges.chat_questions import Verdict
from acp_adapter.frontends.bridges.config import BridgeInstance
from acp_adapter.frontends.bridges.events import CHAT_REACTIONS, ReactionKind
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.platforms import stop_on_signals
from acp_adapter.frontends.bridges.runner import STOPPED, BridgeRunner
from acp_adapter.frontends.bridges.sink import BaseSink, MessageId
from acp_adapter.frontends.watch.stdin_lines import StdinLines
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import terminal_safe

log = logging.getLogger("acp_progress.bridges.console")

CHAT: Final = "console"
"""The console's one chat (its key in the bridge's durable state)."""

STOP_GRACE: Final = 1.5
"""Seconds a stopping bridge gives its cancelled turns' last lines (the whole stop stays under 2 s)."""

CONSOLE_REACTIONS: Final[Mapping[str, str]] = CHAT_REACTIONS
"""The same reactions as Telegram (👀 / 👍 / 👎): the console shows what the chat would show,
and ✅ / ❌ already mean a finished or failed tool line."""


class ConsoleSink(BaseSink):
    """A chat rendered as lines on ``out``."""

    limit: int = 4096
    typing_ttl: float | None = 3600.0  # a marker stays on screen: no need to repeat it

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._next = 0
        #: the reader went away (``… | head``): the chat is gone, nothing more is written or logged
        self.closed = False

    def _write(self, line: str) -> None:
        if self.closed:
            return
        try:
            self._out.write(terminal_safe(redact_text(line)) + "\n")
            self._out.flush()
        except (BrokenPipeError, ValueError):  # closed pipe, or a stream already closed
            self._closed_pipe()

    def _closed_pipe(self) -> None:
        """Quiet from here on: no ``typing failed: [Errno 32] Broken pipe``, and no
        ``Exception ignored … BrokenPipeError`` when Python flushes stdout at exit."""
        self.closed = True
        with contextlib.suppress(Exception):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._out.fileno())
            os.close(devnull)

    @staticmethod
    def _body(text: str) -> str:
        return text.replace("\n", "\n     ")

    def user_message(self, text: str) -> MessageId:
        """Echo the person's message (so a piped transcript reads like a chat) and give it an id."""
        self._next += 1
        self._write(f"[#{self._next} you] {self._body(text)}")
        return self._next

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> MessageId:
        # a terminal has no notifications to silence, and a write's outcome is always known
        self._next += 1
        self._write(f"[#{self._next}] {self._body(text)}")
        return self._next

    async def edit(self, message_id: MessageId, text: str) -> None:
        self._write(f"[#{message_id} edited] {self._body(text)}")

    async def delete(self, message_id: MessageId) -> None:
        self._write(f"[#{message_id} deleted]")

    async def typing(self, on: bool) -> None:
        self._write("[typing…]" if on else "[typing off]")

    async def react(self, target: MessageId, kind: ReactionKind) -> None:
        self._write(f"[#{target} reaction {CONSOLE_REACTIONS[kind]}]")


class _ObjectLines:
    """Lines of a file-like object without a descriptor (a test's scripted input), read by a
    daemon thread: like :class:`StdinLines`, a stop never waits for a ``readline`` to return."""

    def __init__(self, inp: TextIO) -> None:
        self._inp = inp
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._pump, name="acp-console-input", daemon=True).start()

    def _pump(self) -> None:
        try:
            while line := self._inp.readline():
                self._put(line.rstrip("\n").rstrip("\r"))
        except (OSError, ValueError, AttributeError) as exc:  # closed, or no input at all
            log.debug("console input ended: %s", exc)
        finally:
            self._put(None)

    def _put(self, item: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def readline(self) -> str | None:
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)
        return line


def _lines_of(inp: TextIO) -> StdinLines | _ObjectLines:
    """Read a real stream by its descriptor (``os.read``: a daemon thread blocked in a buffered
    reader would hold its lock at exit), anything else through its ``readline``."""
    try:
        fd = inp.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return _ObjectLines(inp)
    return StdinLines(fd)


class _ConsoleChat:
    """The one console chat's questions: each waits for the next typed line, until input ends."""

    def __init__(self, sink: ConsoleSink, stop: asyncio.Event) -> None:
        self.sink = sink
        self.stop = stop
        #: questions waiting for the next typed line (a permission's y/N, a field of a tool's question)
        self.pending: list[asyncio.Future[str | None]] = []
        self.input_done = False

    async def ask(
        self, chat_id: Any, request: PermissionRequest, patience: float, requester: Any
    ) -> Verdict | bool | None:
        sink = self.sink
        if self.input_done:
            sink._write(f"[permission] Allow {request.title}? no input left: denied")
            return False
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        command = request.command_beside_title
        if command is not None:  # the title does not show it whole: nobody approves what they cannot see
            for i, line in enumerate(command.splitlines()):
                sink._write(f"[permission] {'command:' if i == 0 else '        '} {line}")
        sink._write(f"[permission] Allow {request.title}? [y/N] (denied after {patience:g}s)")
        answered = True
        try:
            typed = await asyncio.wait_for(future, patience)
            allowed = typed is not None and typed.strip().lower() in {"y", "yes"}
        except TimeoutError:
            allowed = answered = False
            sink._write("[permission] no answer: denied")
        finally:
            with contextlib.suppress(ValueError):
                self.pending.remove(future)
        if self.stop.is_set():
            sink._write(f"[permission] {STOPPED}; nobody answered")
            return None
        sink._write(f"[permission] {'allowed' if allowed else 'denied'}")
        return Verdict(allowed, f"console:{terminal_user()}") if answered else False

    async def ask_line(self, chat_id: Any, prompt: str, patience: float, requester: Any) -> str | None:
        if self.input_done:
            self.sink._write(f"[question] {prompt} — no input left: cancelled")
            return None
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        self.sink._write(f"[question] {prompt} (cancelled after {patience:g}s)")
        try:
            return await asyncio.wait_for(future, patience)
        except TimeoutError:
            self.sink._write("[question] no answer: cancelled")
            return None
        finally:
            with contextlib.suppress(ValueError):
                self.pending.remove(future)

    def answer(self, line: str) -> bool:
        """Give ``line`` to the oldest waiting question; False when none waits (it is a message)."""
        if not self.pending:
            return False
        future = self.pending.pop(0)
        if not future.done():
            future.set_result(line.rstrip("\r\n"))
        return True

    def end_input(self) -> None:
        """Input ended: nobody can answer any more."""
        self.input_done = True
        for future in self.pending:
            if not future.done():
                future.set_result(None)


async def run_console(
    instance: BridgeInstance,
    inp: TextIO,
    out: TextIO,
    *,
    runner: BridgeRunner | None = None,
    agent_env: Mapping[str, str] | None = None,
    stop: asyncio.Event | None = None,
    stop_grace: float = STOP_GRACE,
) -> BridgeRunner:
    """Serve one console chat until end of input, then finish running turns and shut down.

    Until ``stop`` is set (or SIGINT/SIGTERM), that is: then running turns are cancelled, their
    open lines end ``❌ … — the bridge stopped``, and the agent is stopped, without waiting for
    more input."""
    runner = runner or BridgeRunner(instance, BridgeOptions(agent_env=agent_env or {}))
    sink = ConsoleSink(out)
    stop = stop or asyncio.Event()
    chat = _ConsoleChat(sink, stop)
    runner.questions.ask_permission = chat.ask
    runner.questions.ask_line = chat.ask_line
    turns: list[asyncio.Task[None]] = []
    with stop_on_signals(stop, runner):
        stopping = asyncio.create_task(stop.wait(), name="console-stop")
        try:
            if runner.state is not None:  # answer chunks a previous run stored but could not show
                await flush_outbox(sink, runner.state, CHAT)
            runner.ready(
                f"bridge {instance.name}: ready — type a message (end of input ends the run, Ctrl-C stops it)"
            )
            await _read_messages(_lines_of(inp), chat, runner, turns, stopping)
            if stop.is_set():
                await _stop(runner, chat.pending, turns, stop_grace)
            else:
                chat.end_input()
                await _finish_turns(runner, chat, turns, stopping, stop_grace)
        finally:
            stopping.cancel()
            await runner.close()
    return runner


async def _read_messages(
    lines: StdinLines | _ObjectLines,
    chat: _ConsoleChat,
    runner: BridgeRunner,
    turns: list[asyncio.Task[None]],
    stopping: asyncio.Task[Any],
) -> None:
    """Each typed line answers the oldest waiting question or is a message (a turn of its own),
    until input ends (``chat.input_done``) or the bridge is stopped."""
    while not chat.stop.is_set():
        reading = asyncio.ensure_future(lines.readline())
        await asyncio.wait([reading, stopping], return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():
            reading.cancel()
            return
        line = reading.result()
        if line is None:
            chat.input_done = True
            return
        if chat.answer(line):
            continue
        text = line.strip()
        if text:
            user_id = chat.sink.user_message(text)
            turns.append(asyncio.create_task(runner.handle_message(CHAT, text, chat.sink, user_id)))


async def _finish_turns(
    runner: BridgeRunner,
    chat: _ConsoleChat,
    turns: list[asyncio.Task[None]],
    stopping: asyncio.Task[Any],
    grace: float,
) -> None:
    """Input ended: the running turns finish, unless the bridge is stopped meanwhile."""
    if not turns:
        return
    every: asyncio.Future[Any] = asyncio.gather(*turns)
    waited: list[asyncio.Future[Any]] = [every, stopping]
    await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
    if not every.done():
        await _stop(runner, chat.pending, turns, grace)
    with contextlib.suppress(asyncio.CancelledError):
        await every


async def _stop(
    runner: BridgeRunner,
    pending: list[asyncio.Future[str | None]],
    turns: list[asyncio.Task[None]],
    grace: float,
) -> None:
    """Ctrl-C/SIGTERM: cancel the turns first (so no answer to a question reaches the chat), end
    the open questions, and let the turns' last lines out within ``grace``."""
    log.info("console bridge: stopping")
    runner.interrupt(STOPPED)
    for future in pending:
        if not future.done():
            future.set_result(None)
    await runner.shutdown(STOPPED, grace=grace)
    late = [t for t in turns if not t.done()]
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late, timeout=0.5)
