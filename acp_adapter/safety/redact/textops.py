"""Text operations every redaction pass shares: a lower-case copy whose offsets map 1:1 onto the
original, walking a bounded pattern over a value longer than its bound, and replacing found spans.

Why a module of their own: the passes (shapes, command lines, key/value) each find spans on the
same lower-case copy and hand them to the same replacement; none of them owns these helpers.
"""

from __future__ import annotations

import re
from typing import Final

from acp_adapter.safety.redact.placeholder import REDACTED


def _extend(text: str, end: int, chunk: re.Pattern[str]) -> int:
    """Advance ``end`` over further matches of a bounded ``chunk`` pattern.

    Every pattern here has an upper bound on its repetitions (linear time); when a value
    is longer than that bound, this walks the rest of it chunk by chunk so the tail is
    redacted too.  Each step consumes up to a whole chunk, so the walk is linear as well.
    """
    while True:
        m = chunk.match(text, end)
        if m is None or m.end() == end:
            return end
        end = m.end()


_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    """Lower-case without changing length, so offsets map 1:1 onto the original."""
    low = text.lower()
    if len(low) == len(text):
        return low
    # Only a few characters (e.g. U+0130) grow when lower-cased; fall back to ASCII only.
    return text.translate(_ASCII_LOWER)


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace each maximal union of overlapping spans by one placeholder."""
    spans.sort()
    out: list[str] = []
    last = 0
    cur_start, cur_end = spans[0]
    for start, end in spans[1:]:
        if start < cur_end:
            if end > cur_end:
                cur_end = end
            continue
        out.append(text[last:cur_start])
        out.append(REDACTED)
        last = cur_end
        cur_start, cur_end = start, end
    out.append(text[last:cur_start])
    out.append(REDACTED)
    out.append(text[cur_end:])
    return "".join(out)
