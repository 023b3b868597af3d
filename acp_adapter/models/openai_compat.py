"""The OpenAI-compatible back-end: streaming chat completions with tool calling.

Selected with ``ACP_PROGRESS_MODEL=openai`` and configured by ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` (may be empty for local servers), ``ACP_PROGRESS_OPENAI_MODEL``,
``ACP_PROGRESS_OPENAI_TIMEOUT``, ``ACP_PROGRESS_OPENAI_MAX_RETRIES`` and
``ACP_PROGRESS_OPENAI_CONTEXT_WINDOW``. It works with OpenAI itself and with the servers that speak
its chat-completions dialect (vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, DeepSeek …). The
official ``openai`` package is an optional extra: its absence is a :class:`ConfigError` when the
model is built, and the import itself (about a second) runs on a background thread so the agent
answers ``initialize`` at once; a ``stream`` that starts before it finished waits, cancellably,
with the status ``Starting the OpenAI client``. The SDK builds and sends the request (auth, URL,
headers, HTTP errors); this module reads the raw SSE stream itself, so it knows whether ``[DONE]``
arrived and keeps the provider fields (``reasoning_content``) that typed chunks may not carry.
A server that ignores ``stream: true`` and answers with one JSON completion is understood too.

How the stream maps onto :mod:`.base` events (the contract with the agent loop):

* ``delta.content`` → :class:`TextDelta`; ``delta.reasoning_content`` (vLLM, DeepSeek, llama.cpp)
  or ``delta.reasoning`` (Ollama, OpenRouter) → :class:`ReasoningDelta`. Empty strings (the
  role-only first chunk many servers send) are not deltas.
* Tool calls are assembled by ``index`` across chunks (several calls per response, interleaved
  fragments, arguments cut anywhere) and yielded as complete :class:`ToolCallRequest` events when
  the choice finishes. Because the spinner must close on the *first streamed delta of any kind*,
  the first tool-call fragment of a response — when nothing else was yielded yet — produces an
  empty ``TextDelta("")``: the loop counts it as the first delta and the ACP layer drops empty
  message chunks, so the client sees the think card complete and nothing else.
* Arguments that are not a JSON object are not swallowed: the call is yielded with arguments
  ``{"_raw": "<the text>"}`` (:data:`RAW_ARGUMENTS_KEY`). The tool card then opens and fails with
  the toolbox's argument error, the model gets that error as the tool result and can retry, and the
  raw text stays visible in the card instead of vanishing into ``{}``. Empty arguments mean ``{}``.
* :class:`StatusNote` tells the heartbeat what is going on — ``Waiting for the first token``,
  ``Retrying in 2s (429)`` — and never counts as a delta. Usage (``stream_options.include_usage``)
  is yielded once, at the end of the stream, as a :class:`UsageReport` carrying the configured
  context window (servers that repeat cumulative usage on every chunk are not double counted).

Failures become :class:`ModelError` with a short reason that never contains the API key. The SDK's
own retries are disabled; this module retries connection errors, 408/409/429 and 5xx, and a
stream that drops before any content, up to ``max_retries`` times with exponential backoff
(``backoff_base`` × 2ⁿ, at most ``max_backoff`` seconds) or the server's ``Retry-After`` (at most
30 s). Nothing is retried once content has been yielded, and a timeout is not retried (the user
already waited the whole timeout). A stream is complete when it sent ``[DONE]`` or a finish reason;
one that ends before either is reported as ended unexpectedly.

Cancellation aborts the HTTP request itself, not just the wait: the HTTP client's network backend
is wrapped so the sockets a request uses are known, and the cancel token's hook shuts them down
(``shutdown(SHUT_RDWR)`` wakes a thread blocked in ``recv``), which makes the blocked read return at
once and tells the server to stop generating. Connecting runs on a helper thread so that a slow DNS
look-up or connect cannot hold the turn either. Backoff sleeps use ``cancel.wait``. If the HTTP
stack ever lacks the hook points (a future ``openai``/``httpx``), cancellation falls back to
shutting down the response's socket (found through the public ``network_stream`` extension) once
the headers are in, and checking the token between chunks; only a wait for the headers then lasts
until they come or the timeout.
"""

from __future__ import annotations

import contextlib
import email.utils
import importlib.util
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..cancel import CancelToken, TurnCancelled
from ..config import ConfigError, OpenAISettings
from .base import (
    Message,
    ModelError,
    ModelEvent,
    ReasoningDelta,
    StatusNote,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)

__all__ = ["INSTALL_HINT", "RAW_ARGUMENTS_KEY", "OpenAICompatModel", "RequestAborted"]

log = logging.getLogger("acp_progress.models.openai")

INSTALL_HINT = "pip install 'acp-progress[openai]'"
RAW_ARGUMENTS_KEY = "_raw"
"""Key under which unparseable tool-call arguments reach the toolbox (which rejects it clearly)."""

PLACEHOLDER_API_KEY = "not-needed"
MAX_RETRY_AFTER = 30.0
DRAIN_TIMEOUT = 0.1
_RETRYABLE_STATUS = frozenset({408, 409, 429})


class RequestAborted(ConnectionAbortedError):
    """Raised inside the HTTP stack when the request's abort scope was triggered."""


# ---------------------------------------------------------------- aborting an in-flight request

_local = threading.local()


class _AbortScope:
    """The network streams one model request touches, so the cancelling thread can cut them.

    The scope is made current (thread-locally) around every blocking call into the HTTP client; the
    wrapped network streams register themselves with it on each read and write. ``abort`` shuts the
    registered sockets down, which makes a read blocked in another thread return immediately.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[_AbortableStream] = []
        self._wakers: list[threading.Event] = []
        self.aborted = False
        self.deadline: float | None = None

    def enter(self, stream: _AbortableStream, timeout: float | None) -> float | None:
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


class _Activated:
    """``with _Activated(scope):`` makes ``scope`` current for this thread (cheap, re-entrant)."""

    __slots__ = ("_previous", "_scope")

    def __init__(self, scope: _AbortScope | None) -> None:
        self._scope = scope

    def __enter__(self) -> None:
        self._previous = getattr(_local, "scope", None)
        _local.scope = self._scope

    def __exit__(self, *exc: object) -> None:
        _local.scope = self._previous


def _close_quietly(stream: Any) -> None:
    with contextlib.suppress(Exception):
        stream.close()


class _AbortableStream:
    """A network stream (httpcore's interface) that registers with the current abort scope."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _scope_timeout(self, timeout: float | None) -> float | None:
        scope: _AbortScope | None = getattr(_local, "scope", None)
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
        return _AbortableStream(self._inner.start_tls(ssl_context, server_hostname, timeout))

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


class _AbortableBackend:
    """Wraps httpcore's network backend: streams become abortable, connects become abandonable."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def _connect(self, connect: Callable[[], Any]) -> _AbortableStream:
        scope: _AbortScope | None = getattr(_local, "scope", None)
        return _AbortableStream(connect() if scope is None else scope.connect(connect))

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> _AbortableStream:
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


def _make_abortable(http_client: Any) -> bool:
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
        if not isinstance(backend, _AbortableBackend):
            pool._network_backend = _AbortableBackend(backend)  # type: ignore[union-attr]
        found = True
    return found


# ---------------------------------------------------------------- stream assembly


@dataclass
class _PartialCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    replaced: str | None = None  # a server that sent arguments as an object, not a string


class _ToolCallAssembler:
    """Collects tool-call fragments by ``index`` (falling back to ``id`` when a server omits it)."""

    def __init__(self) -> None:
        self.calls: dict[int, _PartialCall] = {}
        self._last: int | None = None

    def __bool__(self) -> bool:
        return bool(self.calls)

    def add(self, fragments: Sequence[Any]) -> None:
        for fragment in fragments:
            if not isinstance(fragment, Mapping):
                continue
            index = fragment.get("index")
            frag_id = fragment.get("id") if isinstance(fragment.get("id"), str) else ""
            if not isinstance(index, int):
                known = next((c.index for c in self.calls.values() if frag_id and c.id == frag_id), None)
                if known is not None:
                    index = known
                elif frag_id or self._last is None:
                    index = max(self.calls, default=-1) + 1
                else:
                    index = self._last
            call = self.calls.setdefault(index, _PartialCall(index))
            self._last = index
            if frag_id and not call.id:
                call.id = frag_id
            function = fragment.get("function")
            if not isinstance(function, Mapping):
                continue
            name = function.get("name")
            if isinstance(name, str) and name and name != call.name:
                call.name = name if not call.name else call.name + name
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                call.arguments.append(arguments)
            elif isinstance(arguments, Mapping):
                call.replaced = json.dumps(arguments)

    def complete(self) -> list[ToolCall]:
        out = []
        for index in sorted(self.calls):
            call = self.calls[index]
            raw = call.replaced if call.replaced is not None else "".join(call.arguments)
            out.append(
                ToolCall(
                    id=call.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=call.name,
                    arguments=_parse_arguments(call.name, raw),
                )
            )
        self.calls.clear()
        return out


def _parse_arguments(name: str, raw: str) -> dict[str, Any]:
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    log.warning(
        "tool call %r: arguments are not a JSON object (%d characters); passing them as %r",
        name,
        len(text),
        RAW_ARGUMENTS_KEY,
    )
    return {RAW_ARGUMENTS_KEY: text}


@dataclass
class _StreamState:
    """Progress of one attempt, used to word errors and to decide whether a retry is allowed."""

    responded: bool = False  # HTTP headers arrived
    chunks: int = 0  # JSON events received
    started: bool = False  # a delta was yielded: no retry from here on
    done: bool = False  # [DONE] seen
    finish_reason: str | None = None
    usage: Mapping[str, Any] | None = None
    tools: _ToolCallAssembler = field(default_factory=_ToolCallAssembler)


# ---------------------------------------------------------------- helpers for errors


def _display_url(url: str) -> str:
    """``url`` without credentials or query (never show a key that someone put in the URL)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    except ValueError:
        return "the configured OPENAI_BASE_URL"


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.3g}s"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 20:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_timeout(exc: BaseException) -> bool:
    return any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in _chain(exc))


_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "ssl", "socket"})


def _is_transport_error(exc: BaseException, connection_error: type[BaseException]) -> bool:
    """Whether ``exc`` came from the network or the HTTP layer (not from a bug of ours)."""
    return any(
        isinstance(e, OSError | connection_error) or type(e).__module__.split(".")[0] in _TRANSPORT_MODULES
        for e in _chain(exc)
    )


def _connection_problem(exc: BaseException) -> str:
    import ssl

    for e in _chain(exc):
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "cannot resolve the host name"
        if isinstance(e, ssl.SSLCertVerificationError):
            return "TLS certificate verification failed"
        if isinstance(e, ssl.SSLError):
            return "TLS error"
        if isinstance(e, ConnectionResetError):
            return "connection reset"
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if "connection refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "cannot resolve the host name"
    if "unsupportedprotocol" in text or "missing an 'http://' or 'https://'" in text:
        return "unsupported URL"
    return "connection failed"


def _server_message(body: Any) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""
    return body if isinstance(body, str) else ""


def _error_code(body: Any) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        code = body.get("code")
        return code if isinstance(code, str) else ""
    return ""


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _retry_after(headers: Any) -> float | None:
    """Seconds asked for by ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), capped."""
    if headers is None:
        return None
    try:
        raw_ms = headers.get("retry-after-ms")
        if raw_ms is not None:
            return min(max(float(raw_ms) / 1000, 0.0), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _failure(
    head: str, *, detail: str = "", retryable: bool = False, status: int | None = None, **extra: Any
) -> ModelError:
    reason = f"{head}: {detail}" if detail else head
    return ModelError(
        reason, retryable=retryable, status=status, extra={"head": head, "detail": detail, **extra}
    )


# ---------------------------------------------------------------- the model


class OpenAICompatModel:
    """A :class:`~acp_adapter.models.base.ChatModel` over an OpenAI-compatible HTTP API.

    ``backoff_base``/``max_backoff`` set the retry schedule (tests use a few tens of milliseconds).
    One instance serves every session concurrently: all per-call state is local to ``stream``.
    """

    name = "openai"

    def __init__(
        self,
        settings: OpenAISettings,
        *,
        backoff_base: float = 1.0,
        max_backoff: float = 30.0,
    ) -> None:
        if importlib.util.find_spec("openai") is None:
            raise ConfigError(
                f"ACP_PROGRESS_MODEL=openai needs the 'openai' package, which is missing: {INSTALL_HINT}"
            )
        parts = urlsplit(settings.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(
                f"OPENAI_BASE_URL: expected an http:// or https:// URL such as http://localhost:11434/v1, "
                f"got {_display_url(settings.base_url)!r}"
            )
        self.settings = settings
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        self.context_window: int | None = getattr(settings, "context_window", None)
        self._key = settings.api_key.strip()
        self._display_url = _display_url(settings.base_url)
        self._openai: Any = None
        self._client: Any = None
        self._abortable = False
        self._init_error: str | None = None
        self._ready = threading.Event()
        # importing openai takes about a second: do it off the caller's thread, so the agent answers
        # ``initialize`` at once; the first ``stream`` waits for it (cancellably)
        threading.Thread(target=self._build_client, name="openai-client-init", daemon=True).start()

    def _build_client(self) -> None:
        try:
            import openai

            http_client = openai.DefaultHttpxClient(timeout=self.settings.timeout)
            self._abortable = _make_abortable(http_client)
            if not self._abortable:
                log.warning(
                    "cannot hook the HTTP client's sockets; cancelling will close the response instead"
                )
            self._client = openai.OpenAI(
                api_key=self._key or PLACEHOLDER_API_KEY,
                base_url=self.settings.base_url,
                max_retries=0,
                timeout=self.settings.timeout,
                http_client=http_client,
            )
            self._openai = openai
        except Exception as exc:
            self._init_error = self._scrub(f"{type(exc).__name__}: {_one_line(str(exc), 120)}")
            log.error("cannot set up the OpenAI client: %s", self._init_error)
        finally:
            self._ready.set()

    def _wait_ready(self, cancel: CancelToken) -> None:
        while not self._ready.wait(0.02):
            cancel.raise_if_cancelled()
        if self._init_error is not None:
            raise ModelError(f"Cannot set up the OpenAI client ({self._init_error}); try {INSTALL_HINT}")

    def close(self) -> None:
        self._ready.wait()
        if self._client is not None:
            self._client.close()

    # ------------------------------------------------------------ request building

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (public for tests and debugging)."""
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [_message_to_openai(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in tools
            ]
        return body

    # ------------------------------------------------------------ the stream

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]:
        cancel.raise_if_cancelled()
        if not self._ready.is_set():
            yield StatusNote("Starting the OpenAI client")
        self._wait_ready(cancel)
        body = self.request_body(messages, tools)
        attempts = self.settings.max_retries + 1
        attempt = 1
        while True:
            state = _StreamState()
            if attempt == 1:
                yield StatusNote("Waiting for the first token")
            else:
                yield StatusNote(f"Waiting for the first token (attempt {attempt} of {attempts})")
            try:
                yield from self._attempt(body, cancel, state)
                return
            except ModelError as exc:
                if not exc.retryable or state.started or attempt >= attempts:
                    raise self._final(exc, attempt) from exc.__cause__
                delay = exc.extra.get("retry_after")
                if delay is None:
                    delay = min(self.backoff_base * 2 ** (attempt - 1), self.max_backoff)
                label = exc.extra.get("label") or (str(exc.status) if exc.status else "error")
                log.info(
                    "model request failed (%s); retry %d of %d in %s",
                    exc.reason,
                    attempt,
                    attempts - 1,
                    _fmt_seconds(delay),
                )
                yield StatusNote(f"Retrying in {_fmt_seconds(delay)} ({label})")
                if cancel.wait(delay):
                    raise TurnCancelled(cancel.reason) from None
                attempt += 1

    def _final(self, exc: ModelError, attempt: int) -> ModelError:
        head = exc.extra.get("head", exc.reason)
        detail = exc.extra.get("detail", "")
        if attempt > 1:
            head = f"{head} after {attempt} attempts"
        reason = self._scrub(f"{head}: {detail}" if detail else head)
        log.warning("model request failed: %s", reason)
        return ModelError(reason, retryable=exc.retryable, status=exc.status, extra={"attempts": attempt})

    def _scrub(self, text: str) -> str:
        if self._key and len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return text

    def _attempt(
        self, body: dict[str, Any], cancel: CancelToken, state: _StreamState
    ) -> Iterator[ModelEvent]:
        scope = _AbortScope() if self._abortable else None
        holder: dict[str, Any] = {}

        def abort() -> None:
            if scope is not None:
                scope.abort()
            elif (response := holder.get("response")) is not None:
                # fallback (no hooked backend): reach the socket through the public
                # ``network_stream`` extension; closing alone would not wake a blocked read
                with contextlib.suppress(Exception):
                    _AbortableStream(response.http_response.extensions["network_stream"]).abort()
                with contextlib.suppress(Exception):
                    response.close()

        remove = cancel.on_cancel(abort)
        response = None
        try:
            try:
                with _Activated(scope):
                    manager = self._client.chat.completions.with_streaming_response.create(**body)
                    response = manager.__enter__()
            except Exception as exc:
                raise self._error(exc, cancel, state) from exc
            holder["response"] = response
            state.responded = True
            try:
                yield from self._consume(response, cancel, state, scope)
            except (TurnCancelled, ModelError):
                raise
            except Exception as exc:
                raise self._error(exc, cancel, state) from exc
        finally:
            remove()
            if response is not None:
                with contextlib.suppress(Exception):
                    response.close()
            if scope is not None:
                scope.close()

    def _consume(
        self, response: Any, cancel: CancelToken, state: _StreamState, scope: _AbortScope | None
    ) -> Iterator[ModelEvent]:
        activated = _Activated(scope)
        content_type = str(response.headers.get("content-type", "")).lower()
        if "json" in content_type and "event-stream" not in content_type:
            # a server (or a proxy) that ignored ``stream: true`` and sent one complete answer
            with activated:
                raw = response.read()
            yield from self._handle(_completion_as_chunk(raw), "", state)
            state.done = True
            yield from self._flush_tools(state)
            if state.usage is not None:
                yield self._usage(state.usage)
            return
        lines = response.iter_lines()
        data: list[str] = []
        event_name = ""
        while True:
            with activated:
                line = next(lines, None)
            if cancel.cancelled:
                raise TurnCancelled(cancel.reason)
            if line is None or line == "":
                if data:
                    payload = "\n".join(data)
                    data = []
                    if payload.strip() == "[DONE]":
                        state.done = True
                        break
                    yield from self._handle(payload, event_name, state)
                event_name = ""
                if line is None:
                    break
                continue
            if line.startswith(":"):
                continue  # SSE comment (keep-alive)
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event_name = value
        if state.done and scope is not None:
            # read the rest of the body (normally just the chunked terminator) so the connection
            # can be reused, but never wait on a server that keeps the stream open after [DONE]
            scope.deadline = time.monotonic() + DRAIN_TIMEOUT
            try:
                with activated:
                    for _ in lines:
                        pass
            except Exception:
                pass
        if not state.done and state.finish_reason is None:
            raise _failure(
                f"The stream ended unexpectedly after {state.chunks} chunk{'s' if state.chunks != 1 else ''}",
                retryable=True,
                label="stream dropped",
            )
        yield from self._flush_tools(state)
        if state.usage is not None:
            yield self._usage(state.usage)

    def _handle(self, payload: str, event_name: str, state: _StreamState) -> Iterator[ModelEvent]:
        try:
            obj = json.loads(payload)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            log.debug("malformed SSE data (%d characters)", len(payload))
            raise _failure("Malformed server-sent event from the model server")
        state.chunks += 1
        error = obj.get("error")
        if error or event_name == "error":
            message = _one_line(self._scrub(_server_message(obj))) or "unknown error"
            raise _failure("The model server reported an error", detail=message)
        usage = obj.get("usage")
        if isinstance(usage, Mapping):
            state.usage = usage
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    state.started = True
                    yield ReasoningDelta(reasoning)
                content = delta.get("content")
                if isinstance(content, str) and content:
                    state.started = True
                    yield TextDelta(content)
                fragments = delta.get("tool_calls")
                if isinstance(fragments, list) and fragments:
                    if not state.started:
                        state.started = True
                        yield TextDelta("")  # the first delta: closes the spinner (see module doc)
                    state.tools.add(fragments)
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish:
                state.finish_reason = finish
                yield from self._flush_tools(state)

    def _flush_tools(self, state: _StreamState) -> Iterator[ModelEvent]:
        if state.tools:
            for call in state.tools.complete():
                yield ToolCallRequest(call)

    def _usage(self, usage: Mapping[str, Any]) -> UsageReport:
        def num(key: str) -> int:
            value = usage.get(key)
            return value if isinstance(value, int) and value >= 0 else 0

        prompt, completion = num("prompt_tokens"), num("completion_tokens")
        return UsageReport(
            prompt, completion, num("total_tokens") or prompt + completion, self.context_window
        )

    # ------------------------------------------------------------ error mapping

    def _error(self, exc: Exception, cancel: CancelToken, state: _StreamState) -> BaseException:
        """Map an exception of the HTTP layer to TurnCancelled or a ModelError with a short reason."""
        if cancel.cancelled:
            return TurnCancelled(cancel.reason)
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc)
        timeout = _fmt_seconds(self.settings.timeout)
        if _is_timeout(exc):
            if state.chunks == 0:
                return _failure(f"No response from the model server within {timeout}")
            return _failure(f"The model server sent nothing for {timeout} after {state.chunks} chunks")
        if isinstance(exc, ModelError):
            return exc
        if not _is_transport_error(exc, openai.APIConnectionError):
            log.debug("unexpected error from the OpenAI client: %s", type(exc).__name__)
            return _failure(f"Unexpected error talking to the model server ({type(exc).__name__})")
        if state.responded:
            n = state.chunks
            return _failure(
                f"The stream ended unexpectedly after {n} chunk{'s' if n != 1 else ''}",
                retryable=True,
                label="stream dropped",
            )
        if any("RemoteProtocolError" in type(e).__name__ for e in _chain(exc)):
            return _failure(
                f"The model server at {self._display_url} closed the connection without responding",
                retryable=True,
                label="connection closed",
            )
        problem = _connection_problem(exc)
        return _failure(
            f"Cannot connect to {self._display_url} ({problem})",
            retryable=problem not in ("unsupported URL", "TLS certificate verification failed"),
            label=problem,
        )

    def _status_error(self, exc: Any) -> ModelError:
        status = int(getattr(exc, "status_code", 0) or 0)
        body = getattr(exc, "body", None)
        response = getattr(exc, "response", None)
        message = _one_line(self._scrub(_server_message(body)))
        code = _error_code(body)
        model = self.settings.model
        if status == 401:
            hint = "OPENAI_API_KEY is empty" if not self._key else "check OPENAI_API_KEY"
            return _failure(f"Authentication failed (HTTP 401): {hint}", status=status)
        if status == 403:
            return _failure(
                f"Permission denied (HTTP 403): check OPENAI_API_KEY and access to model '{model}'",
                status=status,
            )
        if status == 404:
            lowered = message.lower()
            if code == "model_not_found" or "model" in lowered or model.lower() in lowered:
                return _failure(f"Model '{model}' not found (HTTP 404)", status=status)
            return _failure(
                f"Not found (HTTP 404): check OPENAI_BASE_URL ({self._display_url}) and the model '{model}'",
                status=status,
            )
        if status == 429:
            if code == "insufficient_quota":
                return _failure("Quota exceeded (HTTP 429)", detail=message, status=status)
            return _failure(
                "Rate limited (HTTP 429)",
                retryable=True,
                status=status,
                label="429",
                retry_after=_retry_after(getattr(response, "headers", None)),
            )
        if status >= 500:
            return _failure(
                f"Server error (HTTP {status})",
                detail=message,
                retryable=True,
                status=status,
                label=str(status),
                retry_after=_retry_after(getattr(response, "headers", None)),
            )
        if status in _RETRYABLE_STATUS:
            return _failure(
                f"The model server asked to retry (HTTP {status})",
                detail=message,
                retryable=True,
                status=status,
                label=str(status),
                retry_after=_retry_after(getattr(response, "headers", None)),
            )
        if status == 413:
            return _failure(
                "Request too large (HTTP 413): the conversation may exceed the model's limits", status=status
            )
        return _failure(
            f"The model server rejected the request (HTTP {status})", detail=message, status=status
        )


def _completion_as_chunk(raw: bytes) -> str:
    """A non-streamed ``chat.completion`` rewritten as one stream chunk (``message`` → ``delta``)."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")  # reported as malformed by the caller
    if isinstance(obj, dict) and isinstance(obj.get("choices"), list):
        for choice in obj["choices"]:
            if isinstance(choice, dict) and "delta" not in choice:
                choice["delta"] = choice.pop("message", None) or {}
    return json.dumps(obj)


def _message_to_openai(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(dict(call.arguments), ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
    if message.name and message.role in ("user", "system", "assistant"):
        out["name"] = message.name
    return out
