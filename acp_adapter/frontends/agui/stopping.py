"""uvicorn, stopped the way an AG-UI client needs: open runs end first, then the server.

uvicorn's own stop (SIGINT/SIGTERM) stops listening and waits for open connections, up to its
graceful timeout, then cancels them: an SSE stream that is still running a turn is cut without a
terminal event (the client sees ``TOOL_CALL_END`` and then nothing) and uvicorn logs a traceback.
Here the first stop signal ends every open run first — each stream gets ``RUN_ERROR`` ("the
server is stopping") and closes — and only then hands the signal to uvicorn, which finds nothing
left to wait for. A second Ctrl-C is uvicorn's own force exit. The signal is kept, so the
command exits 130 (SIGINT) or 143 (SIGTERM) as every other front-end does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from types import FrameType
from typing import Any

import uvicorn

log = logging.getLogger("acp_progress.agui")

#: seconds the open runs get to send their last event before uvicorn's stop goes on regardless
END_RUNS_WITHIN = 3.0


class StoppingServer(uvicorn.Server):
    """A :class:`uvicorn.Server` whose stop ends the AG-UI service's open runs first."""

    def __init__(self, config: uvicorn.Config, service: Any) -> None:
        super().__init__(config)
        self.service = service
        #: the first stop signal received (None: the server ended on its own)
        self.stop_signal: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ending: asyncio.Task[None] | None = None

    async def serve(self, sockets: Any = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets=sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Called from Python's signal handler (between two bytecodes of the main thread): hand
        the work to the event loop, which ends the runs and then lets uvicorn stop."""
        if self.stop_signal is not None or self._loop is None:
            super().handle_exit(sig, frame)  # a second signal: uvicorn's own (force exit)
            return
        self.stop_signal = sig
        self._loop.call_soon_threadsafe(self._end_runs_then_stop, sig, frame)

    def _end_runs_then_stop(self, sig: int, frame: FrameType | None) -> None:
        self._ending = asyncio.ensure_future(self._end_runs(sig, frame))

    async def _end_runs(self, sig: int, frame: FrameType | None) -> None:
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                ended = await asyncio.wait_for(self.service.end_runs(), END_RUNS_WITHIN)
                name = signal.Signals(sig).name
                log.warning("%s: stopping; %d open run(s) ended with RUN_ERROR", name, ended)
        except Exception:
            log.exception("ending the open runs failed")
        finally:
            uvicorn.Server.handle_exit(self, sig, frame)
