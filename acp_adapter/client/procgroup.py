"""Ending an agent process and everything it started.

Front-ends and the relay spawn agents with ``start_new_session=True`` so the agent leads its own
process group; ending that group reaches the tools, shells and background jobs the agent started,
which killing the agent's pid alone would leave running.

Every wait here is for the leader's own exit status, not for ``Process.wait()``: asyncio answers
that only once the process's pipes are closed as well, and a child that ignores SIGTERM keeps the
agent's stdout and stderr open for as long as it lives — a wait on it would spend the whole grace
on an agent already gone, with the child still running until the SIGKILL that follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

#: how often a wait looks at the leader's exit status (asyncio's child watcher sets it on exit)
EXIT_POLL_S = 0.01


async def end_process_group(process: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    """EOF on stdin and a moment to exit by itself, then SIGTERM to the group, then SIGKILL.

    Returns once the leader has exited and the group has been sent SIGKILL (nothing of it left to
    signal, or whatever ignored SIGTERM), whoever still holds its pipes."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    await exit_status_within(process, grace / 2)
    if not _signal_group(process.pid, signal.SIGTERM):
        return
    await exit_status_within(process, grace)
    if _signal_group(process.pid, signal.SIGKILL):  # children that ignored SIGTERM, or a stuck leader
        await exit_status_within(process, grace)


async def exit_status_within(process: asyncio.subprocess.Process, seconds: float) -> int | None:
    """The process's exit status once it has exited, waiting at most ``seconds``; None while it
    runs. Unlike ``Process.wait()``, a child still holding its pipes does not hold this."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # the exit has no event of its own: asyncio's one, Process.wait(), waits for the pipes too
    while process.returncode is None and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(EXIT_POLL_S)
    return process.returncode


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal the group led by ``pgid``; False when nothing of it is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
