"""The one reader of newline-delimited JSON-RPC, for every stream the package reads.

``serve`` (in front of the SDK), the relay (both directions) and the client driver (the agent's
stdout) all read through :class:`MessageReader`, so a hostile line meets the same rules wherever it
arrives:

* **Length.** A line longer than ``max_line_bytes`` (at most 50 MiB) is skipped *whole*: the reader
  works on raw chunk reads with its own buffer, drops what it holds of the line and discards bytes up
  to and including the next newline without keeping them. Nothing of it is parsed or forwarded; the
  caller gets one :class:`Refused` for it (``serve`` answers it once). asyncio's ``readline`` instead
  raises at its limit and leaves the *tail* of the line to be read as the next line.
* **Depth.** Nesting deeper than ``max_depth`` (256) is refused *before* ``json.loads`` runs: the bytes
  are scanned (escapes and strings removed, then ``[``/``{`` counted) at C speed, so the parser can
  never hit a ``RecursionError`` (973 ``[`` then 973 ``]`` killed ``serve`` and the relay).
* **Strict JSON.** UTF-8 only (a BOM, UTF-16 or invalid UTF-8 is a parse error: ``json.loads`` would
  otherwise guess UTF-16/32 from bytes); ``NaN``/``Infinity``/``-Infinity`` and numbers that overflow
  to infinity (``1e999``) are refused. A message must be one object; its ``id``, if any, a string, an
  integer or null: any other id gets ``-32600`` with ``id: null`` and is never echoed. Lone surrogates
  (``"\\ud800"``) are valid JSON escapes and are accepted; everything written by :func:`dumps_line`
  escapes non-ASCII, so encoding output can never fail on them.
* **Answers.** A refused line gets one JSON-RPC error: ``-32700`` (Parse error) for a line that is not
  strict JSON or is too long, ``-32600`` (Invalid Request) for too deep, not an object, or a bad id.
  A line that could not be parsed is answered with ``id: null`` even if it was meant as a
  notification: its id cannot be known, and JSON-RPC 2.0 prescribes ``null`` for exactly this case.
  Batches keep their old answer (one ``-32600`` per element with an id). Errors come from the SDK
  (``RequestError(...).to_error_obj()``) and are written as whole lines in one ``write``.
* **Backpressure.** :class:`JsonRpcStream` (the SDK's message ``Transport`` seam, used by ``serve``)
  does not read the next line while the peer is not draining our output (``writer.drain()``, with the
  transport's high-water mark at ``write_high_water``) or while ``max_in_flight`` of the peer's
  requests are still unanswered, since the SDK spawns a task per request, each holding its answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import operator
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp import RequestError

from acp_adapter.config import StreamSettings
from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.jsonrpc")

#: The settings' defaults are the limits' defaults (one place to change them): what an embedder
#: that builds ``StreamLimits()`` gets is what ``ACP_PROGRESS_*`` left unset gives.
_DEFAULTS = StreamSettings()
DEFAULT_MAX_LINE_BYTES = _DEFAULTS.max_line_bytes
DEFAULT_MAX_DEPTH = _DEFAULTS.max_json_depth
#: Bytes asked of the source per read; also the source StreamReader's own limit (it pauses the pipe at
#: twice that), so unread input waits in the kernel, not in our memory.
CHUNK_BYTES = 64 * 1024
#: How much of a refused line is kept: for a log sample, and for the relay to find the id it answers.
HEAD_BYTES = 4096

_BATCH_HINT = "JSON-RPC batches are not supported; send one message per line"


@dataclass(frozen=True)
class StreamLimits:
    """The limits of one stream (see :class:`~acp_adapter.config.StreamSettings` for the settings)."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_in_flight: int = _DEFAULTS.max_in_flight
    write_high_water: int = _DEFAULTS.write_high_water
    max_queued_updates: int = _DEFAULTS.max_queued_updates

    @classmethod
    def from_settings(cls, settings: StreamSettings) -> StreamLimits:
        return cls(
            max_line_bytes=settings.max_line_bytes,
            max_depth=settings.max_json_depth,
            max_in_flight=settings.max_in_flight,
            write_high_water=settings.write_high_water,
            max_queued_updates=settings.max_queued_updates,
        )

    @classmethod
    def from_env(cls) -> StreamLimits:
        """The limits set in this process's environment (``ACP_PROGRESS_MAX_LINE_BYTES`` …)."""
        from acp_adapter.config import StreamSettings

        return cls.from_settings(StreamSettings.from_env())


# ---------------------------------------------------------------------------- strict JSON


class NotStrictJson(AcpProgressError, ValueError):
    """The line is not strict UTF-8 JSON (NaN, Infinity, an overflowing number, a bad byte …)."""


def _refuse_constant(name: str) -> Any:
    raise NotStrictJson(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotStrictJson(f"the number {text[:40]} is out of range")
    return value


#: the strict parser and writer, made once: ``json.loads``/``json.dumps`` with options build a new
#: decoder (and its scanner) or encoder for every line, on the path of every message and update
_STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_STRICT_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def loads_strict(data: bytes) -> Any:
    """Parse one line of strict JSON: UTF-8 only, no NaN/Infinity, no number that overflows.

    Call :func:`nesting_exceeds` first: this parses recursively."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotStrictJson(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    if text.startswith("\ufeff"):  # as json.loads refuses it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _STRICT_DECODER.decode(text)


def dumps_line(message: Any) -> bytes:
    """One strict JSON line: no NaN/Infinity (``ValueError``), ASCII only (so a lone surrogate is an
    escape and encoding cannot fail), compact, newline-terminated."""
    return (_STRICT_ENCODER.encode(message) + "\n").encode("ascii")


_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
#: After translate: an opening bracket is 2, a closing one 0; minus 1 gives the depth step.
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def nesting_exceeds(data: bytes, max_depth: int) -> bool:
    """True when ``data`` nests arrays/objects deeper than ``max_depth``, found without parsing.

    Escape pairs are removed first (outside a string a backslash is invalid JSON anyway, and the
    parser stops there), then strings, so brackets inside strings do not count; the depth is the
    highest running sum of the remaining brackets. Every step is a C loop: a 50 MiB line costs tens
    of milliseconds. The answer errs on the side of refusing (an unbalanced line may count deeper
    than the parser would get)."""
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False  # cannot nest deeper than the number of opening brackets
    stripped = _STRING.sub(b"", _ESCAPE.sub(b"", data))
    brackets = stripped.translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= max_depth:
        return False
    steps = brackets.translate(_STEP)
    depth = itertools.accumulate(map(operator.sub, steps, itertools.repeat(1)))
    return max(depth, default=0) > max_depth


def valid_id(value: Any) -> bool:
    """JSON-RPC ids this package accepts: strings, integers and null (never bool or float)."""
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def error_answer(error: RequestError, message_id: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response built from the SDK's error object."""
    return {"jsonrpc": "2.0", "id": message_id, "error": error.to_error_obj()}


# ---------------------------------------------------------------------------- classification


@dataclass(frozen=True)
class Accepted:
    """One JSON object fit to hand on: ``raw`` is its line as received, without the newline."""

    message: dict[str, Any]
    raw: bytes


@dataclass(frozen=True)
class Refused:
    """A line the reader will not hand on. ``answer`` is the JSON-RPC reply due to its sender (None:
    nothing is due), ``reason`` a short phrase for logs, ``head`` the first bytes of the line."""

    reason: str
    answer: dict[str, Any] | list[dict[str, Any]] | None
    head: bytes


@dataclass(frozen=True)
class TooLong:
    """What :class:`LineReader` returns for a line past the limit, already discarded."""

    head: bytes


def _too_long(limit: int, head: bytes) -> Refused:
    details = f"message too long: a line may hold at most {limit} bytes; it was skipped whole"
    return Refused(details, error_answer(RequestError.parse_error({"details": details})), head)


def classify_line(line: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> Accepted | Refused | None:
    """Decide one line (without its newline): None for a blank line, else :class:`Accepted` or
    :class:`Refused` with the answer it is due."""
    text = line.strip()
    if not text:
        return None
    head = text[:HEAD_BYTES]
    if nesting_exceeds(text, max_depth):
        details = f"nested deeper than {max_depth} levels; the line was not parsed"
        log.warning("refused a JSON-RPC line: %s", details)
        return Refused(details, error_answer(RequestError.invalid_request({"details": details})), head)
    try:
        message = loads_strict(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: belt and braces, nesting is checked
        details = redact_text(str(exc)) or type(exc).__name__
        log.warning("Error parsing JSON-RPC message: %s", details)
        return Refused(details, error_answer(RequestError.parse_error({"details": details})), head)
    if isinstance(message, dict):
        return _classify_object(message, text, head)
    if isinstance(message, list):
        return _classify_batch(message, head)
    kind = "null" if message is None else type(message).__name__
    details = f"a JSON-RPC message must be an object, got {kind}"
    log.warning("refused a JSON-RPC message that is %s, not an object", kind)
    return Refused(details, error_answer(RequestError.invalid_request({"details": details})), head)


def _classify_object(message: dict[str, Any], text: bytes, head: bytes) -> Accepted | Refused:
    if "id" in message and not valid_id(message["id"]):
        details = "the id must be a string, an integer or null"
        log.warning("refused a JSON-RPC message: %s", details)
        return Refused(details, error_answer(RequestError.invalid_request({"details": details})), head)
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        details = "the method must be a string"
        log.warning("refused a JSON-RPC message: %s", details)
        answer = error_answer(RequestError.invalid_request({"details": details}), message.get("id"))
        return Refused(details, answer, head)
    return Accepted(message, text)


def _classify_batch(message: list[Any], head: bytes) -> Refused:
    if not message:
        details = "empty batch"
        return Refused(details, error_answer(RequestError.invalid_request({"details": details})), head)
    answers = [
        error_answer(
            RequestError.invalid_request({"details": _BATCH_HINT}),
            item["id"] if valid_id(item["id"]) else None,
        )
        if isinstance(item, dict)
        else error_answer(RequestError.invalid_request({"details": "a batch element must be an object"}))
        for item in message
        if not isinstance(item, dict) or "id" in item
    ]
    log.warning("refused a JSON-RPC batch of %d messages", len(message))
    return Refused(_BATCH_HINT, answers or None, head)


_RESPONSE_HEAD = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,19}|"[^"\\]{0,256}")\s*,'
    rb'\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(?:result|error)"\s*:'
)


def sniff_response_id(head: bytes) -> int | str | None:
    """The id of a refused line that plainly starts as a response (``{"jsonrpc":"2.0","id":7,
    "result":…``, the order SDKs write), so the relay can answer the request it was meant to answer
    instead of leaving it hanging. None when the head does not say."""
    match = _RESPONSE_HEAD.match(head)
    if match is None:
        return None
    token = match.group(1)
    if token.startswith(b'"'):
        return token[1:-1].decode("utf-8", errors="replace")
    return int(token)


# ---------------------------------------------------------------------------- reading lines


class LineReader:
    """Newline-delimited lines from raw chunk reads, with a hard line-length limit.

    ``next_line`` returns a line without its newline, :class:`TooLong` for a line past the limit
    (already discarded up to and including its newline, never held whole), or None at the end of
    input. The last line may lack its newline.
    """

    def __init__(self, source: asyncio.StreamReader, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._source = source
        self._limit = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._eof = False

    async def _fill(self) -> bool:
        """Read one chunk into the buffer; False at the end of input."""
        if self._eof:
            return False
        try:
            chunk = await self._source.read(CHUNK_BYTES)
        except ConnectionError as exc:
            log.warning("protocol input ended: %s", redact_text(str(exc)) or type(exc).__name__)
            chunk = b""
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def next_line(self) -> bytes | TooLong | None:
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                if newline > self._limit:
                    head = bytes(self._buffer[:HEAD_BYTES])
                    del self._buffer[: newline + 1]
                    self._scanned = 0
                    return TooLong(head)
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]  # bytearray drops its front in O(1)
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            if len(self._buffer) > self._limit:
                head = bytes(self._buffer[:HEAD_BYTES])
                await self._discard_line()
                return TooLong(head)
            if not await self._fill():
                if not self._buffer:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                self._scanned = 0
                return line

    async def _discard_line(self) -> None:
        """Drop the buffer and everything up to and including the next newline, chunk by chunk."""
        self._buffer.clear()
        self._scanned = 0
        while await self._fill():
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                del self._buffer[: newline + 1]
                return
            self._buffer.clear()


class MessageReader:
    """The next JSON-RPC message of a stream, or the refusal of its next bad line."""

    def __init__(self, source: asyncio.StreamReader, limits: StreamLimits | None = None) -> None:
        self.limits = limits or StreamLimits()
        self._lines = LineReader(source, self.limits.max_line_bytes)

    async def next(self) -> Accepted | Refused | None:
        """:class:`Accepted`, :class:`Refused`, or None at the end of input (blank lines skipped)."""
        while True:
            line = await self._lines.next_line()
            if line is None:
                return None
            if isinstance(line, TooLong):
                refused = _too_long(self.limits.max_line_bytes, line.head)
                log.warning("refused a JSON-RPC line: %s", refused.reason)
                return refused
            result = classify_line(line, self.limits.max_depth)
            if result is not None:
                return result


# ---------------------------------------------------------------------------- the SDK's transport


def _request_key(message_id: Any) -> tuple[str, Any]:
    return (type(message_id).__name__, message_id)  # 1 and "1" are different ids


class JsonRpcStream:
    """The SDK's message ``Transport`` on a byte stream pair, with the limits above.

    ``receive`` hands the SDK only accepted messages; refused lines are answered on ``writer``
    (``answer_refusals``) or dropped, and ``on_refusal`` sees each: when it returns a message, that
    message is handed to the SDK in the refused line's place (the client driver fails the request a
    refused answer was meant for, instead of leaving it pending forever). Before reading the next line it
    waits for the writer to drain and for the peer's unanswered requests to drop below
    ``max_in_flight``; ``gate`` (optional) is one more wait of the caller's (the client driver's full
    update queues). ``send`` writes strict JSON, one ``write`` per message; an answer that cannot be
    written strictly (a NaN in a result) becomes an internal error for the same id, never a lost answer.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        limits: StreamLimits | None = None,
        *,
        answer_refusals: bool = True,
        on_refusal: Callable[[Refused], dict[str, Any] | None] | None = None,
        gate: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.limits = limits or StreamLimits()
        self._messages = MessageReader(reader, self.limits)
        self._writer = writer
        self._answer_refusals = answer_refusals
        self._on_refusal = on_refusal
        self._gate = gate
        self._in_flight: set[tuple[str, Any]] = set()
        self._answered = asyncio.Event()
        with contextlib.suppress(AttributeError, NotImplementedError, ValueError):
            writer.transport.set_write_buffer_limits(high=self.limits.write_high_water)

    @property
    def in_flight(self) -> int:
        """Requests of the peer received and not answered yet."""
        return len(self._in_flight)

    def _write(self, data: bytes) -> None:
        if not self._writer.is_closing():
            self._writer.write(data)

    async def _wait_for_room(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self._writer.drain()  # the peer reads our output, or we stop reading its input
        while len(self._in_flight) >= self.limits.max_in_flight:
            self._answered.clear()
            await self._answered.wait()
        if self._gate is not None:
            await self._gate()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            await self._wait_for_room()
            item = await self._messages.next()
            if item is None:
                return None
            if isinstance(item, Accepted):
                message = item.message
                if "method" in message and "id" in message:
                    self._in_flight.add(_request_key(message["id"]))
                return message
            substitute = self._on_refusal(item) if self._on_refusal is not None else None
            if self._answer_refusals and item.answer is not None:
                self._write(dumps_line(item.answer))
            if substitute is not None:
                return substitute

    async def send(self, message: dict[str, Any]) -> None:
        is_answer = "method" not in message and "id" in message
        try:
            data = dumps_line(message)
        except (ValueError, TypeError) as exc:
            if not is_answer:
                raise
            log.error("an answer could not be written as strict JSON: %s", exc)
            details = f"the answer could not be written as strict JSON: {exc}"
            data = dumps_line(error_answer(RequestError.internal_error({"details": details}), message["id"]))
        if is_answer:
            self._in_flight.discard(_request_key(message["id"]))
            self._answered.set()
        if self._writer.is_closing():
            raise ConnectionResetError("the peer closed the stream")
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._writer.drain()
