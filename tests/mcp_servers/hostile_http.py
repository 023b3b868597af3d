"""A hostile MCP server over HTTP: it speaks enough MCP to be connected, then answers a call to
``huge`` with as many megabytes as asked, produced lazily (the server never holds them).

Run ``python -m tests.mcp_servers.hostile_http MODE PORT`` where MODE is

* ``json``   — streamable HTTP, every answer a plain ``application/json`` body;
* ``events`` — streamable HTTP, every answer an event stream with one event;
* ``gzip``   — streamable HTTP, the JSON body gzip-compressed (a compression bomb: a few
  hundred kilobytes on the wire);
* ``sse``    — the older SSE transport: ``GET /sse`` is the event stream that carries every
  answer, ``POST /messages`` takes the requests.

Tools: ``huge {"mb": N}`` (a text result of N MiB) and ``small`` (``"ok"``), so a test can see
the server still answers after a cut-off. The JSON around the huge text comes from the SDK's
models; only the text itself is streamed. Written with asyncio streams on purpose: a real
framework would buffer the answer, and the attack is an answer that is never held whole.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import zlib
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types

MARK = "\x00HUGE\x00"
CHUNK = b"x" * (1 << 20)


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)  # type: ignore[no-any-return]


def _answer(request_id: Any, result: Any) -> bytes:
    reply = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=_dump(result))
    return reply.model_dump_json(by_alias=True, exclude_none=True).encode()


def _result_for(request: dict[str, Any]) -> Any:
    method = request.get("method")
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", types.LATEST_PROTOCOL_VERSION)
        return types.InitializeResult(
            protocol_version=version,
            capabilities=types.ServerCapabilities(tools=types.ToolsCapability()),
            server_info=types.Implementation(name="hostile", version="1"),
        )
    if method == "tools/list":
        schema = {"type": "object", "properties": {"mb": {"type": "number"}}}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="huge", description="An answer of mb MiB.", input_schema=schema),
                types.Tool(name="small", description="A small answer.", input_schema={"type": "object"}),
            ]
        )
    if method == "tools/call":
        name = request.get("params", {}).get("name")
        text = MARK if name == "huge" else "ok"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    return types.EmptyResult()


async def _body(request: dict[str, Any]) -> AsyncIterator[bytes]:
    """The answer to ``request``, a megabyte at a time for ``huge``."""
    whole = _answer(request.get("id"), _result_for(request))
    mark = json.dumps(MARK)[1:-1].encode()
    if mark not in whole:
        yield whole
        return
    head, tail = whole.split(mark, 1)
    yield head
    megabytes = float(request.get("params", {}).get("arguments", {}).get("mb", 1))
    whole_mb, rest = divmod(int(megabytes * (1 << 20)), 1 << 20)
    for _ in range(whole_mb):
        yield CHUNK
        await asyncio.sleep(0)
    yield CHUNK[:rest]
    yield tail


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {
        k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return method, path, headers, body


def _head(status: str, content_type: str | None, extra: str = "") -> bytes:
    kind = f"Content-Type: {content_type}\r\n" if content_type else "Content-Length: 0\r\n"
    return f"HTTP/1.1 {status}\r\n{kind}{extra}Connection: close\r\n\r\n".encode()


class Hostile:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        #: the SSE transport's sessions: one event stream each, its answers queued here
        self.sessions: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self.numbers = itertools.count(1)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path, _headers, body = await _read_request(reader)
            if self.mode == "sse":
                await self._legacy(method, path, body, writer)
            else:
                await self._streamable(method, body, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _streamable(self, method: str, body: bytes, writer: asyncio.StreamWriter) -> None:
        if method != "POST":
            writer.write(_head("405 Method Not Allowed", None))
            return
        request = json.loads(body)
        if "id" not in request:  # a notification
            writer.write(_head("202 Accepted", None))
            return
        if self.mode == "events":
            writer.write(_head("200 OK", "text/event-stream"))
            writer.write(b"event: message\ndata: ")
            async for piece in _body(request):
                writer.write(piece)
                await writer.drain()
            writer.write(b"\n\n")
        elif self.mode == "gzip":
            writer.write(_head("200 OK", "application/json", "Content-Encoding: gzip\r\n"))
            packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
            async for piece in _body(request):
                writer.write(packer.compress(piece))
                await writer.drain()
            writer.write(packer.flush())
        else:
            writer.write(_head("200 OK", "application/json"))
            async for piece in _body(request):
                writer.write(piece)
                await writer.drain()
        await writer.drain()

    async def _legacy(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter) -> None:
        if method == "GET" and path.startswith("/sse"):
            session = str(next(self.numbers))
            queue = self.sessions[session] = asyncio.Queue()
            writer.write(_head("200 OK", "text/event-stream"))
            writer.write(f"event: endpoint\ndata: /messages?session_id={session}\n\n".encode())
            await writer.drain()
            try:
                while True:
                    request = await queue.get()
                    writer.write(b"event: message\ndata: ")
                    async for piece in _body(request):
                        writer.write(piece)
                        await writer.drain()
                    writer.write(b"\n\n")
                    await writer.drain()
            finally:
                del self.sessions[session]
        elif method == "POST":
            request = json.loads(body)
            queue = self.sessions.get(path.rpartition("session_id=")[2])
            writer.write(_head("202 Accepted" if queue else "404 Not Found", None))
            await writer.drain()
            if queue is not None and "id" in request:
                await queue.put(request)
        else:
            writer.write(_head("404 Not Found", None))


async def main(mode: str, port: int) -> None:
    hostile = Hostile(mode)
    server = await asyncio.start_server(hostile.serve, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
