"""Ending an agent process and everything it started.

Front-ends and the relay spawn agents with ``start_new_session=True`` so the agent leads its own
process group; ending that group reaches the tools, shells and background jobs the agent started,
which killing the agent's pid alone would leave running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


async def end_process_group(process: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    """EOF on stdin and a moment to exit by itself, then SIGTERM to the group, then SIGKILL."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    if process.returncode is None:
        await _wait(process, grace / 2)
    if not _signal_group(process.pid, signal.SIGTERM):
        return
    await _wait(process, grace)
    if _signal_group(process.pid, signal.SIGKILL):  # children that ignored SIGTERM, or a stuck leader
        await _wait(process, grace)


async def _wait(process: asyncio.subprocess.Process, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), seconds)


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal the group led by ``pgid``; False when nothing of it is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
