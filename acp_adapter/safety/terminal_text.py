"""The one way out to a terminal: text from anywhere, made safe to print.

Every string a command prints — a card's title, a tool's output, the model's answer, a chat
member's message kept as a session title, a foreign agent's stderr, an audit entry — may hold
bytes a terminal obeys rather than shows: ``ESC ] 0;`` sets the window title, ``ESC ] 52;``
writes the clipboard, ``ESC [2J`` clears the screen, U+009B is a one-byte CSI, U+202E turns the
rest of a line around so ``txt.exe`` reads as ``exe.txt``. :func:`terminal_safe` keeps every
character that is only shown and turns every one that acts into something visible:

* C0 controls (but ``\\n`` and ``\\t``) become their Control Pictures (``ESC`` → ``␛``), DEL ``␡``;
  ``\\r\\n`` is a line end (``\\n``), a lone ``\\r`` is shown ``␍`` (it would overwrite the line);
* C1 controls (U+0080–U+009F), the bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E,
  U+200F, U+061C) and the line/paragraph separators U+2028/U+2029 are shown as ``\\u009b``-style
  escapes.

Pure and total (any ``str`` in, no exception out), idempotent, and fast (one ``str.translate``).
The terminal front-ends call it on data before their own styling and escape sequences are added;
everything else reaches the terminal through a :class:`SafeTextStream` (the command line puts one
in front of ``sys.stderr``, and of ``sys.stdout`` for commands that print plain text).
"""

from __future__ import annotations

from typing import Any, TextIO

_BIDI_AND_SEPARATORS = (
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x200E,
    0x200F,
    0x061C,
    0x2028,
    0x2029,
)


def _table() -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if code not in (0x09, 0x0A):
            table[code] = chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC, ␍ for CR)
    table[0x7F] = "\u2421"  # ␡
    for code in (*range(0x80, 0xA0), *_BIDI_AND_SEPARATORS):
        table[code] = f"\\u{code:04x}"
    return table


_TABLE = _table()
#: The code points :func:`terminal_safe` never lets through (for tests and for callers that check).
UNSAFE = frozenset(_TABLE)


def terminal_safe(text: str) -> str:
    """``text`` with every control a terminal would act on shown instead (see the module doc)."""
    if not isinstance(text, str):
        text = str(text)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_TABLE)


def is_terminal_safe(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`terminal_safe` would change."""
    return "\r" not in text and not any(ord(ch) in UNSAFE for ch in text)


class SafeTextStream:
    """A text stream whose every ``write`` goes through :func:`terminal_safe` (everything else is
    the wrapped stream's): the command line puts it in front of ``sys.stderr`` — messages, errors,
    a foreign agent's stderr tail, log lines — and of ``sys.stdout`` for commands that print plain
    text, so no path to the terminal is left unguarded by accident."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text))
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


_JSON_TABLE = {code: f"\\u{code:04x}" for code in UNSAFE if code >= 0x7F}


def json_line_safe(line: str) -> str:
    """A line of JSON (from ``json.dumps``, which escapes C0 itself) with DEL, C1 and the bidi
    controls escaped too (``\\u009b``): still the same JSON value, now also safe on a terminal."""
    return line.translate(_JSON_TABLE)


_CHAT_TABLE: dict[int, str | None] = {
    code: (None if 0x80 <= code <= 0x9F or code > 0xFF else shown) for code, shown in _TABLE.items()
}


def chat_safe(text: str) -> str:
    """For a chat platform (Telegram): the C0 controls and DEL shown as pictures, as on a
    terminal, and the C1 and bidirectional controls removed. Never longer than ``text`` (in
    characters and in UTF-16 units), so a message already cut to the platform's limit still fits."""
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_CHAT_TABLE)
