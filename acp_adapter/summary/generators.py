"""Generators: what writes the sentence. A callable (``execute``), a model, or the embedded writer.

Every generator has one coroutine, ``generate(request) -> str | {"summary": str} | None``. The
capability owns everything around it — scheduling, timeout, cancellation, cleaning, revisions — so
a generator is just "facts in, sentence out":

* :class:`ExecuteGenerator` wraps your function (sync or async). It receives the whole
  :class:`SummaryRequest`: the snapshot, the rendered prompt and chat messages, *and* the front-end's
  full run ``input`` and ``messages``; what it does with them is up to your code. A synchronous
  function runs in a worker thread so it can never stall the event loop that carries the primary
  stream — one of at most :data:`SUMMARY_THREADS` threads of its own (:class:`BoundedThreads`),
  never the loop's default executor: a function that hangs keeps its thread, and further ticks
  are skipped (:class:`GeneratorBusy`) instead of taking one more thread each, so
  ``asyncio.to_thread`` everywhere else (the console bridge's stdin reader …) keeps working.
* :class:`ModelGenerator` asks an OpenAI-compatible chat model (``openai.AsyncOpenAI``) with its own
  base URL, model name and key — independent of the agent's primary model.
* :class:`EmbeddedGenerator` writes a real sentence from the snapshot, offline and deterministic
  ("Searching for TODO after reading README.md."), so summaries work on a fresh machine and in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import re
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, TypeVar, cast

from acp_adapter.errors import AcpProgressError
from acp_adapter.summary.snapshot import ProgressSnapshot
from acp_adapter.text import ellipsize

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionMessageParam


GeneratorResult: TypeAlias = str | Mapping[str, Any] | None
_T = TypeVar("_T")

SUMMARY_THREADS: Final = 2
"""Threads sync ``execute`` summary generators may hold at once, all of them together."""


class GeneratorBusy(AcpProgressError):
    """Every summary thread is still busy (a previous generation has not returned): skip this tick."""


class BoundedThreads:
    """Runs sync functions in at most ``limit`` daemon threads of its own, never the default executor.

    A call while ``limit`` earlier calls are still running raises :class:`GeneratorBusy` at once
    instead of queueing: a function that never returns holds one thread forever and nothing more.
    Daemon threads, so a hung function cannot keep the process from exiting either (a
    ``ThreadPoolExecutor`` joins its threads at exit).
    """

    def __init__(self, limit: int = SUMMARY_THREADS) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self._busy = 0
        self._lock = threading.Lock()

    @property
    def busy(self) -> int:
        """Calls running now (a hung one included)."""
        return self._busy

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            if self._busy >= self.limit:
                raise GeneratorBusy(f"all {self.limit} summary threads are still busy")
            self._busy += 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        context = contextvars.copy_context()

        def settle(ok: bool, value: Any) -> None:
            if future.done():
                return  # the caller gave up (timeout, turn ended)
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

        def work() -> None:
            try:
                result = context.run(function, *args)
            except BaseException as exc:
                outcome: tuple[bool, Any] = (False, exc)
            else:
                outcome = (True, result)
            finally:
                with self._lock:
                    self._busy -= 1
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(settle, *outcome)

        threading.Thread(target=work, name="acp-progress-summary", daemon=True).start()
        return await future


#: every sync ``execute`` generator shares these threads, so their number is bounded process-wide
SUMMARY_EXECUTOR: Final = BoundedThreads()


@dataclass(frozen=True)
class SummaryRequest:
    """Everything one generation may use.

    ``snapshot``, ``prompt`` and ``prompt_messages`` are already redacted and hold no raw
    reasoning or tool data. ``input`` and ``messages`` are the front-end's run input and
    conversation, passed through untouched for ``execute`` functions (the code in those
    functions controls what it sends, so it is given everything).
    """

    snapshot: ProgressSnapshot
    prompt: str
    prompt_messages: tuple[Mapping[str, str], ...]
    max_length: int
    input: Any = None
    messages: Sequence[Any] = ()

    @property
    def previous(self) -> str | None:
        return self.snapshot.previous


class SummaryGenerator(Protocol):
    """Writes one summary sentence for a request."""

    async def generate(self, request: SummaryRequest) -> GeneratorResult: ...


ExecuteFunction: TypeAlias = Callable[[SummaryRequest], GeneratorResult | Awaitable[GeneratorResult]]


class ExecuteGenerator:
    """Your function as a generator. Sync functions run in a thread (``in_thread=False`` runs them
    on the loop: only for functions that return at once)."""

    def __init__(
        self, function: ExecuteFunction, *, in_thread: bool = True, threads: BoundedThreads | None = None
    ) -> None:
        if not callable(function):
            raise TypeError("execute: expected a callable")
        self.function = function
        self.in_thread = in_thread
        self.threads = threads or SUMMARY_EXECUTOR
        self._is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - an object with an async __call__
        )

    async def generate(self, request: SummaryRequest) -> GeneratorResult:
        if self._is_async or not self.in_thread:
            result = self.function(request)
        else:
            result = await self.threads.run(self.function, request)
        if inspect.isawaitable(result):
            result = await result
        return result


# ---------------------------------------------------------------- the model generator


class ModelGenerator:
    """An OpenAI-compatible chat model (OpenAI, Ollama, vLLM, LM Studio …) writes the sentence.

    One ``AsyncOpenAI`` client per event loop (an HTTP connection pool belongs to one loop), built
    on first use. The SDK's retries are off: a summary is best effort, the next tick is the retry.
    Error texts never leave this object through the capability (they may quote a key or a URL).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 20.0,
        max_tokens: int = 96,
        temperature: float = 0.2,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self._key = api_key.strip()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            import openai

            client = openai.AsyncOpenAI(
                api_key=self._key or "not-needed",
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout,
            )
            self._clients[loop] = client
        return client

    async def generate(self, request: SummaryRequest) -> GeneratorResult:
        """Ask for the sentence as a stream, and take whatever the server sends back.

        Servers differ: most stream when asked, some (and some proxies) ignore ``stream`` and
        answer one ``chat.completion`` JSON body. Asking for a stream and reading the reply by its
        content type works with both; the SDK's non-streaming call fails on an SSE reply (it hands
        back the body as a ``str``). A stream that ends without a finish reason is a
        failure (:class:`IncompleteStream`), never half a sentence.
        """
        messages = cast("list[ChatCompletionMessageParam]", [dict(m) for m in request.prompt_messages])
        stream = await self._client().chat.completions.create(
            model=self.model,
            messages=messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stream=True,
        )
        async with stream:
            content_type = stream.response.headers.get("content-type", "").lower()
            if "json" in content_type and "event-stream" not in content_type:
                return _completion_text(await stream.response.aread())
            parts: list[str] = []
            finished = False
            async for chunk in stream:
                for choice in getattr(chunk, "choices", None) or ():
                    if (getattr(choice, "index", 0) or 0) != 0:
                        continue
                    content = getattr(getattr(choice, "delta", None), "content", None)
                    if isinstance(content, str):
                        parts.append(content)
                    finished = finished or getattr(choice, "finish_reason", None) is not None
            # As the primary back-end does: no finish reason means the stream was cut off.
            if not finished:
                raise IncompleteStream("the summary stream ended before the answer finished")
        return "".join(parts) or None

    async def aclose(self) -> None:
        """Close the client of the running loop (its connections)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


class IncompleteStream(AcpProgressError):
    """The summary server's stream ended before the sentence did."""


def _completion_text(raw: bytes) -> str | None:
    """The text of a non-streamed ``chat.completion`` body (None when it has none)."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise ValueError("the summary server sent a body that is not JSON") from None
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


# ---------------------------------------------------------------- the embedded generator

_IMPERATIVES = frozenset(
    [
        "add",
        "analyze",
        "analyse",
        "build",
        "calculate",
        "change",
        "check",
        "clean",
        "compare",
        "compute",
        "convert",
        "count",
        "create",
        "debug",
        "delete",
        "describe",
        "explain",
        "find",
        "fix",
        "format",
        "generate",
        "give",
        "grep",
        "help",
        "implement",
        "improve",
        "install",
        "investigate",
        "list",
        "look",
        "make",
        "move",
        "open",
        "optimize",
        "plan",
        "read",
        "refactor",
        "remove",
        "rename",
        "review",
        "run",
        "search",
        "set",
        "show",
        "sort",
        "summarize",
        "summarise",
        "tell",
        "test",
        "think",
        "translate",
        "update",
        "upgrade",
        "wait",
        "write",
    ]
)
_QUESTION_WORDS = frozenset(["what", "why", "how", "when", "where", "which", "who", "whose", "whom"])
_AUX_WORDS = frozenset(
    [
        "can",
        "could",
        "would",
        "will",
        "is",
        "are",
        "do",
        "does",
        "did",
        "should",
        "shall",
        "may",
        "might",
        "was",
        "were",
    ]
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def _lower_first(text: str) -> str:
    word = text.split(" ", 1)[0]
    if len(word) > 1 and any(c.isupper() for c in word[1:]):
        return text  # README, GitHub, TODO: keep as written
    return text[:1].lower() + text[1:]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _topic(user_text: str) -> str:
    """A short noun phrase for the request: "the request to fix the test", "what 2^10 is" …"""
    first = _SENTENCE_END.split(user_text.strip(), maxsplit=1)[0] if user_text.strip() else ""
    short = ellipsize(first.strip().rstrip(".!?;: "), 72, words=True)
    if not short:
        return "the request"
    word = short.split(" ", 1)[0].lower().strip(",")
    if word in ("please", "pls") and " " in short:
        short = short.split(" ", 1)[1]
        word = short.split(" ", 1)[0].lower().strip(",")
    if word in _IMPERATIVES:
        return f"the request to {_lower_first(short)}"
    if word in _QUESTION_WORDS:
        return _lower_first(short)
    if word in _AUX_WORDS:
        return f"the question “{short}”"
    return f"“{short}”"


def _clause(name: str) -> str:
    """A tool name as a gerund clause: "Searching for TODO" → "searching for TODO"."""
    first = name.split(" ", 1)[0]
    if len(first) > 4 and first.lower().endswith("ing") and first[0].isupper():
        return _lower_first(name)
    return f"running {name}"


_FAILED = " (failed)"


def _after(name: str) -> str:
    """What a finished tool did, as a clause: "reading README.md" or "running ls failed"."""
    if name.endswith(_FAILED):
        return f"{_clause(name[: -len(_FAILED)])} failed"
    return _clause(name)


def _base_sentence(s: ProgressSnapshot) -> str:
    last_name = s.completed_tools[-1] if s.completed_tools else None
    last = _after(last_name) if last_name else None
    if s.active_tools:
        n = len(s.active_tools)
        if n == 1:
            main = _upper_first(_clause(s.active_tools[0]))
        elif n == 2:
            main = _upper_first(f"{_clause(s.active_tools[0])} and {_clause(s.active_tools[1])}")
        else:
            main = f"Running {n} tools, including {_clause(s.active_tools[0])}"
        return f"{main} after {last}." if last else f"{main}."
    if s.reasoning_active:
        if last_name and last_name.endswith(_FAILED):
            return f"Thinking about why {last}."
        if last:
            return f"Thinking about the results of {last}."
        return f"Thinking about {_topic(s.user_text)}."
    if s.answering:
        return (
            f"Writing the answer after {last}." if last else f"Writing the answer to {_topic(s.user_text)}."
        )
    if last:
        return f"Deciding what to do after {last}."
    return f"Getting started on {_topic(s.user_text)}."


def _finished(sentence: str) -> str:
    """One full stop: a tool title may already end the sentence (``Listing .``, ``Reading a/b…``)."""
    for doubled, single in (("..", "."), ("….", "…"), ("?.", "?"), ("!.", "!")):
        if sentence.endswith(doubled):
            return sentence[: -len(doubled)] + single
    return sentence


def embedded_summary(snapshot: ProgressSnapshot) -> str:
    """The embedded writer: what the agent is doing, from the snapshot alone (no network, pure).

    When nothing changed since the previous summary it says "Still …", and after a minute it adds
    how long ("…, 2 min in."), so a long wait still shows movement without inventing progress.
    """
    base = _finished(_base_sentence(snapshot))
    still = "Still " + _lower_first(base)
    previous = snapshot.previous
    if previous is None or not (previous == base or previous.startswith(still.rstrip("."))):
        return base
    minutes = int(snapshot.elapsed // 60)
    if minutes >= 1:
        return f"{still.rstrip('.')}, {minutes} min in."
    return still


class EmbeddedGenerator:
    """The offline writer as a generator (returns at once; it never touches the network)."""

    async def generate(self, request: SummaryRequest) -> GeneratorResult:
        return embedded_summary(request.snapshot)
