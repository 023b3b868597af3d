"""A scriptable OpenAI-compatible chat-completions server for tests and the latency benchmark.

It listens on a real socket (127.0.0.1, port 0) in a background thread and speaks real HTTP/1.1
with real server-sent-event framing (``data: {...}\\n\\n`` … ``data: [DONE]``), so the client under
test goes through its whole network stack. Each request pops the next scripted :class:`Reply`
(or uses ``fallback`` when the script is empty); a reply can delay, stream text, reasoning and
tool-call fragments, report usage, fail with an HTTP error and a JSON body, hang, break the
connection, or send a malformed event.

The server records every request (decoded JSON body, headers, arrival time) and, per response, the
``time.monotonic()`` of its first SSE byte and of the client's disconnect if it went away early —
the same clock as the test process, so latencies can be measured across the wire.

Usage::

    with FakeOpenAI() as server:
        server.script(text_reply("Hello", " world"), error_reply(500))
        model = OpenAICompatModel(OpenAISettings(base_url=server.base_url, ...))
"""

from __future__ import annotations

import contextlib
import json
import platform
import select
import socket
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

# The OpenAI client's first request reads ``platform.platform()``, whose processor field runs
# ``uname -p`` — a process — once per interpreter. Asked here, while the tests that talk to this
# fake are collected, so none of them starts that process itself (otherwise whichever ran first in
# a test process would start it, and the quick run's process guard would fail that test).
platform.processor()

__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "Reply",
    "ResponseLog",
    "chunk",
    "error_reply",
    "reasoning_chunks",
    "text_chunks",
    "text_reply",
    "tool_call_chunks",
    "tool_reply",
    "usage_chunk",
]

Event = dict[str, Any] | str | bytes
"""One scripted SSE event: a dict (sent as JSON), a str (sent verbatim as the data line — use it
for malformed data) or bytes (written raw, framing included — use it for comments)."""


@dataclass
class Reply:
    """One scripted response.

    Timing: ``delay`` before the status line, ``first_byte_delay`` after the headers and before the
    first SSE byte, ``chunk_delay`` between events. ``hang_after=N`` stops after N events and holds
    the connection open until the client leaves or the server stops; ``break_after=N`` closes the
    connection abruptly after N events (no ``[DONE]``, no chunked terminator). ``framing="close"``
    sends a close-delimited body instead of chunked transfer encoding, so a break looks like a clean
    end of body and only the missing ``[DONE]`` tells.
    """

    status: int = 200
    events: Sequence[Event] = ()
    body: Any = None  # a JSON body instead of a stream (errors; a server that ignores ``stream``)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    first_byte_delay: float = 0.0
    chunk_delay: float = 0.0
    done: bool = True
    hang_after: int | None = None
    break_after: int | None = None
    framing: Literal["chunked", "close"] = "chunked"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float
    peer: tuple[str, int] = ("", 0)


@dataclass
class ResponseLog:
    """What happened to one response (times are ``time.monotonic()``)."""

    reply: Reply
    started_at: float
    first_byte_at: float | None = None
    disconnected_at: float | None = None
    finished_at: float | None = None
    events_sent: int = 0


# ---------------------------------------------------------------- event builders


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
) -> dict[str, Any]:
    """A ``chat.completion.chunk``; ``delta=None`` and no finish reason gives ``choices: []``."""
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [],
    }
    if delta is not None or finish_reason is not None:
        out["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]
    if usage is not None:
        out["usage"] = usage
    return out


def usage_chunk(prompt: int, completion: int, cost: Any = None) -> dict[str, Any]:
    """The final usage-only chunk of ``stream_options.include_usage``; ``cost`` (any JSON value) as
    servers that price the call report it (``usage.cost``, US dollars)."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cost is not None:
        usage["cost"] = cost
    return chunk(usage=usage)


def text_chunks(pieces: Iterable[str], *, role_first: bool = True) -> list[dict[str, Any]]:
    out = []
    for i, piece in enumerate(pieces):
        delta: dict[str, Any] = {"content": piece}
        if i == 0 and role_first:
            delta["role"] = "assistant"
        out.append(chunk(delta))
    return out


def reasoning_chunks(pieces: Iterable[str], *, field_name: str = "reasoning_content") -> list[dict[str, Any]]:
    """Reasoning deltas: ``reasoning_content`` (vLLM, DeepSeek, llama.cpp) or ``reasoning`` (Ollama …)."""
    return [chunk({field_name: piece}) for piece in pieces]


def tool_call_chunks(
    calls: Sequence[tuple[str, str, str]], *, piece: int = 4, interleave: bool = True
) -> list[dict[str, Any]]:
    """Stream ``(id, name, arguments_json)`` calls as OpenAI does: a head fragment with id and name,
    then the arguments in ``piece``-character slices (cut mid-token), keyed by ``index``.

    With ``interleave`` the fragments of the calls alternate (call 0, call 1, call 0 …), which some
    servers do and which a naive "append to the last call" assembler gets wrong.
    """
    per_call: list[list[dict[str, Any]]] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        frags = [
            {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        ]
        for start in range(0, len(arguments), piece):
            frags.append({"index": index, "function": {"arguments": arguments[start : start + piece]}})
        per_call.append(frags)
    ordered: list[dict[str, Any]] = []
    if interleave:
        for step in range(max((len(f) for f in per_call), default=0)):
            ordered.extend(frags[step] for frags in per_call if step < len(frags))
    else:
        for frags in per_call:
            ordered.extend(frags)
    events = [chunk({"tool_calls": [frag]}) for frag in ordered]
    if events:
        events[0]["choices"][0]["delta"]["role"] = "assistant"
    return events


def text_reply(
    *pieces: str,
    reasoning: Sequence[str] = (),
    reasoning_field: str = "reasoning_content",
    usage: tuple[int, int] | tuple[int, int, Any] | None = None,
    finish: bool = True,
    **timing: Any,
) -> Reply:
    """Reasoning (optional), then the answer in ``pieces``, a ``stop`` finish, usage (optional)."""
    events: list[Event] = [*reasoning_chunks(reasoning, field_name=reasoning_field)]
    events.extend(text_chunks(pieces, role_first=not reasoning))
    if finish:
        events.append(chunk(finish_reason="stop"))
    if usage is not None:
        events.append(usage_chunk(*usage))
    return Reply(events=events, **timing)


def tool_reply(
    calls: Sequence[tuple[str, str, dict[str, Any] | str]],
    *,
    text: Sequence[str] = (),
    piece: int = 4,
    interleave: bool = True,
    usage: tuple[int, int] | tuple[int, int, Any] | None = None,
    **timing: Any,
) -> Reply:
    """Optional text, then ``calls`` ``(id, name, arguments)`` streamed in fragments, then the finish."""
    encoded = [(cid, name, args if isinstance(args, str) else json.dumps(args)) for cid, name, args in calls]
    events: list[Event] = [*text_chunks(text)]
    events.extend(tool_call_chunks(encoded, piece=piece, interleave=interleave))
    events.append(chunk(finish_reason="tool_calls"))
    if usage is not None:
        events.append(usage_chunk(*usage))
    return Reply(events=events, **timing)


def error_reply(
    status: int,
    message: str = "",
    *,
    code: str | None = None,
    error_type: str | None = None,
    retry_after: float | str | None = None,
    **timing: Any,
) -> Reply:
    """An HTTP error with an OpenAI-style JSON body ``{"error": {...}}``."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    body = {
        "error": {
            "message": message or f"fake error {status}",
            "type": error_type or "api_error",
            "code": code,
        }
    }
    return Reply(status=status, body=body, headers=headers, **timing)


# ---------------------------------------------------------------- the server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # without this, Nagle + delayed ACK can hold a small SSE event back for ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -------------------------------------------------------------- helpers

    def _client_gone(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return True

    def _wait(self, seconds: float | None, log: ResponseLog) -> bool:
        """Sleep ``seconds`` (None: until the server stops) unless the client disconnects first.

        Returns False (and records the time) if the client went away.
        """
        deadline = None if seconds is None else time.monotonic() + seconds
        fake = self.server.fake
        while not fake.stopping.is_set():
            left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
            if deadline is not None and left <= 0:
                return True
            readable, _, _ = select.select([self.connection], [], [], max(left, 0))
            if readable and self._client_gone():
                log.disconnected_at = time.monotonic()
                return False
        return deadline is not None and time.monotonic() >= deadline

    def _write(self, data: bytes, log: ResponseLog) -> bool:
        try:
            self.wfile.write(data)
            return True
        except OSError:
            log.disconnected_at = log.disconnected_at or time.monotonic()
            self.close_connection = True
            return False

    # -------------------------------------------------------------- requests

    def do_GET(self) -> None:
        fake = self.server.fake
        fake._record(
            RecordedRequest(
                "GET", self.path, dict(self.headers.items()), None, time.monotonic(), self.client_address[:2]
            )
        )
        if fake.models is None or not self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._json(404, {"detail": "Not Found"})
        elif fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            self._json(401, {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}})
        else:
            self._json(
                200, {"object": "list", "data": [{"id": name, "object": "model"} for name in fake.models]}
            )

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        fake._record(
            RecordedRequest(
                "POST", self.path, dict(self.headers.items()), body, time.monotonic(), self.client_address[:2]
            )
        )
        if self.path.split("?")[0].rstrip("/") != "/v1/chat/completions":
            self._json(404, {"detail": "Not Found"})
            return
        if fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            self._json(401, {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}})
            return
        reply = fake._next_reply()
        log = ResponseLog(reply, time.monotonic())
        fake._log_response(log)
        try:
            self._serve(reply, log)
        finally:
            log.finished_at = time.monotonic()

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, reply: Reply, log: ResponseLog) -> None:
        if reply.delay and not self._wait(reply.delay, log):
            self.close_connection = True
            return
        if reply.status != 200 or reply.body is not None:
            self._json(reply.status, reply.body if reply.body is not None else {}, reply.headers)
            return
        chunked = reply.framing == "chunked"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.flush()

        def frame(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data

        if reply.first_byte_delay and not self._wait(reply.first_byte_delay, log):
            self.close_connection = True
            return
        for i, event in enumerate(reply.events):
            if reply.hang_after is not None and i >= reply.hang_after:
                self._wait(None, log)
                self.close_connection = True
                return
            if reply.break_after is not None and i >= reply.break_after:
                self._break()
                return
            if i and reply.chunk_delay and not self._wait(reply.chunk_delay, log):
                self.close_connection = True
                return
            if isinstance(event, bytes):
                data = event
            elif isinstance(event, str):
                data = f"data: {event}\n\n".encode()
            else:
                data = b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"
            if log.first_byte_at is None:
                log.first_byte_at = time.monotonic()
            if not self._write(frame(data), log):
                return
            log.events_sent += 1
        n = len(reply.events)
        if reply.hang_after is not None and n >= reply.hang_after:
            self._wait(None, log)
            self.close_connection = True
            return
        if reply.break_after is not None and n >= reply.break_after:
            self._break()
            return
        if reply.done:
            if log.first_byte_at is None:
                log.first_byte_at = time.monotonic()
            self._write(frame(b"data: [DONE]\n\n"), log)
        if chunked:
            self._write(b"0\r\n\r\n", log)

    def _break(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that goes away mid-request (cancellation, aborted stream) is a scripted case here
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class FakeOpenAI:
    """The scriptable server. Start it with ``with FakeOpenAI() as server`` (or ``start``/``stop``).

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>`` get a 401 (the
    model list included). ``models``: the names ``GET /v1/models`` lists.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        fallback: Reply | None = None,
        models: Sequence[str] | None = ("test-model",),
    ) -> None:
        self.api_key = api_key
        #: what ``GET /v1/models`` lists (None: the server has no model list, a 404)
        self.models = list(models) if models is not None else None
        self.fallback = fallback or text_reply("(no scripted reply)")
        self.requests: list[RecordedRequest] = []
        self.responses: list[ResponseLog] = []
        self.stopping = threading.Event()
        self._script: list[Reply] = []
        self._cond = threading.Condition()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> FakeOpenAI:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -------------------------------------------------------------- scripting

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order (appends to what is still queued)."""
        with self._cond:
            self._script.extend(replies)

    def reset(self) -> None:
        with self._cond:
            self._script.clear()
            self.requests.clear()
            self.responses.clear()

    def _next_reply(self) -> Reply:
        with self._cond:
            return self._script.pop(0) if self._script else self.fallback

    def _record(self, request: RecordedRequest) -> None:
        with self._cond:
            self.requests.append(request)
            self._cond.notify_all()

    def _log_response(self, log: ResponseLog) -> None:
        with self._cond:
            self.responses.append(log)

    # -------------------------------------------------------------- observing

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests have arrived (True) or ``timeout`` passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.requests) >= count, timeout)

    def wait_for_disconnect(self, index: int = -1, timeout: float = 5.0) -> float | None:
        """The monotonic time response ``index`` saw its client disconnect, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if self.responses and (at := self.responses[index].disconnected_at) is not None:
                    return at
            time.sleep(0.005)
        return None

    @property
    def chat_bodies(self) -> list[Any]:
        return [r.body for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]
