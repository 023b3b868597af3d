"""Redaction of streamed text, where a secret may be split across chunks.

Redacting each answer chunk on its own would miss ``Authorization: Bearer`` arriving in one chunk
and the token in the next. :class:`StreamRedactor` therefore holds back just enough text to see
every secret whole before it is redacted and released:

* the last partial word is always held (a provider token never straddles a release);
* a partial line that mentions a secret-ish word (``token``, ``password``, ``Bearer``, ``key``,
  ``=``, ``://`` …) is held until its line ends, so ``key = value`` forms are redacted with their
  key in view;
* from a ``-----BEGIN`` marker everything is held until the matching ``-----END`` line.

Ordinary prose still streams word by word. ``flush()`` releases the rest (redacted) at the end of
a message, before a tool card, and at the end of the turn.
"""

from __future__ import annotations

import re

from .redact import redact_text

__all__ = ["StreamRedactor"]

_HOLD_LINE = re.compile(
    r"=|://|@|-----BEGIN|\b(?:auth|bearer|basic|token|secret|passw|pwd|api|key|cookie|credential|sig"
    r"|private|session|client|access|code|x-)",
    re.I,
)
_PEM_BEGIN = "-----BEGIN"
_PEM_END = re.compile(r"-----END[^\n]*-----")
#: Beyond this much held text on one line, release (redacted) up to the last space anyway,
#: so a pathological stream cannot stall the answer forever.
MAX_HOLD = 4096


class StreamRedactor:
    """Feed chunks in, get redacted text out that is safe to send now."""

    def __init__(self, max_hold: int = MAX_HOLD) -> None:
        self._buf = ""
        self._max_hold = max_hold

    @property
    def pending(self) -> str:
        return self._buf

    def feed(self, text: str) -> str:
        self._buf += text
        return self._release()

    def flush(self) -> str:
        out = redact_text(self._buf) if self._buf else ""
        self._buf = ""
        return out

    def _release(self) -> str:
        buf = self._buf
        pem = buf.find(_PEM_BEGIN)
        pem_end = _PEM_END.search(buf, pem) if pem != -1 else None
        if pem != -1 and pem_end is None:
            # hold from the line of the BEGIN marker until its END arrives
            line_start = buf.rfind("\n", 0, pem) + 1
            if len(buf) - line_start <= 16 * self._max_hold:
                self._buf = buf[line_start:]
                return redact_text(buf[:line_start]) if line_start else ""
        cut = buf.rfind("\n") + 1
        tail = buf[cut:]
        if _HOLD_LINE.search(tail) and len(tail) <= self._max_hold:
            keep_from = cut
        else:
            space = max(tail.rfind(" "), tail.rfind("\t"))
            keep_from = cut + space + 1 if space != -1 else cut
            if space == -1 and len(tail) > self._max_hold:
                keep_from = len(buf)
        if pem_end is not None:  # never split a complete key block from its END line
            keep_from = max(keep_from, pem_end.end())
        self._buf = buf[keep_from:]
        return redact_text(buf[:keep_from]) if keep_from else ""
