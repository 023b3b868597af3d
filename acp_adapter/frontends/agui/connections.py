"""Connection-level bounds for uvicorn: connections at once, and the time a request may take to start.

uvicorn accepts every connection and waits for its request line and headers for ever (its
``timeout_keep_alive`` only runs *between* requests), so 3,000 connections that send half a
request hold 3,000 file descriptors; at the fd limit ``accept()`` fails and asyncio logs a
traceback per attempt while ``/health`` and every run time out. :func:`guarded_protocol` wraps
uvicorn's HTTP protocol class (h11 or httptools) with two rules:

* at most ``max_connections`` open at once: one over it is answered ``503`` with
  ``Retry-After`` and closed at once, before anything is read (:func:`connection_cap` keeps the
  cap below the process's fd limit, whatever was asked);
* a connection must have sent a complete request head within ``header_timeout`` seconds of
  opening (or of its previous response): otherwise it is answered ``408`` and closed. The body
  then has its own ``body_timeout``, enforced by the app (:mod:`.app`).

It relies on one attribute the uvicorn protocols share, ``cycle`` (the request being answered,
``None`` before the first one): a connection whose request is being answered — a long SSE
stream — is never timed out by this.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any, Final

from acp_adapter.frontends.agui.limits import RETRY_AFTER

log = logging.getLogger("acp_progress.agui.connections")

#: File descriptors kept for everything that is not a client connection (the agent's pipes, logs,
#: the listening socket, imports) on top of the accept backlog.
FD_RESERVE: Final = 64


def _raw_response(status: str, text: str, *extra: str) -> bytes:
    """A complete ``Connection: close`` response, written straight to a transport uvicorn never saw."""
    body = text.encode()
    head = [f"HTTP/1.1 {status}", "content-type: text/plain; charset=utf-8", *extra]
    head += ["connection: close", f"content-length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_BUSY: Final = _raw_response(
    "503 Service Unavailable", "too many connections; try again later", f"retry-after: {RETRY_AFTER}"
)
_TIMEOUT: Final = _raw_response("408 Request Timeout", "the request did not arrive in time")


def connection_cap(max_connections: int) -> tuple[int, int]:
    """``(connections, backlog)``: the cap and the listen backlog, both kept below the fd limit.

    asyncio accepts up to ``backlog`` connections per wake-up before the cap can close them, so
    open connections plus the backlog (plus :data:`FD_RESERVE`) must fit the soft
    ``RLIMIT_NOFILE``; beyond it ``accept()`` fails with "Too many open files".
    """
    backlog = min(2048, max(16, max_connections))
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or max_connections + backlog + FD_RESERVE <= soft:
        return max_connections, backlog
    budget = max(2, soft - FD_RESERVE)
    backlog = max(1, min(backlog, budget // 4))
    cap = max(1, min(max_connections, budget - backlog))
    log.info(
        "at most %d connections at once (asked %d): the file-descriptor limit is %d",
        cap,
        max_connections,
        soft,
    )
    return cap, backlog


class _ConnectionGate:
    """The open connections of one server, at most ``max_connections``; refusals are counted and
    logged sparingly (a flood must not become a flood of log lines)."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self._open: set[asyncio.Protocol] = set()
        self._refused = 0

    def admit(self, connection: asyncio.Protocol) -> bool:
        if len(self._open) < self.max_connections:
            self._open.add(connection)
            return True
        self._refused += 1
        if self._refused in (1, 10, 100, 1000) or self._refused % 10000 == 0:
            log.warning(
                "%d connections open, the most allowed: refusing more (%d refused so far)",
                self.max_connections,
                self._refused,
            )
        return False

    def leave(self, connection: asyncio.Protocol) -> None:
        self._open.discard(connection)


def _close_without_head(connection: asyncio.Protocol) -> None:
    """The header timeout fired: close a connection that has not sent a complete request head
    (``408`` when it never had a response), but never one whose request is being answered."""
    cycle = getattr(connection, "cycle", None)
    if cycle is not None and not getattr(cycle, "response_complete", False):
        return  # a request is being answered: the app's own limits apply
    transport = getattr(connection, "transport", None)
    if transport is None or transport.is_closing():
        return
    if cycle is None:  # no response yet on this connection: tell the client why
        transport.write(_TIMEOUT)
    transport.close()


def guarded_protocol(base: type[asyncio.Protocol], *, max_connections: int, header_timeout: float) -> type:
    """A subclass of uvicorn's protocol class ``base`` enforcing the cap and the header timeout."""
    gate = _ConnectionGate(max_connections)

    class Guarded(base):  # type: ignore[valid-type,misc]
        _refused = False
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            if not gate.admit(self):
                self._refused = True
                transport.write(_BUSY)
                transport.close()
                return
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if not self._refused:
                super().data_received(data)

        def eof_received(self) -> Any:
            return None if self._refused else super().eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            gate.leave(self)
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection gets the same time to arrive

        def _arm(self) -> None:
            self._disarm()
            self._timer = asyncio.get_running_loop().call_later(header_timeout, self._header_timeout)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _header_timeout(self) -> None:
            self._timer = None
            _close_without_head(self)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
