"""A filter in front of the SDK's JSON-RPC reader: every line that is not one JSON object is
answered here, and only single JSON objects reach the SDK.

The SDK's receive loop calls ``message.get(...)`` on whatever ``json.loads`` returned, so a line of
valid JSON that is not an object (``42``, ``"s"``, ``true``, ``[1,2,3]``, a JSON-RPC batch) raised
inside it and stopped the agent with requests in flight, ``null`` read as end of input, and an
invalid line was logged but never answered. Rather than fork or patch the SDK, :func:`guard_reader`
reads raw lines from the real protocol reader and

* answers a line that is not valid JSON with ``-32700`` (Parse error, ``id: null``);
* answers valid JSON that is not an object (``null`` included) with ``-32600`` (Invalid Request);
* answers a batch (an array) with an array holding one ``-32600`` per element that carries an id
  (batches are not supported: send one message per line), or a single ``-32600`` for an empty
  array, and nothing when every element is a notification, as JSON-RPC 2.0 asks;
* passes every single JSON object through unchanged to the SDK connection, which reads from
  the :class:`GuardedReader`.

Error objects come from the SDK (``RequestError(...).to_error_obj()``); answers are written as
whole lines in one ``write`` call, so they never interleave with the SDK's own messages.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from acp import RequestError

from .redact import redact_text

__all__ = ["GuardedReader", "classify_line", "guard_reader"]

log = logging.getLogger("acp_progress.jsonrpc")

_BATCH_HINT = "JSON-RPC batches are not supported; send one message per line"


def _error(error: RequestError, message_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message_id, "error": error.to_error_obj()}


def _valid_id(value: Any) -> Any:
    """The id to echo: a string or number from the message, else null."""
    if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return None


def classify_line(line: bytes) -> tuple[bool, Any]:
    """``(True, None)`` for a line to pass to the SDK, ``(False, answer)`` for a line answered
    here (``answer`` is the JSON-RPC response to send, or None when nothing is due)."""
    text = line.strip()
    if not text:
        return False, None
    try:
        message = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        log.warning("Error parsing JSON-RPC message: %s", redact_text(str(exc)))
        return False, _error(RequestError.parse_error({"details": str(exc)}))
    if isinstance(message, dict):
        return True, None
    if isinstance(message, list):
        if not message:
            return False, _error(RequestError.invalid_request({"details": "empty batch"}))
        answers = [
            _error(RequestError.invalid_request({"details": _BATCH_HINT}), _valid_id(item.get("id")))
            if isinstance(item, dict)
            else _error(RequestError.invalid_request({"details": "a batch element must be an object"}))
            for item in message
            if not isinstance(item, dict) or "id" in item
        ]
        log.warning("refused a JSON-RPC batch of %d messages", len(message))
        return False, answers or None
    kind = "null" if message is None else type(message).__name__
    log.warning("refused a JSON-RPC message that is %s, not an object", kind)
    return False, _error(
        RequestError.invalid_request({"details": f"a JSON-RPC message must be an object, got {kind}"})
    )


class GuardedReader(asyncio.StreamReader):
    """The reader the SDK's transport sees: :meth:`readuntil` returns the next line of ``source``
    that is one JSON object, answering every other line on ``writer`` on the way.

    It filters inline, in the SDK's own read call, rather than through a pump task and a second
    buffer: a request reaches the SDK with no extra event-loop hop (a prompt's think card and a
    cancel each arrive that much sooner). The SDK calls ``readuntil(b"\n")`` and, only after a
    ``LimitOverrunError`` (which this reader never raises: over-long lines are answered here),
    ``readexactly``. It is a :class:`asyncio.StreamReader` only because the SDK checks for one;
    its own buffer stays empty.
    """

    def __init__(self, source: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__()
        self._source = source
        self._writer = writer

    def _answer(self, message: Any) -> None:
        if message is not None and not self._writer.is_closing():
            self._writer.write((json.dumps(message, separators=(",", ":")) + "\n").encode())

    async def readline(self) -> bytes:
        """The next single-object line (ending in a newline), or ``b""`` at the end of input."""
        while True:
            try:
                line = await self._source.readline()
            except ValueError as exc:  # longer than the reader's limit: dropped, answered
                log.warning("dropped an over-long JSON-RPC line: %s", exc)
                self._answer(_error(RequestError.parse_error({"details": "message too long"})))
                continue
            except ConnectionError as exc:
                log.warning("protocol input ended: %s", redact_text(str(exc)) or type(exc).__name__)
                return b""
            if not line:
                return b""
            passes, response = classify_line(line)
            if passes:
                return line if line.endswith(b"\n") else line + b"\n"
            self._answer(response)

    async def readuntil(self, separator: Any = b"\n") -> bytes:
        if bytes(separator) != b"\n":
            raise ValueError("the JSON-RPC guard reads newline-delimited lines only")
        line = await self.readline()
        if not line:
            raise asyncio.IncompleteReadError(b"", None)
        return line

    async def readexactly(self, n: int) -> bytes:
        raise asyncio.IncompleteReadError(b"", n)

    def at_eof(self) -> bool:
        return self._source.at_eof()


def guard_reader(source: asyncio.StreamReader, writer: asyncio.StreamWriter) -> GuardedReader:
    """Return the reader to hand the SDK: only the single-object lines of ``source``; every other
    line is answered on ``writer``."""
    return GuardedReader(source, writer)
