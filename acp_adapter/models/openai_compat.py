"""The OpenAI-compatible back-end: streaming chat completions with tool calling.

Selected with ``ACP_PROGRESS_MODEL=openai`` and configured by ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` (may be empty for local servers), ``ACP_PROGRESS_OPENAI_MODEL``,
``ACP_PROGRESS_OPENAI_TIMEOUT``, ``ACP_PROGRESS_OPENAI_MAX_RETRIES`` and
``ACP_PROGRESS_OPENAI_CONTEXT_WINDOW``. It works with OpenAI itself and with the servers that speak
its chat-completions dialect (vLLM, Ollama, llama.cpp, LM Studio, OpenRouter, DeepSeek …). The
official ``openai`` package is an optional extra: its absence is a :class:`ConfigError` when the
model is built. The model runs on ``openai.AsyncOpenAI`` on a private event loop
(:class:`~.loop_thread.LoopThread`); building the client (importing ``openai`` takes a moment)
happens there too, so the agent answers ``initialize`` at once, and a ``stream`` that starts before
it finished waits, cancellably, with the status ``Starting the OpenAI client``. The SDK builds and
sends the request and parses the stream into typed ``ChatCompletionChunk`` objects; provider
fields it does not model (``reasoning_content``) are in each delta's ``model_extra``. A server
that ignores ``stream: true`` and answers with one JSON completion is understood too.

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
(:mod:`.openai_errors` classifies the SDK's exception types and words them). The SDK's own retries
are disabled so that every retry shows in the heartbeat: this module retries connection errors,
408/409/429 and 5xx, and a stream that drops before any content, up to ``max_retries`` times with
exponential backoff (``backoff_base`` × 2ⁿ, at most ``max_backoff`` seconds) or the server's
``Retry-After`` (at most 30 s), yielding ``Retrying in 2s (429)`` first. Nothing is retried once
content has been yielded, and a timeout is not retried (the user already waited the whole
timeout). A stream is complete when a choice finished; one that ends before is reported as ended
unexpectedly.

Cancellation is task cancellation: the turn's cancel token cancels the request's task on the
model's loop, which aborts the HTTP request (connect, wait for headers, body read or backoff
sleep alike) and releases the agent loop at once; the server sees the connection close.

This module holds the model itself (client set-up, request, retry loop, chunk handling) and the
message conversion; tool-call assembly and per-attempt state are in :mod:`.openai_stream`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import math
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from acp_adapter.cancel import CancelToken
from acp_adapter.config import ConfigError, OpenAISettings
from acp_adapter.models.base import (
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
from acp_adapter.models.loop_thread import LoopThread
from acp_adapter.models.openai_errors import (
    MAX_RETRY_AFTER,
    classify,
    display_url,
    final_failure,
    fmt_seconds,
    malformed_event,
    scrub,
    stream_dropped,
)
from acp_adapter.models.openai_stream import RAW_ARGUMENTS_KEY, StreamState, completion_as_chunk
from acp_adapter.models.plans import PLAN_TOOL, PLAN_TOOL_SPEC
from acp_adapter.text import flatten

if TYPE_CHECKING:
    from openai import AsyncOpenAI, AsyncStream
    from openai.types.chat import ChatCompletionChunk

__all__ = [
    "INSTALL_HINT",
    "MAX_RETRY_AFTER",
    "PLACEHOLDER_API_KEY",
    "RAW_ARGUMENTS_KEY",
    "OpenAICompatModel",
]

log = logging.getLogger("acp_progress.models.openai")

INSTALL_HINT = "pip install 'acp-progress[openai]'"
PLACEHOLDER_API_KEY = "not-needed"


# ---------------------------------------------------------------- the model


class OpenAICompatModel:
    """A :class:`~acp_adapter.models.base.ChatModel` over an OpenAI-compatible HTTP API.

    ``backoff_base``/``max_backoff`` set the retry schedule (tests use a few tens of milliseconds).
    One instance serves every session concurrently: all per-call state is local to a request's
    task. :meth:`close` releases the HTTP client and the model's event loop.
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
        self.settings = settings
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        self.context_window: int | None = settings.context_window
        self._key = settings.api_key.strip()
        self._display_url = display_url(settings.base_url)
        self._client: AsyncOpenAI | None = None
        self._init_error: str | None = None
        self._ready = threading.Event()
        self._loop = LoopThread("openai-loop")
        self._loop.submit(self._build_client())

    async def _build_client(self) -> None:
        try:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._key or PLACEHOLDER_API_KEY,
                base_url=self.settings.base_url,
                max_retries=0,  # retries are ours, so that each one shows in the heartbeat
                timeout=self.settings.timeout,
            )
        except Exception as exc:
            self._init_error = scrub(f"{type(exc).__name__}: {flatten(str(exc), 120)}", self._key)
            log.exception("cannot set up the OpenAI client")
        finally:
            self._ready.set()

    def close(self) -> None:
        """Close the HTTP client (its connections) and stop the model's loop; idempotent."""
        if self._loop.closed:
            return
        self._ready.wait(5)
        client = self._client
        if client is not None:
            try:
                self._loop.submit(client.close()).result(2)
            except Exception:
                log.exception("closing the OpenAI client failed")
        self._loop.close()

    # ------------------------------------------------------------ request building

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (public for tests and debugging)."""
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [_message_to_openai(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools and all(t.name != PLAN_TOOL for t in tools):
            # the model states its plan with this tool; the loop answers it as a ``plan`` update
            tools = [*tools, PLAN_TOOL_SPEC]
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
            while not self._ready.wait(0.02):
                cancel.raise_if_cancelled()
        if self._init_error is not None:
            raise ModelError(f"Cannot set up the OpenAI client ({self._init_error}); try {INSTALL_HINT}")
        body = self.request_body(messages, tools)
        yield from self._loop.iterate(lambda: self._events(body), cancel)

    async def _events(self, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        """The retry loop, on the model's event loop; cancelling its task aborts the request."""
        attempts = self.settings.max_retries + 1
        attempt = 1
        while True:
            state = StreamState()
            if attempt == 1:
                yield StatusNote("Waiting for the first token")
            else:
                yield StatusNote(f"Waiting for the first token (attempt {attempt} of {attempts})")
            try:
                try:
                    async for event in self._attempt(body, state):
                        yield event
                    return
                except (ModelError, asyncio.CancelledError, GeneratorExit):
                    raise
                except Exception as exc:
                    # a bug (ours or the SDK's), not a model failure: keep the traceback in the log
                    log.exception("unexpected error in the OpenAI back-end")
                    raise ModelError(
                        f"Unexpected error in the OpenAI back-end ({type(exc).__name__})"
                    ) from exc
            except ModelError as exc:
                if not exc.retryable or state.started or attempt >= attempts:
                    raise final_failure(exc, attempt, self._key) from exc.__cause__
                delay = exc.retry_after
                if delay is None:
                    delay = min(self.backoff_base * 2 ** (attempt - 1), self.max_backoff)
                label = exc.label or (str(exc.status) if exc.status else "error")
                log.info(
                    "model request failed (%s); retry %d of %d in %s",
                    exc.reason,
                    attempt,
                    attempts - 1,
                    fmt_seconds(delay),
                )
                yield StatusNote(f"Retrying in {fmt_seconds(delay)} ({label})")
                await asyncio.sleep(delay)
                attempt += 1

    def _error(self, exc: BaseException, state: StreamState) -> ModelError:
        return classify(
            exc,
            key=self._key,
            model=self.settings.model,
            url=self._display_url,
            timeout=self.settings.timeout,
            chunks=state.chunks,
            responded=state.responded,
        )

    async def _attempt(self, body: dict[str, Any], state: StreamState) -> AsyncIterator[ModelEvent]:
        import openai
        from openai.types.chat import ChatCompletionChunk

        assert self._client is not None
        try:
            stream: AsyncStream[ChatCompletionChunk] = await self._client.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise self._error(exc, state) from exc
        state.responded = True
        async with stream:
            content_type = stream.response.headers.get("content-type", "").lower()
            if "json" in content_type and "event-stream" not in content_type:
                # a server (or a proxy) that ignored ``stream: true`` and sent one complete answer
                try:
                    raw = await stream.response.aread()
                except openai.OpenAIError as exc:
                    raise self._error(exc, state) from exc
                data = completion_as_chunk(raw)
                if data is None:
                    raise malformed_event()
                for event in self._handle(ChatCompletionChunk.construct(**data), state):
                    yield event
                state.finish_reason = state.finish_reason or "stop"
            else:
                chunks = aiter(stream)
                while True:
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                    except openai.OpenAIError as exc:
                        raise self._error(exc, state) from exc
                    except ValueError as exc:  # the SDK could not decode an event's JSON
                        log.debug("malformed SSE data: %s", type(exc).__name__)
                        raise malformed_event() from exc
                    if not isinstance(chunk, ChatCompletionChunk):
                        raise malformed_event()
                    for event in self._handle(chunk, state):
                        yield event
        if state.finish_reason is None:
            raise stream_dropped(state.chunks)
        for event in self._flush_tools(state):
            yield event
        if state.usage is not None:
            yield self._usage(state)

    def _handle(self, chunk: ChatCompletionChunk, state: StreamState) -> Iterator[ModelEvent]:
        state.chunks += 1
        if chunk.usage is not None:
            state.usage = chunk.usage  # cumulative on servers that repeat it: keep the last
        for choice in chunk.choices or ():
            if (choice.index or 0) != 0:
                continue
            delta = choice.delta
            if delta is not None:
                extra = delta.model_extra or {}
                reasoning = extra.get("reasoning_content") or extra.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    state.started = True
                    yield ReasoningDelta(reasoning)
                if isinstance(delta.content, str) and delta.content:
                    state.started = True
                    yield TextDelta(delta.content)
                if delta.tool_calls:
                    if not state.started:
                        state.started = True
                        yield TextDelta("")  # the first delta: closes the spinner (see module doc)
                    state.tools.add(delta.tool_calls)
            if isinstance(choice.finish_reason, str) and choice.finish_reason:
                state.finish_reason = choice.finish_reason
                yield from self._flush_tools(state)

    def _flush_tools(self, state: StreamState) -> Iterator[ModelEvent]:
        if state.tools:
            for call in state.tools.complete():
                yield ToolCallRequest(call)

    def _usage(self, state: StreamState) -> UsageReport:
        usage = state.usage
        assert usage is not None

        def num(value: object) -> int:
            return value if isinstance(value, int) and value >= 0 else 0

        prompt, completion = num(usage.prompt_tokens), num(usage.completion_tokens)
        return UsageReport(
            prompt,
            completion,
            num(usage.total_tokens) or prompt + completion,
            self.context_window,
            reported_cost(usage),
        )


#: the largest cost of one call believed (US dollars): a bigger one is a server's mistake
MAX_CALL_COST = 10_000.0


def reported_cost(usage: Any) -> float | None:
    """The call's cost in US dollars when the server reports it beside the tokens (``usage.cost``,
    as OpenRouter and LiteLLM proxies do); None when absent or not a sane number (negative, NaN,
    infinite, absurdly large, a string): an unknown cost is never shown as zero."""
    extra = getattr(usage, "model_extra", None) or {}
    value = extra.get("cost")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    cost = float(value)
    return cost if math.isfinite(cost) and 0 <= cost <= MAX_CALL_COST else None


def _message_to_openai(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "user" and message.images:
        # the text, then each image as a data URL part (the chat-completions vision format)
        out["content"] = [
            {"type": "text", "text": message.content},
            *(
                {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
                for image in message.images
            ),
        ]
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
