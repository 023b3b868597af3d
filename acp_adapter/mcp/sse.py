"""The ``mcp`` SDK's SSE client transport (the older HTTP transport: one event stream from the
server, one POST per message to the endpoint it names), with the agent's size limit.

Why not ``mcp.client.sse.sse_client`` itself: it bounds an event at a fixed 1 MiB (a legitimate
answer of 2 MiB fails, whatever the agent's limit says), and a message POST that fails ends its
writer for good, so every later call hangs. This is the SDK's transport step for step — the same
origin checks for redirects and for the endpoint, the SDK's message models, its HTTP helpers —
except that events are bounded by the agent's one limit (an oversized event ends the connection,
as an overlong stdio line does: the call in flight fails and says why) and a POST that fails fails
its own request only. Nothing here writes MCP JSON by hand.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from urllib.parse import urljoin, urlparse

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared._httpx_utils import request_within_origin, sse_within_origin
from mcp.shared.message import SessionMessage

from acp_adapter.errors import AcpProgressError
from acp_adapter.mcp.http import SDK_EVENT_SLACK, ResponseTooLarge, bounded_http_client
from acp_adapter.mcp.limits import SizeGuard

log = logging.getLogger("acp_progress.mcp")


class EndpointRefused(AcpProgressError, RuntimeError):
    """The server named a message endpoint on another origin (its messages would go elsewhere)."""


def _same_origin(a: str, b: str) -> bool:
    first, second = urlparse(a), urlparse(b)
    return (first.scheme, first.netloc) == (second.scheme, second.netloc)


@asynccontextmanager
async def bounded_sse_client(
    url: str, headers: dict[str, str], guard: SizeGuard
) -> AsyncGenerator[TransportStreams, None]:
    """Like ``mcp.client.sse.sse_client(url, headers)``, with events bounded by ``guard``."""
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    async with (
        bounded_http_client(guard, headers=headers) as client,
        sse_within_origin(client, url, max_event_size=guard.limit + SDK_EVENT_SLACK) as events,
    ):
        events.response.raise_for_status()
        channel = _SseChannel(url, client, read_writer)
        async with read_writer, read_stream, write_stream, write_reader, anyio.create_task_group() as tg:
            endpoint = await tg.start(channel.read_events, events)
            tg.start_soon(channel.write_messages, endpoint, write_reader)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()


class _SseChannel:
    """Both directions of one SSE connection: the server's events to the session, the session's
    messages POSTed to the endpoint the server named. Why an object: both directions hand messages
    to the session's read stream (a POST that fails answers its own request there)."""

    def __init__(
        self,
        url: str,
        client: httpx2.AsyncClient,
        read_writer: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        self._url = url
        self._client = client
        self._read_writer = read_writer

    async def read_events(
        self, events: httpx2.EventSource, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The server's events: the first names the message endpoint (on the server's own origin,
        or the connection is refused), each ``message`` after it goes to the session."""
        try:
            async with self._read_writer:
                async for sse in events:
                    if sse.event == "endpoint":
                        endpoint = urljoin(self._url, sse.data)
                        if not _same_origin(self._url, endpoint):
                            raise EndpointRefused("the server named a message endpoint on another origin")
                        task_status.started(endpoint)
                    elif sse.event == "message" and sse.data:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(sse.data, by_name=False)
                        except ValueError as exc:
                            await self._read_writer.send(exc)  # the session logs it and goes on
                            continue
                        await self._read_writer.send(SessionMessage(message))
        except ResponseTooLarge:
            pass  # counted by the guard; the connection ends, the call in flight says why
        except (httpx2.HTTPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.warning("an MCP server's event stream ended: %s", type(exc).__name__)

    async def write_messages(
        self, endpoint: str, write_reader: MemoryObjectReceiveStream[SessionMessage]
    ) -> None:
        async with write_reader:
            async for session_message in write_reader:
                await self._send(endpoint, session_message)

    async def _send(self, endpoint: str, session_message: SessionMessage) -> None:
        """POST one message; a request whose POST fails is answered with an error, so its call
        fails and the writer goes on."""
        message = session_message.message
        try:
            response = await request_within_origin(
                self._client,
                "POST",
                endpoint,
                json=message.model_dump(by_alias=True, mode="json", exclude_unset=True),
            )
            response.raise_for_status()
        except (httpx2.HTTPError, httpx2.StreamError) as exc:
            log.warning("sending a message to an MCP server failed: %s", type(exc).__name__)
            if isinstance(message, types.JSONRPCRequest):  # this request fails, not the writer
                error = types.ErrorData(
                    code=types.INTERNAL_ERROR, message=f"sending the request failed: {exc}"
                )
                reply = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
                with (
                    anyio.move_on_after(5),
                    contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError),
                ):
                    await self._read_writer.send(SessionMessage(reply))
