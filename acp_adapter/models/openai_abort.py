"""Making the HTTP client's blocking socket reads abortable from another thread.

Why this exists: a turn runs on a worker thread that sits blocked in ``recv`` while the model
generates, and cancelling only the *wait* would leave the server generating and the thread stuck
until the next byte or the timeout. So cancellation aborts the HTTP request itself: the HTTP
client's network backend (httpcore's interface) is wrapped so the sockets a request uses are known,
and the cancel token's hook shuts them down (``shutdown(SHUT_RDWR)`` wakes a thread blocked in
``recv``), which makes the blocked read return at once and tells the server to stop generating.
Connecting runs on a helper thread so that a slow DNS look-up or connect cannot hold the turn
either. If the HTTP stack ever lacks the hook points (a future ``openai``/``httpx``),
:func:`make_abortable` says so and the caller falls back to shutting down the response's socket
(found through the public ``network_stream`` extension) once the headers are in.

Usage: create an :class:`AbortScope` per request, make it current with ``with Activated(scope):``
around every blocking call into the HTTP client, and call ``scope.abort()`` from any thread.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "AbortScope",
    "AbortableBackend",
    "AbortableStream",
    "Activated",
    "RequestAborted",
    "make_abortable",
]


class RequestAborted(ConnectionAbortedError):
    """Raised inside the HTTP stack when the request's abort scope was triggered."""


_local = threading.local()


class AbortScope:
    """The network streams one model request touches, so the cancelling thread can cut them.

    The scope is made current (thread-locally) around every blocking call into the HTTP client; the
    wrapped network streams register themselves with it on each read and write. ``abort`` shuts the
    registered sockets down, which makes a read blocked in another thread return immediately.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[AbortableStream] = []
        self._wakers: list[threading.Event] = []
        self.aborted = False
        self.deadline: float | None = None

    def enter(self, stream: AbortableStream, timeout: float | None) -> float | None:
        """Register ``stream``; returns the read timeout to use (capped by ``deadline``)."""
        with self._lock:
            if self.aborted:
                raise RequestAborted("the request was aborted")
            if stream not in self._streams:
                self._streams.append(stream)
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RequestAborted("drain deadline passed")
            timeout = left if timeout is None else min(timeout, left)
        return timeout

    def abort(self) -> None:
        with self._lock:
            if self.aborted:
                return
            self.aborted = True
            streams, self._streams = self._streams, []
            wakers, self._wakers = self._wakers, []
        for stream in streams:
            stream.abort()
        for waker in wakers:
            waker.set()

    def close(self) -> None:
        """The request is over: forget its streams (they may go back to the pool)."""
        with self._lock:
            self._streams = []
            self._wakers = []

    def connect(self, connect: Callable[[], Any]) -> Any:
        """Run a (blocking) connect on a helper thread; give up on it as soon as we are aborted."""
        done = threading.Event()
        box: list[tuple[bool, Any]] = []
        state = {"abandoned": False}
        with self._lock:
            if self.aborted:
                raise RequestAborted("the request was aborted")
            self._wakers.append(done)

        def run() -> None:
            try:
                stream = connect()
            except BaseException as exc:
                with self._lock:
                    box.append((False, exc))
            else:
                with self._lock:
                    abandoned = state["abandoned"]
                    if not abandoned:
                        box.append((True, stream))
                if abandoned:
                    _close_quietly(stream)
            finally:
                done.set()

        threading.Thread(target=run, name="openai-connect", daemon=True).start()
        done.wait()
        with self._lock:
            if not box:
                state["abandoned"] = True
                raise RequestAborted("the request was aborted while connecting")
            ok, value = box[0]
        if not ok:
            raise value
        return value


class Activated:
    """``with Activated(scope):`` makes ``scope`` current for this thread (cheap, re-entrant)."""

    __slots__ = ("_previous", "_scope")

    def __init__(self, scope: AbortScope | None) -> None:
        self._scope = scope

    def __enter__(self) -> None:
        self._previous = getattr(_local, "scope", None)
        _local.scope = self._scope

    def __exit__(self, *exc: object) -> None:
        _local.scope = self._previous


def _close_quietly(stream: Any) -> None:
    with contextlib.suppress(Exception):
        stream.close()


class AbortableStream:
    """A network stream (httpcore's interface) that registers with the current abort scope."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _scope_timeout(self, timeout: float | None) -> float | None:
        scope: AbortScope | None = getattr(_local, "scope", None)
        return timeout if scope is None else scope.enter(self, timeout)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._scope_timeout(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._scope_timeout(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> Any:
        timeout = self._scope_timeout(timeout)
        return AbortableStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)

    def abort(self) -> None:
        try:
            sock = self._inner.get_extra_info("socket")
        except Exception:
            sock = None
        if isinstance(sock, socket.socket):
            # the plain socket method: on an SSLSocket it leaves the TLS object alone
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


class AbortableBackend:
    """Wraps httpcore's network backend: streams become abortable, connects become abandonable."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _connect(self, connect: Callable[[], Any]) -> AbortableStream:
        scope: AbortScope | None = getattr(_local, "scope", None)
        return AbortableStream(connect() if scope is None else scope.connect(connect))

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> AbortableStream:
        return self._connect(
            lambda: self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        )

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        return self._connect(
            lambda: self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def make_abortable(http_client: Any) -> bool:
    """Wrap the network backend of every connection pool of ``http_client``; True if all were."""
    transports = [getattr(http_client, "_transport", None)]
    transports.extend((getattr(http_client, "_mounts", None) or {}).values())
    found = False
    for transport in transports:
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None or not hasattr(backend, "connect_tcp"):
            return False
        if not isinstance(backend, AbortableBackend):
            pool._network_backend = AbortableBackend(backend)  # type: ignore[union-attr]
        found = True
    return found
