"""Lines of stdin for an asyncio front-end (``chat`` on a pipe, ``watch -``).

Read by a daemon thread, so a pipe, a regular file (which ``add_reader`` refuses) and a terminal
all work, and a process interrupted while waiting for input exits at once: a daemon thread blocked
in ``read`` does not hold the interpreter's exit (an executor thread would).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading

#: Longest line kept whole; a longer one is cut (hostile input must not grow memory unbounded).
MAX_LINE_BYTES = 1 << 20


class StdinLines:
    """Lines of a file descriptor, read with ``os.read`` by a daemon thread.

    ``os.read`` on the raw descriptor, not ``sys.stdin.buffer``: a daemon thread blocked inside a
    buffered reader holds its lock, and the interpreter aborted at exit trying to take it
    (``Fatal Python error: _enter_buffered_busy``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._pump, name="acp-stdin", daemon=True)
        self._thread.start()

    def _put(self, item: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def _pump(self) -> None:
        pending = bytearray()
        skipping = False  # inside an over-long line: dropped up to its newline
        try:
            while chunk := os.read(self._fd, 65536):
                pending.extend(chunk)
                while (end := pending.find(b"\n")) >= 0:
                    line, pending[: end + 1] = bytes(pending[:end]), b""
                    if not skipping:
                        self._put(line.decode(errors="replace").rstrip("\r"))
                    skipping = False
                if len(pending) > MAX_LINE_BYTES:  # cut: the head is kept, the rest dropped
                    if not skipping:
                        self._put(bytes(pending[:MAX_LINE_BYTES]).decode(errors="replace"))
                    pending.clear()
                    skipping = True
            if pending and not skipping:
                self._put(bytes(pending).decode(errors="replace").rstrip("\r"))
        except OSError:
            pass
        finally:
            self._put(None)

    async def readline(self) -> str | None:
        """The next line without its newline; None at the end of input."""
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)  # stays at the end
        return line

    async def read_all(self) -> str:
        lines: list[str] = []
        while (line := await self.readline()) is not None:
            lines.append(line)
        return "\n".join(lines)
