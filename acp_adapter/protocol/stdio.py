"""Make stdout structurally the protocol's (stdout is the protocol).

Instead of asking every library and child process to behave, the ACP server takes private,
non-inheritable duplicates of fds 0 and 1 for JSON-RPC, then points fd 1 (and ``sys.stdout``) at
stderr and fd 0 at ``/dev/null``. A ``print``, a logging handler on stdout, a warning or a child
process that writes to fd 1 now lands on stderr, and a child that reads stdin cannot steal
protocol bytes.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import selectors
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from acp_adapter.protocol.ndjson import CHUNK_BYTES

log = logging.getLogger("acp_progress.stdio")

_attached = threading.Event()

#: The protocol reader (:mod:`.ndjson`) reads raw chunks and enforces the line limit itself; this
#: limit only sets when asyncio pauses the pipe (at twice it), so unread input stays in the kernel.
STREAM_LIMIT = CHUNK_BYTES


def protocol_attached() -> bool:
    """True once an ACP connection owns the real stdout of this process."""
    return _attached.is_set()


@dataclass(frozen=True)
class ProtocolFds:
    read_fd: int
    write_fd: int


def protect_stdio() -> ProtocolFds:
    """Move the protocol to private fds and send everything else on fd 1 to stderr."""
    for stream in (sys.stdout, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    write_fd = os.dup(1)  # os.dup returns a non-inheritable fd: children never see the protocol
    read_fd = os.dup(0)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(os.devnull, "r")))
    _attached.set()
    return ProtocolFds(read_fd, write_fd)


class _WriteProtocol(asyncio.BaseProtocol):
    """Flow control for a write pipe, so ``StreamWriter.drain`` waits when the client lags."""

    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._lost = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._release()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._release()

    def _release(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _drain_helper(self) -> None:
        if self._lost:
            raise ConnectionResetError("the ACP client closed our stdout")
        if not self._paused:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter


class _BlockingWriteTransport(asyncio.WriteTransport):
    """Fallback when stdout is a regular file (``> log.jsonl``): asyncio pipes refuse files."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def get_write_buffer_size(self) -> int:
        return 0


def _is_pipe_like(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, a socket, or a character device the
    selector accepts (a terminal). ``/dev/null`` is a character device that epoll refuses (EPERM):
    handed to the loop, an agent started with ``< /dev/null`` would wait for input for ever instead
    of reading its end; it is read on a thread like a regular file."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return True
    if not stat.S_ISCHR(mode):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


class _EofAfterReader(asyncio.StreamReader):
    """A reader whose end of input reaches its consumer only after ``before_eof()`` has run.

    The SDK's connection closes itself (cancelling in-flight requests, closing the writer) as soon
    as it reads EOF. A client that closed our stdin may still be reading stdout, so the agent first
    finishes its turns (``before_eof``: cancel them and let each answer its prompt), then the SDK
    sees the EOF. Data is untouched: only ``feed_eof`` is deferred.
    """

    def __init__(self, limit: int, before_eof: Callable[[], Awaitable[None]]) -> None:
        super().__init__(limit=limit)
        self._before_eof: Callable[[], Awaitable[None]] | None = before_eof
        self._eof_task: asyncio.Task[None] | None = None

    def feed_eof(self) -> None:
        if self._eof_task is not None:
            return  # already on its way (eof_received and connection_lost both report it)
        hook, self._before_eof = self._before_eof, None
        if hook is None:
            super().feed_eof()
            return

        async def run() -> None:
            try:
                await hook()
            except Exception:
                log.exception("finishing the turns at end of input failed")
            finally:
                super(_EofAfterReader, self).feed_eof()

        self._eof_task = asyncio.get_running_loop().create_task(run(), name="acp-progress-eof")


async def open_protocol_streams(
    fds: ProtocolFds, *, before_eof: Callable[[], Awaitable[None]] | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """asyncio streams on the private protocol fds (the SDK's own helper binds to sys.stdin/out).

    ``before_eof`` runs when the input ends, before the reader reports EOF (see
    :class:`_EofAfterReader`)."""
    loop = asyncio.get_running_loop()
    reader = (
        asyncio.StreamReader(limit=STREAM_LIMIT)
        if before_eof is None
        else _EofAfterReader(STREAM_LIMIT, before_eof)
    )
    if _is_pipe_like(fds.read_fd):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fds.read_fd, "rb", buffering=0)
        )
    else:
        _feed_from_thread(loop, reader, fds.read_fd)
    protocol = _WriteProtocol()
    transport: asyncio.WriteTransport
    if _is_pipe_like(fds.write_fd):
        transport, _ = await loop.connect_write_pipe(
            lambda: protocol, os.fdopen(fds.write_fd, "wb", buffering=0)
        )
    else:
        transport = _BlockingWriteTransport(fds.write_fd)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Read a regular file given as stdin (``< requests.jsonl``) on a thread."""

    def pump() -> None:
        with os.fdopen(fd, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        loop.call_soon_threadsafe(reader.feed_eof)

    threading.Thread(target=pump, name="acp-progress-stdin", daemon=True).start()
