"""``$/cancel_request``: either side calls off one of its JSON-RPC requests by id.

ACP's request cancellation (a notification whose params are the SDK's
:class:`~acp.schema.CancelRequestNotification`). The receiver must end the request's work and answer
it — with a valid result (a prompt answers ``stopReason: cancelled``, as after ``session/cancel``) or
with the error :data:`REQUEST_CANCELLED` (``-32800``, "Request cancelled").

The SDK's connection hands its method handler a method and params but never the request's id, and
runs each request in a task of its own. So, once for every method, at the edges of the SDK's
connection:

- agent side: :class:`IncomingRequestIds` wraps the transport and notes each incoming request's id in
  a context variable as it hands the message over; the task the connection then starts for that
  request inherits it. :class:`CancellableRequests` wraps the method handler: every request runs
  under a cancel scope registered under its id; ``$/cancel_request`` cancels that scope (the request
  answers :data:`REQUEST_CANCELLED`), or, for a method with a gentler stop of its own (a prompt),
  uses that.
- client side: :class:`OutgoingRequestIds` wraps the transport and notes which task sent which
  request; :func:`send_cancel_request` tells the agent a request is given up.

Ids are bounded like everything else from the peer: a ``$/cancel_request`` for an id that is not
running (finished, never sent, malformed) is ignored, as the protocol asks.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from acp import RequestError
from acp.schema import CancelRequestNotification

__all__ = [
    "CANCEL_REQUEST_METHOD",
    "REQUEST_CANCELLED",
    "CancellableRequests",
    "IncomingRequestIds",
    "OutgoingRequestIds",
    "call_off_if_given_up",
    "request_cancelled",
    "send_cancel_request",
]

log = logging.getLogger("acp_progress.protocol")

#: the notification's method name (both directions)
CANCEL_REQUEST_METHOD = "$/cancel_request"
#: the JSON-RPC error code of a request answered because it was cancelled
REQUEST_CANCELLED = -32800

#: how many given-up requests a client remembers the answer of
MAX_GIVEN_UP = 64

RequestId = int | str
#: a method's own way to stop a request (``params`` in, True when it took the cancel)
GentleStop = Callable[[Any], bool]

_INCOMING: contextvars.ContextVar[RequestId | None] = contextvars.ContextVar(
    "acp_progress_incoming_request", default=None
)


def request_cancelled(request_id: RequestId) -> RequestError:
    """The answer of a request that was cancelled before it had one."""
    return RequestError(REQUEST_CANCELLED, "Request cancelled", {"requestId": request_id})


def _request_id(message: Mapping[str, Any]) -> RequestId | None:
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


class IncomingRequestIds:
    """A transport that notes each incoming request's id for the task that will answer it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        # what goes out is the inner transport's business alone: its own methods, with no hop of
        # ours in front of every update the agent sends
        self.send: Callable[[dict[str, Any]], Awaitable[None]] = inner.send
        self.close: Callable[[], Awaitable[None]] = inner.close

    async def receive(self) -> dict[str, Any] | None:
        message: dict[str, Any] | None = await self.inner.receive()
        # set in the receiving task's context; the connection starts the request's task right
        # after this returns, and a new task copies the context it was started from
        _INCOMING.set(_request_id(message) if message is not None and "method" in message else None)
        return message


@dataclass
class _Running:
    scope: anyio.CancelScope
    method: str
    params: Any
    cancelled: bool = False


class CancellableRequests:
    """The agent's method handler with ``$/cancel_request`` (see the module's docstring).

    ``gentle`` maps a method to its own stop: ``session/prompt`` is ended by cancelling its turn,
    so it still closes every card and answers ``stopReason: cancelled``. Every other request is
    interrupted where it waits (a store read, a writer's flush, a replay) and answers
    :data:`REQUEST_CANCELLED`."""

    def __init__(self, handler: Any, gentle: Mapping[str, GentleStop] | None = None) -> None:
        self.handler = handler
        self.gentle = dict(gentle or {})
        self._running: dict[RequestId, _Running] = {}
        #: makes a request's cancel scope: ``anyio.CancelScope`` looks the running backend up on
        #: every call, so after the first request the backend's own scope class is called directly
        #: (every prompt pays for it before its spinner goes out)
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope

    @property
    def running(self) -> int:
        """How many requests are being answered (for tests and logs)."""
        return len(self._running)

    async def __call__(self, method: str, params: Any, is_notification: bool) -> Any:
        if is_notification and method == CANCEL_REQUEST_METHOD:
            self.cancel(params)
            return None
        request_id = None if is_notification else _INCOMING.get()
        if request_id is None or request_id in self._running:
            return await self.handler(method, params, is_notification)
        scope = self._new_scope()
        self._new_scope = type(scope)
        running = _Running(scope, method, params)
        self._running[request_id] = running
        try:
            with running.scope:
                return await self.handler(method, params, is_notification)
        finally:
            del self._running[request_id]
        raise request_cancelled(request_id)  # the scope was cancelled: the request's only answer

    def cancel(self, params: Any) -> bool:
        """Call off the running request ``params`` names; True when there was one."""
        try:
            request_id = CancelRequestNotification.model_validate(params).request_id
        except ValueError:
            log.warning("ignored a $/cancel_request whose params are not a request id")
            return False
        running = self._running.get(request_id) if request_id is not None else None
        if running is None or running.cancelled:
            return False
        running.cancelled = True
        stop = self.gentle.get(running.method)
        if stop is not None:
            try:
                if stop(running.params):
                    log.info("request %r (%s) cancelled by the client", request_id, running.method)
                    return True
            except Exception:  # the gentle way failed: the hard one still ends the request
                log.exception("stopping request %r the method's own way failed", request_id)
        running.scope.cancel()
        log.info("request %r (%s) cancelled by the client", request_id, running.method)
        return True


class OutgoingRequestIds:
    """A transport that notes, for each task, the id of the last request it sent: the SDK's
    connection numbers requests itself and sends them from the caller's task."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._by_task: weakref.WeakKeyDictionary[asyncio.Task[Any], RequestId] = weakref.WeakKeyDictionary()
        #: requests given up and called off, with how the peer answered them once it did: the
        #: error code (:data:`REQUEST_CANCELLED` …) or ``"result"``; the newest
        #: :data:`MAX_GIVEN_UP` only
        self.given_up: collections.OrderedDict[RequestId, int | str | None] = collections.OrderedDict()

    async def send(self, message: dict[str, Any]) -> None:
        request_id = _request_id(message) if "method" in message else None
        task = asyncio.current_task()
        if request_id is not None and task is not None:
            self._by_task[task] = request_id
        await self.inner.send(message)

    def sent_by(self, task: asyncio.Task[Any]) -> RequestId | None:
        """The id of the last request ``task`` sent, if any."""
        return self._by_task.get(task)

    def sent_by_current_task(self) -> RequestId | None:
        """The id of the last request the running task sent, if any."""
        task = asyncio.current_task()
        return self._by_task.get(task) if task is not None else None

    def forget_current_task(self) -> None:
        """Before a new request: an earlier one's id is never mistaken for it."""
        task = asyncio.current_task()
        if task is not None:
            self._by_task.pop(task, None)

    def note_given_up(self, request_id: RequestId) -> None:
        self.given_up[request_id] = None
        while len(self.given_up) > MAX_GIVEN_UP:
            self.given_up.popitem(last=False)

    async def receive(self) -> dict[str, Any] | None:
        message: dict[str, Any] | None = await self.inner.receive()
        if message is not None and "method" not in message and self.given_up:
            request_id = _request_id(message)
            if request_id is not None and request_id in self.given_up:
                error = message.get("error")
                code = error.get("code") if isinstance(error, dict) else None
                answer = code if isinstance(code, int) else "result"
                self.given_up[request_id] = answer
                log.info("the agent answered the request %r given up: %s", request_id, answer)
        return message

    async def close(self) -> None:
        await self.inner.close()


async def call_off_if_given_up(connection: Any, requests: OutgoingRequestIds | None, request: Any) -> Any:
    """Await ``request`` (a call of the SDK connection made in this task); should the caller give
    up on it (this task is cancelled: Ctrl-C, a timeout, a closed page), the agent is told with
    ``$/cancel_request`` so its work stops too, instead of running on for nobody."""
    if requests is not None:
        requests.forget_current_task()
    try:
        return await request
    except asyncio.CancelledError:
        sent = requests.sent_by_current_task() if requests is not None else None
        if sent is not None:
            requests.note_given_up(sent)  # type: ignore[union-attr]
            await send_cancel_request(connection, sent)
        raise


async def send_cancel_request(connection: Any, request_id: RequestId, within: float = 1.0) -> bool:
    """Tell the peer that request ``request_id`` is given up (best effort, bounded by ``within``
    seconds, shielded so the caller's own cancellation does not stop it); False when it could not
    be sent. ``connection`` is the SDK's client- or agent-side connection."""
    sdk_connection = getattr(connection, "_conn", connection)
    send = getattr(sdk_connection, "send_notification", None)
    if send is None:
        return False
    params = CancelRequestNotification(request_id=request_id).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    with anyio.CancelScope(shield=True), anyio.move_on_after(within):
        try:
            await send(CANCEL_REQUEST_METHOD, params)
        except Exception as exc:  # the connection is gone: nothing is waiting for the answer
            log.debug("could not send $/cancel_request for %r: %s", request_id, exc)
            return False
        return True
    return False
