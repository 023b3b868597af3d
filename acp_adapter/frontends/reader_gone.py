"""Nobody reading, nothing running: notice when the reader of our stdout went away.

``acp-progress watch "wait 10 seconds" | head -3``: once ``head`` has its lines it exits, and
every later write would fail — but a front-end that only writes when a card changes may not
write for minutes, while the agent and its tools go on for nobody. The write end of a pipe (or
socket) whose reader closed it reports ``POLLERR`` (``POLLHUP`` for a socket): polling for it a
few times a second notices within a fraction of a second without writing anything, and the
front-end then stops the turn as it would for Ctrl-C. A terminal or a file never goes away this
way, so nothing is polled for them.
"""

from __future__ import annotations

import asyncio
import os
import select
import stat
from collections.abc import Callable

#: seconds between two looks at stdout
POLL_INTERVAL = 0.2


def can_lose_its_reader(fd: int) -> bool:
    """A pipe or a socket: the kinds of stdout whose reader can go away."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def reader_is_gone(fd: int) -> bool:
    """Whether writing to ``fd`` can only fail now (its reader closed the pipe or socket)."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    try:
        events = poller.poll(0)
    except OSError:
        return False
    return any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _fd, ev in events)


async def when_reader_gone(fd: int, on_gone: Callable[[], None], interval: float = POLL_INTERVAL) -> None:
    """Call ``on_gone`` once, as soon as ``fd``'s reader is gone; cancel the task to stop looking."""
    if fd < 0 or not can_lose_its_reader(fd):
        return
    while not reader_is_gone(fd):  # noqa: ASYNC110 - a descriptor state has no event to await
        await asyncio.sleep(interval)
    on_gone()
