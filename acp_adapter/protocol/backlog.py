"""How many bytes of our output the peer has not read yet: the agent's view of a slow editor.

The outbox holds a tool's progress while the editor still has unread bytes, so a newer value can
replace it (see :class:`~acp_adapter.agent.outbox.UpdateOutbox`). Once a line leaves the outbox it
sits first in the asyncio transport's buffer (up to the 1 MiB write high-water mark) and then in the
kernel's (a 64 KiB pipe, a socket's send and receive buffers), where nothing can replace it any
more; a client reading 1,000 lines a second would then show values that are seconds old. This
module measures both places:

* the transport: ``get_write_buffer_size()``;
* the kernel, on Linux: ``FIONREAD`` on a pipe (on the write end too: both ends share one buffer, so
  it counts the bytes the reader has not read yet), and ``SIOCOUTQ`` (``TIOCOUTQ``) on an ``AF_UNIX``
  stream socket, which counts what the receiver has not consumed yet (the kernel's accounting size
  of each queued buffer, so a few hundred bytes more than the payload, and 0 once all was read).
  Editors spawn agents with one or the other: Rust's ``std::process`` uses pipes, Node's (libuv)
  socket pairs.

A probe returns None when it cannot know (the transport closed, an ``ioctl`` failed);
:func:`peer_backlog_probe` returns no probe at all for what it cannot measure: regular files, TCP
(its ``SIOCOUTQ`` counts unacknowledged bytes, not unread ones), terminals, in-process transports
and other platforms. No probe means no holding: the outbox then behaves as it did before.

What the peer has read into its own buffers is invisible from here: a client that reads whatever
is available into user space (asyncio's ``StreamReader``) looks like a fast reader. Editors read
their agent's stdout with a buffered line reader that pulls from the kernel only when it needs the
next line (Rust's ``BufReader::read_line``), so for them the kernel's count is the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import struct
import sys
from collections.abc import Callable
from typing import TypeAlias

log = logging.getLogger("acp_progress.backlog")

BacklogProbe: TypeAlias = Callable[[], int | None]
"""Bytes written to the peer and not read by it yet; None when that cannot be known right now."""

_INT = struct.Struct("i")


def _unread_request(fd: int) -> int | None:
    """The ``ioctl`` that counts the peer's unread bytes on ``fd``, or None if there is none."""
    if not sys.platform.startswith("linux"):
        return None  # FIONREAD on a pipe's write end and SIOCOUTQ on AF_UNIX are Linux semantics
    import termios

    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    if stat.S_ISFIFO(mode):
        return termios.FIONREAD
    if stat.S_ISSOCK(mode):
        try:
            # a duplicate, so closing it leaves the caller's fd alone; family and type are read off it
            with socket.socket(fileno=os.dup(fd)) as sock:
                if sock.family == socket.AF_UNIX and sock.type == socket.SOCK_STREAM:
                    return termios.TIOCOUTQ  # SIOCOUTQ: the same request number on Linux
        except OSError:
            return None
    return None


def fd_backlog_probe(fd: int, is_closed: Callable[[], bool] = lambda: False) -> BacklogProbe | None:
    """A probe of the kernel's unread bytes on ``fd`` (a pipe or an ``AF_UNIX`` stream socket we
    write to), or None where it cannot be measured. ``is_closed`` guards against asking a closed
    fd, whose number the process may already have given to another file."""
    request = _unread_request(fd)
    if request is None:
        return None
    import fcntl  # POSIX only, so imported once the fd is known to be measurable (on Linux)

    ioctl, unpack, zero = fcntl.ioctl, _INT.unpack, b"\0" * _INT.size

    def probe() -> int | None:
        if is_closed():
            return None
        try:
            unread: int = unpack(ioctl(fd, request, zero))[0]
        except OSError:
            return None
        return unread

    return probe


def _fd_of(transport: asyncio.BaseTransport) -> int | None:
    for name in ("pipe", "socket"):  # pipe transports (stdio) and socket transports
        end = transport.get_extra_info(name)
        if end is not None:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                fd = end.fileno()
                if isinstance(fd, int) and fd >= 0:
                    return fd
    return None


def peer_backlog_probe(transport: asyncio.WriteTransport) -> BacklogProbe | None:
    """What the peer of ``transport`` has not read yet: the transport's own buffer plus the
    kernel's unread bytes on its fd. None when the kernel side cannot be measured (see the module
    docstring); then no one should hold anything on its account."""
    fd = _fd_of(transport)
    if fd is None:
        return None
    kernel = fd_backlog_probe(fd, transport.is_closing)
    if kernel is None:
        log.debug("the peer's unread bytes cannot be measured on this output; progress is not held")
        return None

    def probe() -> int | None:
        unread = kernel()
        return None if unread is None else unread + transport.get_write_buffer_size()

    return probe
