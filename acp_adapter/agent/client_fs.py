"""The editor's files and terminals for the tools (``fs/*`` and ``terminal/*`` client methods).

Why: when ``initialize`` advertised ``clientCapabilities.fs.readTextFile``, the editor's unsaved
buffer is the truth, not the disk; with ``fs.writeTextFile`` the editor applies (and can review)
the agent's writes; with ``terminal: true`` a command runs in a terminal the editor shows on the
card. Otherwise the tools work on the local disk (:class:`EditorHost` is only made when something
is offered).

The tools run on a worker thread; every client call is a coroutine on the connection's event loop
(``run_coroutine_threadsafe``, as permission questions are), bounded in time and abandoned when
the turn is cancelled. A client that answers an error fails that tool call with its message
(:class:`~acp_adapter.tooling.toolbox.ToolError`), never the turn. A terminal is killed when the
turn is cancelled or the command times out, and always released.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from acp import RequestError, tool_terminal_ref, update_tool_call

from acp_adapter.agent.card_terminal import CardTerminalStream, renders_card_terminals
from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import flatten
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.host import TerminalRun
from acp_adapter.tooling.toolbox import ToolError

__all__ = ["CLIENT_CALL_TIMEOUT", "EditorHost", "client_offers"]

log = logging.getLogger("acp_progress.client_fs")

T = TypeVar("T")

#: Longest one file call to the client may take (a dialog the editor shows is not expected here).
CLIENT_CALL_TIMEOUT = 30.0
#: Longest a terminal's kill, output or release may take once the command ended or was stopped.
TERMINAL_CLEANUP_TIMEOUT = 5.0
#: The most output a terminal keeps for the agent (the client truncates from the start).
TERMINAL_OUTPUT_LIMIT = 64 * 1024


def client_offers(capabilities: Any) -> tuple[bool, bool, bool]:
    """``(reads, writes, terminals)`` the client advertised in ``initialize``."""
    fs = getattr(capabilities, "fs", None)
    return (
        getattr(fs, "read_text_file", False) is True,
        getattr(fs, "write_text_file", False) is True,
        getattr(capabilities, "terminal", False) is True,
    )


def _client_error(what: str, exc: BaseException) -> ToolError:
    """The client's own words, one line, redacted: what fails the tool call."""
    if isinstance(exc, RequestError):
        detail = exc.data.get("details") if isinstance(exc.data, dict) else None
        words = f"{exc}" + (f" ({detail})" if isinstance(detail, str) and detail else "")
    elif isinstance(exc, TimeoutError | concurrent.futures.TimeoutError):
        words = "no answer in time"
    else:
        words = str(exc) or type(exc).__name__
    return ToolError(f"the editor could not {what}: {flatten(redact_text(words), 200)}")


class EditorHost:
    """A :class:`~acp_adapter.tooling.host.ToolHost` over one session's ACP client connection."""

    def __init__(
        self,
        conn: Any,
        loop: asyncio.AbstractEventLoop,
        stream: SessionStream,
        cancel: CancelToken,
        capabilities: Any,
        card_of: Callable[[ToolCall], str],
    ) -> None:
        self._conn = conn
        self._loop = loop
        self._stream = stream
        self._cancel = cancel
        self._card_of = card_of
        self.reads_files, self.writes_files, self.runs_terminals = client_offers(capabilities)
        #: the client renders a command's terminal from its card (``_meta.terminal_output``)
        self.renders_card_terminals = renders_card_terminals(capabilities)

    @property
    def offers_anything(self) -> bool:
        return self.reads_files or self.writes_files or self.runs_terminals or self.renders_card_terminals

    def card_terminal(self, call: ToolCall) -> CardTerminalStream | None:
        """The card of ``call`` as a terminal, when the client renders one from the card."""
        if not self.renders_card_terminals:
            return None
        return CardTerminalStream(self._stream, self._card_of(call))

    # ------------------------------------------------------------ the bridge to the loop

    def _run(self, what: str, job: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """Run ``job`` on the loop from this worker thread; cancel abandons it (TurnCancelled)."""
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(job, self._loop)

        def abandon() -> None:
            future.cancel()

        remove = self._cancel.on_cancel(abandon)
        try:
            return future.result(timeout)
        except concurrent.futures.CancelledError:
            raise TurnCancelled(self._cancel.reason) from None
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise _client_error(what, exc) from None
        except ToolError:
            raise
        except Exception as exc:
            if self._cancel.cancelled:
                raise TurnCancelled(self._cancel.reason) from None
            log.info("client call failed (%s): %s", what, redact_text(str(exc)))
            raise _client_error(what, exc) from None
        finally:
            remove()

    # ------------------------------------------------------------ files

    def read_text(self, path: str) -> str:
        async def read() -> str:
            await self._stream.flush()  # the card that asks is on the client before the read
            response = await self._conn.read_text_file(session_id=self._stream.session_id, path=path)
            return str(response.content)

        return self._run(f"read {path}", read(), CLIENT_CALL_TIMEOUT)

    def write_text(self, path: str, content: str) -> None:
        async def write() -> None:
            await self._stream.flush()
            await self._conn.write_text_file(session_id=self._stream.session_id, path=path, content=content)

        self._run(f"write {path}", write(), CLIENT_CALL_TIMEOUT)

    # ------------------------------------------------------------ terminals

    def run_terminal(
        self, call: ToolCall, command: str, cwd: str, timeout: float, cancel: CancelToken
    ) -> TerminalRun:
        """Run ``command`` in a client terminal: ``terminal/create``, the card shows it, then
        ``terminal/wait_for_exit`` — killed (``terminal/kill``) on cancel or after ``timeout`` —,
        ``terminal/output``, and ``terminal/release`` whatever happened.

        Unlike a file call, cancelling does not abandon the coroutine: it is told to stop, kills the
        terminal and releases it, and this thread waits for that (bounded), so a cancelled turn
        leaves no command running in the editor."""
        job = _TerminalJob(self._conn, self._stream, self._card_of(call), command, cwd, timeout)
        future = asyncio.run_coroutine_threadsafe(job.run(), self._loop)

        def tell_stop() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nothing left to stop
                self._loop.call_soon_threadsafe(job.stop.set)

        remove = cancel.on_cancel(tell_stop)
        try:
            result = future.result(timeout + CLIENT_CALL_TIMEOUT + 3 * TERMINAL_CLEANUP_TIMEOUT)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise _client_error("run the command", exc) from None
        except Exception as exc:
            if cancel.cancelled:
                raise TurnCancelled(cancel.reason) from None
            raise _client_error("run the command", exc) from None
        finally:
            remove()
        if job.stopped == "cancelled":
            raise TurnCancelled(cancel.reason)
        if job.stopped == "timeout":
            raise ToolError(f"command timed out after {timeout:g}s (the editor's terminal was killed)")
        return result


class _TerminalJob:
    """One command in a client terminal, run on the loop: created, shown on the card, waited for
    until it exits, is told to stop (:attr:`stop`) or times out — then killed —, read, and always
    released. :attr:`stopped` says why it did not exit by itself."""

    def __init__(
        self, conn: Any, stream: SessionStream, card_id: str, command: str, cwd: str, timeout: float
    ) -> None:
        self._conn = conn
        self._stream = stream
        self._session_id = stream.session_id
        self._card_id = card_id
        self._command = command
        self._cwd = cwd
        self._timeout = timeout
        #: set (on the loop) when the turn is cancelled
        self.stop = asyncio.Event()
        #: ``"cancelled"`` or ``"timeout"`` when the terminal was killed
        self.stopped: str | None = None

    async def run(self) -> TerminalRun:
        await self._stream.flush()
        created = await asyncio.wait_for(
            self._conn.create_terminal(
                session_id=self._session_id,
                command="/bin/sh",
                args=["-c", self._command],
                cwd=self._cwd,
                output_byte_limit=TERMINAL_OUTPUT_LIMIT,
            ),
            CLIENT_CALL_TIMEOUT,
        )
        terminal_id = created.terminal_id
        card_id = self._card_id
        self._stream.tool_update(card_id, update_tool_call(card_id, content=[tool_terminal_ref(terminal_id)]))
        try:
            exit_code, signal = await self._wait_for_exit(terminal_id)
            output = await asyncio.wait_for(
                self._conn.terminal_output(session_id=self._session_id, terminal_id=terminal_id),
                TERMINAL_CLEANUP_TIMEOUT,
            )
            if exit_code is None and signal is None and output.exit_status is not None:
                exit_code, signal = output.exit_status.exit_code, output.exit_status.signal
            return TerminalRun(terminal_id, output.output, exit_code, signal, output.truncated)
        finally:
            release = self._conn.release_terminal(session_id=self._session_id, terminal_id=terminal_id)
            await _cleanup(release, "release")

    async def _wait_for_exit(self, terminal_id: str) -> tuple[int | None, str | None]:
        """The command's exit code and signal; ``(None, None)`` when it was stopped or timed out
        (the terminal is then killed)."""
        waiter = asyncio.ensure_future(
            self._conn.wait_for_terminal_exit(session_id=self._session_id, terminal_id=terminal_id)
        )
        stopper = asyncio.ensure_future(self.stop.wait())
        done, _ = await asyncio.wait(
            {waiter, stopper}, timeout=self._timeout, return_when=asyncio.FIRST_COMPLETED
        )
        stopper.cancel()
        if waiter in done:
            exited = waiter.result()
            return exited.exit_code, exited.signal
        waiter.cancel()
        self.stopped = "cancelled" if self.stop.is_set() else "timeout"
        kill = self._conn.kill_terminal(session_id=self._session_id, terminal_id=terminal_id)
        await _cleanup(kill, "kill")
        return None, None


async def _cleanup(job: Coroutine[Any, Any, Any], name: str) -> None:
    """A terminal's kill or release: bounded, and a failure only logged (the run's outcome stands)."""
    try:
        await asyncio.wait_for(job, TERMINAL_CLEANUP_TIMEOUT)
    except Exception as exc:
        log.info("terminal/%s failed: %s", name, redact_text(str(exc)) or type(exc).__name__)
