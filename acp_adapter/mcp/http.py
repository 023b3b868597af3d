"""HTTP for MCP servers (streamable HTTP and SSE) with the one size limit applied while bytes arrive.

Why here and not in the ``mcp`` SDK: its streamable-HTTP client reads a JSON answer with
``response.aread()`` — all of it, however large — and its SSE clients bound an event at 1 MiB
whatever the agent's limit. So the agent gives the SDK an ``httpx2`` client whose every response
body passes through a counting stream (installed by a response hook, which keeps the client's
proxies and timeouts): a plain body may hold at most ``limit`` bytes, an event stream at most
``limit`` bytes per event. Past that the stream raises :class:`ResponseTooLarge` — an error the
SDK already turns into a failed request — and the server's :class:`SizeGuard` counts it, so the
call can say why it failed. Compressed bodies are counted after decompression (a small gzip body
must not inflate past the limit); encodings other than gzip and deflate are refused.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from acp_adapter.errors import AcpProgressError
from acp_adapter.mcp.limits import SizeGuard, too_large_text

#: What the SDK's own event parser may hold on top of the agent's limit: the agent's count trips
#: first, so an oversized event is always reported as such.
SDK_EVENT_SLACK = 64 << 10
#: A blank line ends a server-sent event (LF LF, CR CR, CRLF CRLF).
_EVENT_END = re.compile(rb"\n\n|\r\r|\n\r\n")
_PIECE = 64 << 10


class ResponseTooLarge(AcpProgressError, httpx2.SSEError, httpx2.StreamError):
    """A response (or one event of it) passed the size limit.

    Both an ``SSEError`` and a ``StreamError``: those are what the SDK catches around an event
    stream and around a JSON body, turning them into an error answer for the one request."""

    def __init__(self, limit: int) -> None:
        Exception.__init__(self, too_large_text(limit))
        self._request = None
        self.limit = limit


class UnsupportedEncoding(AcpProgressError, httpx2.StreamError):
    """The server compressed its answer with an encoding the agent does not decode bounded."""

    def __init__(self, encoding: str) -> None:
        Exception.__init__(self, f"the server's answer uses the content encoding {encoding[:40]!r}")


Decoder = Callable[[bytes], Iterator[bytes]]


def _decoder(encoding: str) -> Decoder | None:
    """A bounded decompressor for ``encoding``: it yields pieces of at most 64 KiB, one at a time,
    so a compression bomb is counted piece by piece and never inflated whole."""
    if encoding == "gzip":
        state = zlib.decompressobj(zlib.MAX_WBITS | 16)
    elif encoding == "deflate":
        state = zlib.decompressobj()
    else:
        return None

    def decode(data: bytes) -> Iterator[bytes]:
        piece = state.decompress(data, _PIECE)
        yield piece
        # more is pending while input is left or the last piece came out full
        while state.unconsumed_tail or len(piece) == _PIECE:
            left = state.unconsumed_tail
            piece = state.decompress(left, _PIECE)
            if not piece and state.unconsumed_tail == left:
                break  # no progress: nothing more to give
            yield piece

    return decode


def _refuse(encoding: str) -> Decoder:
    """A "decoder" that fails the body when it is read (raising in the hook instead would end the
    whole connection, not the one request)."""

    def refuse(data: bytes) -> Iterator[bytes]:
        raise UnsupportedEncoding(encoding)

    return refuse


class BoundedStream(httpx2.AsyncByteStream):
    """A response body cut off past ``guard.limit`` bytes (per event for an event stream)."""

    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        guard: SizeGuard,
        *,
        events: bool,
        decode: Decoder | None = None,
    ) -> None:
        self._inner = inner
        self._guard = guard
        self._events = events
        self._decode = decode

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        tail = b""
        async for chunk in self._inner:
            for piece in self._decode(chunk) if self._decode is not None else (chunk,):
                if not piece:
                    continue
                if self._events:
                    window = tail + piece
                    last = None
                    for last in _EVENT_END.finditer(window):  # noqa: B007 - the last match counts
                        pass
                    size = len(window) - last.end() if last is not None else size + len(piece)
                    tail = window[-2:]
                else:
                    size += len(piece)
                if size > self._guard.limit:
                    self._guard.trip()
                    raise ResponseTooLarge(self._guard.limit)
                yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounding_hook(guard: SizeGuard) -> Callable[[httpx2.Response], Any]:
    """The response hook that puts every body of a client behind :class:`BoundedStream`."""

    async def hook(response: httpx2.Response) -> None:
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):
            return
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        decode = None
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding and encoding != "identity":
            decode = _decoder(encoding) or _refuse(encoding)
            del response.headers["content-encoding"]  # decoded here, bounded, not by httpx2
        response.stream = BoundedStream(
            stream, guard, events=content_type == "text/event-stream", decode=decode
        )

    return hook


def bounded_http_client(
    guard: SizeGuard,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The SDK's client configuration (its timeouts, redirects off) with every body bounded.

    The signature is the SDK's ``McpHttpClientFactory`` once ``guard`` is bound."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        auth=auth,
        event_hooks={"response": [bounding_hook(guard)]},
    )
