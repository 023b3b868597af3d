"""The console platform: shows on a text stream what a chat would show, reads messages from another.

Offline and deterministic, for demos and tests. Posts print as ``[#3] text``, edits as
``[#3 edited] text`` (the whole new text, as the chat would now show it), typing and reactions
as markers. Every line of input is a chat message; while a permission request is pending, the
next line answers it (``y``/``yes`` allows, anything else denies).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from typing import Any, Final, TextIO

from acp_adapter.client.driver import PermissionRequest
from acp_adapter.frontends.bridges.config import BridgeInstance
from acp_adapter.frontends.bridges.delivery import flush_outbox
from acp_adapter.frontends.bridges.events import CHAT_REACTIONS, ReactionKind
from acp_adapter.frontends.bridges.runner import BridgeRunner
from acp_adapter.frontends.bridges.sink import BaseSink, MessageId
from acp_adapter.safety.redact import redact_text

__all__ = ["CONSOLE_REACTIONS", "ConsoleSink", "run_console"]

log = logging.getLogger("acp_progress.bridges.console")

CHAT: Final = "console"
"""The console's one chat (its key in the bridge's durable state)."""

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
            self._out.write(redact_text(line) + "\n")
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


async def run_console(
    instance: BridgeInstance,
    inp: TextIO,
    out: TextIO,
    *,
    runner: BridgeRunner | None = None,
    agent_env: Mapping[str, str] | None = None,
) -> BridgeRunner:
    """Serve one console chat until end of input, then finish running turns and shut down."""
    runner = runner or BridgeRunner(instance, agent_env=agent_env)
    sink = ConsoleSink(out)
    pending: list[asyncio.Future[bool]] = []
    input_done = False

    async def ask(chat_id: Any, request: PermissionRequest, patience: float, requester: Any) -> bool | None:
        if input_done:
            sink._write(f"[permission] Allow {request.title}? no input left: denied")
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        pending.append(future)
        sink._write(f"[permission] Allow {request.title}? [y/N] (denied after {patience:g}s)")
        try:
            allowed = await asyncio.wait_for(future, patience)
        except TimeoutError:
            allowed = False
            sink._write("[permission] no answer: denied")
        finally:
            with contextlib.suppress(ValueError):
                pending.remove(future)
        sink._write(f"[permission] {'allowed' if allowed else 'denied'}")
        return allowed

    runner.ask_permission = ask
    turns: list[asyncio.Task[None]] = []
    try:
        if runner.state is not None:  # answer chunks a previous run stored but could not show
            await flush_outbox(sink, runner.state, CHAT)
        while True:
            line = await asyncio.to_thread(inp.readline)
            if not line:
                input_done = True
                break
            if pending:
                answer = line.strip().lower()
                future = pending.pop(0)
                if not future.done():
                    future.set_result(answer in {"y", "yes"})
                continue
            text = line.strip()
            if not text:
                continue
            user_id = sink.user_message(text)
            turns.append(asyncio.create_task(runner.handle_message(CHAT, text, sink, user_id)))
        for future in pending:  # input ended: nobody can answer any more
            if not future.done():
                future.set_result(False)
        if turns:
            await asyncio.gather(*turns)
    finally:
        await runner.close()
    return runner
