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

Failures become :class:`ModelError` with a short reason that never contains the API key
(:mod:`.openai_errors` words them). The SDK's own retries are disabled; this module retries
connection errors, 408/409/429 and 5xx, and a stream that drops before any content, up to
``max_retries`` times with exponential backoff (``backoff_base`` × 2ⁿ, at most ``max_backoff``
seconds) or the server's ``Retry-After`` (at most 30 s). Nothing is retried once content has been
yielded, and a timeout is not retried (the user already waited the whole timeout). A stream is
complete when it sent ``[DONE]`` or a finish reason; one that ends before either is reported as
ended unexpectedly.

Cancellation aborts the HTTP request itself, not just the wait (:mod:`.openai_abort`): the HTTP
client's network backend is wrapped so the sockets a request uses are known, and the cancel token's
hook shuts them down (``shutdown(SHUT_RDWR)`` wakes a thread blocked in ``recv``), which makes the
blocked read return at once and tells the server to stop generating. Connecting runs on a helper
thread so that a slow DNS look-up or connect cannot hold the turn either. Backoff sleeps use
``cancel.wait``. If the HTTP stack ever lacks the hook points (a future ``openai``/``httpx``),
cancellation falls back to shutting down the response's socket (found through the public
``network_stream`` extension) once the headers are in, and checking the token between chunks; only a
wait for the headers then lasts until they come or the timeout.

This module holds the model itself (client set-up, request body, retry loop, SSE reading) and the
message conversion; tool-call assembly and per-attempt state are in :mod:`.openai_stream`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..cancel import CancelToken, TurnCancelled
from ..config import ConfigError, OpenAISettings
from .base import (
    Message,
    ModelError,
    ModelEvent,
    ReasoningDelta,
    StatusNote,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from .openai_abort import AbortableStream, AbortScope, Activated, RequestAborted, make_abortable
from .openai_errors import (
    MAX_RETRY_AFTER,
    display_url,
    failure,
    final_failure,
    fmt_seconds,
    one_line,
    request_failure,
    scrub,
    server_message,
    status_failure,
    stream_dropped,
)
from .openai_stream import RAW_ARGUMENTS_KEY, StreamState, completion_as_chunk

__all__ = [
    "INSTALL_HINT",
    "MAX_RETRY_AFTER",
    "PLACEHOLDER_API_KEY",
    "RAW_ARGUMENTS_KEY",
    "OpenAICompatModel",
    "RequestAborted",
]

log = logging.getLogger("acp_progress.models.openai")

INSTALL_HINT = "pip install 'acp-progress[openai]'"
PLACEHOLDER_API_KEY = "not-needed"
DRAIN_TIMEOUT = 0.1


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
                f"got {display_url(settings.base_url)!r}"
            )
        self.settings = settings
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        self.context_window: int | None = getattr(settings, "context_window", None)
        self._key = settings.api_key.strip()
        self._display_url = display_url(settings.base_url)
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
            self._abortable = make_abortable(http_client)
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
            self._init_error = scrub(f"{type(exc).__name__}: {one_line(str(exc), 120)}", self._key)
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
            state = StreamState()
            if attempt == 1:
                yield StatusNote("Waiting for the first token")
            else:
                yield StatusNote(f"Waiting for the first token (attempt {attempt} of {attempts})")
            try:
                yield from self._attempt(body, cancel, state)
                return
            except ModelError as exc:
                if not exc.retryable or state.started or attempt >= attempts:
                    raise final_failure(exc, attempt, self._key) from exc.__cause__
                delay = exc.extra.get("retry_after")
                if delay is None:
                    delay = min(self.backoff_base * 2 ** (attempt - 1), self.max_backoff)
                label = exc.extra.get("label") or (str(exc.status) if exc.status else "error")
                log.info(
                    "model request failed (%s); retry %d of %d in %s",
                    exc.reason,
                    attempt,
                    attempts - 1,
                    fmt_seconds(delay),
                )
                yield StatusNote(f"Retrying in {fmt_seconds(delay)} ({label})")
                if cancel.wait(delay):
                    raise TurnCancelled(cancel.reason) from None
                attempt += 1

    def _attempt(self, body: dict[str, Any], cancel: CancelToken, state: StreamState) -> Iterator[ModelEvent]:
        scope = AbortScope() if self._abortable else None
        holder: dict[str, Any] = {}

        def abort() -> None:
            if scope is not None:
                scope.abort()
            elif (response := holder.get("response")) is not None:
                # fallback (no hooked backend): reach the socket through the public
                # ``network_stream`` extension; closing alone would not wake a blocked read
                with contextlib.suppress(Exception):
                    AbortableStream(response.http_response.extensions["network_stream"]).abort()
                with contextlib.suppress(Exception):
                    response.close()

        remove = cancel.on_cancel(abort)
        response = None
        try:
            try:
                with Activated(scope):
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
        self, response: Any, cancel: CancelToken, state: StreamState, scope: AbortScope | None
    ) -> Iterator[ModelEvent]:
        activated = Activated(scope)
        content_type = str(response.headers.get("content-type", "")).lower()
        if "json" in content_type and "event-stream" not in content_type:
            # a server (or a proxy) that ignored ``stream: true`` and sent one complete answer
            with activated:
                raw = response.read()
            yield from self._handle(completion_as_chunk(raw), "", state)
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
            raise stream_dropped(state.chunks)
        yield from self._flush_tools(state)
        if state.usage is not None:
            yield self._usage(state.usage)

    def _handle(self, payload: str, event_name: str, state: StreamState) -> Iterator[ModelEvent]:
        try:
            obj = json.loads(payload)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            log.debug("malformed SSE data (%d characters)", len(payload))
            raise failure("Malformed server-sent event from the model server")
        state.chunks += 1
        error = obj.get("error")
        if error or event_name == "error":
            message = one_line(scrub(server_message(obj), self._key)) or "unknown error"
            raise failure("The model server reported an error", detail=message)
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

    def _flush_tools(self, state: StreamState) -> Iterator[ModelEvent]:
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

    def _error(self, exc: Exception, cancel: CancelToken, state: StreamState) -> BaseException:
        """Map an exception of the HTTP layer to TurnCancelled or a ModelError with a short reason."""
        if cancel.cancelled:
            return TurnCancelled(cancel.reason)
        openai = self._openai
        if isinstance(exc, openai.APIStatusError):
            return status_failure(exc, key=self._key, model=self.settings.model, url=self._display_url)
        return request_failure(
            exc,
            connection_error=openai.APIConnectionError,
            timeout=self.settings.timeout,
            chunks=state.chunks,
            responded=state.responded,
            url=self._display_url,
        )


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
