"""Text for the AG-UI endpoint and its web page: nothing in it acts, nothing in it hides.

What the endpoint sends reaches a browser *and* terminals (a client library's example prints the
events as they come). So every string it emits passes :func:`web_visible`:

* **terminal control sequences are removed**, not shown: ``ESC [ … final`` (CSI), ``ESC ] … BEL``
  or ``ESC ] … ESC \\`` (OSC: window titles, clipboard writes, hyperlinks), the other ``ESC x``
  pairs, their one-character C1 forms (U+009B CSI, U+009D OSC … U+009C) and every other C0/C1
  control but ``\\n``, ``\\t`` and ``\\r\\n``;
* **characters that change how the rest reads, or hide, are shown** as ``<U+202E>``: the same
  list the terminal sanitizer escapes (:data:`~acp_adapter.safety.terminal_text.UNSAFE`): the
  bidirectional controls (a right-to-left override turns ``rm -rf data`` into ``atad fr- mr``),
  the zero-width and other format characters, the tag characters (U+E0000–U+E007F: invisible
  ASCII) and the line/paragraph separators. The zero-width joiner and non-joiner stay: emoji and
  several scripts are written with them.

Pure and total (any ``str`` in, no exception out) and idempotent. :func:`web_visible_value`
applies it to every string, key and value, of a JSON-like value.
"""

from __future__ import annotations

import re
from typing import Any, Final

from acp_adapter.safety.terminal_text import UNSAFE

_SEQUENCES: Final = re.compile(
    r"""
      \x1b\[ [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?          # CSI
    | \x1b[\]PX^_] .*? (?:\x07|\x1b\\|\x9c|$)               # OSC, DCS, SOS, PM, APC … terminator
    | \x9b [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]?            # one-character CSI
    | [\x9d\x90\x98\x9e\x9f] .*? (?:\x07|\x1b\\|\x9c|$)     # one-character OSC, DCS …
    | \x1b[\x20-\x2f]*[\x30-\x7e]?                            # any other escape (ESC ( B, ESC c …)
    """,
    re.VERBOSE | re.DOTALL,
)

#: The zero-width joiner and non-joiner: emoji sequences and several scripts are written with them,
#: and a browser draws them right (a terminal shows them escaped).
_JOINERS: Final = frozenset({0x200C, 0x200D})
#: What is shown as ``<U+XXXX>``: every character the terminal sanitizer escapes that is not a
#: control (controls are removed here) — one list of disguising characters for every surface.
_HIDDEN: Final = frozenset(code for code in UNSAFE if code >= 0xA0 and not 0xD800 <= code < 0xE000) - _JOINERS


def _table() -> dict[int, str | None]:
    table: dict[int, str | None] = {code: None for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    for kept in (0x09, 0x0A):
        del table[kept]
    for code in _HIDDEN:
        table[code] = f"<U+{code:04X}>"
    return table


_TABLE: Final = _table()


def web_visible(text: str) -> str:
    """``text`` without terminal control sequences and with its hidden characters shown."""
    if not isinstance(text, str):
        text = str(text)
    if text.isprintable() and text.isascii():
        return text  # the common case: nothing to do
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return _SEQUENCES.sub("", text).translate(_TABLE)


def web_visible_value(value: Any, *, depth: int = 64) -> Any:
    """:func:`web_visible` on every string of a JSON-like value (dict keys included); other leaves
    as they are. Deeper than ``depth`` the value is replaced by a note (it was bounded before)."""
    if isinstance(value, str):
        return web_visible(value)
    if depth <= 0:
        return "[too deep]"
    if isinstance(value, dict):
        return {web_visible(str(k)): web_visible_value(v, depth=depth - 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [web_visible_value(item, depth=depth - 1) for item in value]
    return value
