"""The one way out to a person's eyes: text from anywhere, made safe to show.

Every string a command prints — a card's title, a tool's output, the model's answer, a chat
member's message kept as a session title, a foreign agent's stderr, an audit entry — may hold
characters a terminal obeys rather than shows, or that a person cannot see at all: ``ESC ] 0;``
sets the window title, ``ESC ] 52;`` writes the clipboard, ``ESC [2J`` clears the screen, U+009B
is a one-byte CSI, U+202E turns the rest of a line around so ``txt.exe`` reads as ``exe.txt``
(and ``rm -rf data`` as ``atad fr- mr``), a zero-width space makes two different words look the
same, and tag characters (U+E0000–U+E007F) carry a whole hidden sentence. :func:`visible_text`
keeps every character that is only shown and turns every one that acts or hides into something
visible. This module is the one place that knows these character classes:

* C0 controls (but ``\\n`` and ``\\t``) become their Control Pictures (``ESC`` → ``␛``);
  ``\\r\\n`` is a line end (``\\n``), a lone ``\\r`` is shown ``␍`` (it would overwrite the line);
* DEL, the C1 controls (U+0080–U+009F), every Unicode format character (category Cf: the bidirectional
  controls U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C; the zero-width U+200B–U+200D,
  U+2060, U+FEFF; the soft hyphen, the invisible operators …), the tag characters
  U+E0000–U+E007F, the blank letters (Hangul fillers U+115F, U+1160, U+3164, U+FFA0), the
  combining grapheme joiner U+034F, the line/paragraph separators U+2028/U+2029 and lone
  surrogates are shown as JSON-style escapes: ``\\u202e``, and a character beyond U+FFFF as its
  surrogate pair ``\\udb40\\udc41``. The escapes are valid in a JSON string and mean the same
  character there, so a JSON text passed through stays the same JSON value.

Variation selectors (U+FE0F makes ``✏️`` an emoji) are kept: they only choose how the character
before them is drawn. Pure and total (any ``str`` in, no exception out), idempotent, and fast
(one ``str.translate``). The terminal front-ends call it on data before their own styling and
escape sequences are added; everything else reaches the terminal through a
:class:`SafeTextStream` (the command line puts one in front of ``sys.stderr``, and of
``sys.stdout`` for commands that print plain text); the web page and the chat bridges show text
through :func:`visible_text` too.
"""

from __future__ import annotations

from typing import Any, TextIO

#: Unicode format characters (general category Cf), invisible by definition: the bidirectional
#: controls and the zero-width characters are among them. A test holds this list to the running
#: Python's Unicode database.
_FORMAT_CHARACTERS = (
    0x00AD,
    *range(0x0600, 0x0606),
    0x061C,
    0x06DD,
    0x070F,
    0x0890,
    0x0891,
    0x08E2,
    0x180E,
    *range(0x200B, 0x2010),
    *range(0x202A, 0x202F),
    *range(0x2060, 0x2065),
    *range(0x2066, 0x2070),
    0xFEFF,
    *range(0xFFF9, 0xFFFC),
    0x110BD,
    0x110CD,
    *range(0x13430, 0x13440),
    *range(0x1BCA0, 0x1BCA4),
    *range(0x1D173, 0x1D17B),
)
#: Characters that are drawn as nothing though they are not format characters: the tag block
#: (its unassigned code points included), the Hangul fillers, the combining grapheme joiner, and
#: the line/paragraph separators (a terminal may start a new line at them, or not).
_INVISIBLE = (*range(0xE0000, 0xE0080), 0x115F, 0x1160, 0x3164, 0xFFA0, 0x034F, 0x2028, 0x2029)
#: Half of a UTF-16 pair on its own (a foreign agent's JSON can hold one): no encoding can print it.
_LONE_SURROGATES = range(0xD800, 0xE000)


def _escape(code: int) -> str:
    """``\\u202e``; beyond U+FFFF the UTF-16 pair ``\\udb40\\udc41``, as JSON spells it."""
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if code not in (0x09, 0x0A):
            table[code] = chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC, ␍ for CR)
    for code in (*range(0x7F, 0xA0), *_FORMAT_CHARACTERS, *_INVISIBLE, *_LONE_SURROGATES):
        table[code] = _escape(code)
    return table


_TABLE = _table()
#: The code points :func:`visible_text` never lets through (for tests and for callers that check).
UNSAFE = frozenset(_TABLE)


def visible_text(text: str) -> str:
    """``text`` with every character that acts on a terminal or hides from a reader shown instead
    (see the module doc): for any surface a person reads — a terminal, a web page, a chat."""
    if not isinstance(text, str):
        text = str(text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_TABLE)


def terminal_safe(text: str) -> str:
    """:func:`visible_text`, by the name the terminal front-ends call it."""
    return visible_text(text)


def is_shown_as_is(char: str) -> bool:
    """Whether one character is drawn as itself (not a control, not invisible): what a label that
    must be shown verbatim may hold."""
    return ord(char) not in UNSAFE


class SafeTextStream:
    """A text stream whose every ``write`` goes through :func:`visible_text` (everything else is
    the wrapped stream's): the command line puts it in front of ``sys.stderr`` — messages, errors,
    a foreign agent's stderr tail, log lines — and of ``sys.stdout`` for commands that print plain
    text, so no path to the terminal is left unguarded by accident. JSON written through it stays
    the same JSON value (the escapes are JSON's own)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible_text(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def wrapped(self) -> TextIO:
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stream(stream: TextIO) -> TextIO:
    """``stream`` behind a :class:`SafeTextStream` (once: an already guarded stream is returned)."""
    if isinstance(stream, SafeTextStream) or stream is None:
        return stream
    return SafeTextStream(stream)  # type: ignore[return-value]


_JSON_TABLE = {code: shown for code, shown in _TABLE.items() if code >= 0x7F}  # C0: json.dumps's own


def json_line_safe(line: str) -> str:
    """A line of JSON (from ``json.dumps``, which escapes C0 itself) with DEL, C1, the format,
    invisible and tag characters and lone surrogates escaped too (``\\u202e``): still the same
    JSON value, now also safe to show (and writable in UTF-8: a lone surrogate is not)."""
    return line.translate(_JSON_TABLE)
