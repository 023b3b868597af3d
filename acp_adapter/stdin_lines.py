"""Lines of stdin for an asyncio front-end (``chat`` on a pipe, ``watch -``).

Read by a daemon thread, so a pipe, a regular file (which ``add_reader`` refuses) and a terminal
all work, and a process interrupted while waiting for input exits at once: a daemon thread blocked
in ``read`` does not hold the interpreter's exit (an executor thread would).
"""

from __future__ import annotations

import asyncio
import threading
from typing import BinaryIO

__all__ = ["StdinLines"]

#: Longest line kept whole; a longer one is cut (hostile input must not grow memory unbounded).
MAX_LINE_BYTES = 1 << 20


class StdinLines:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._pump, name="acp-stdin", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            while True:
                raw = self._stream.readline(MAX_LINE_BYTES)
                if not raw:
                    break
                if not raw.endswith(b"\n"):  # cut: drop the rest of the over-long line
                    while (more := self._stream.readline(MAX_LINE_BYTES)) and not more.endswith(b"\n"):
                        pass
                text = raw.decode(errors="replace").rstrip("\r\n")
                self._loop.call_soon_threadsafe(self._queue.put_nowait, text)
        except (OSError, ValueError):
            pass
        finally:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

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
