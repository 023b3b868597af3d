"""Redaction of streamed text, where a secret may be split across chunks.

Redacting each answer chunk on its own would miss ``Authorization: Bearer`` arriving in one chunk
and the token in the next, or ``sshpass -p`` in one and the password in the next.
:class:`StreamRedactor` holds back just enough text that every piece of text it releases is
redacted with everything its redaction depends on in view, so the concatenated output equals
:func:`~acp_adapter.safety.redact.redact_text` of the whole text however the stream was chunked (within
the bounds below). What it holds, and why:

* **The last partial word, always.** A token shape (``ghp_…``, ``agh_claim_…``, ``user:pw@host``)
  never contains a blank, so a blank is a safe place to cut.
* **A partial line with a trigger in it, until the line ends.** A trigger is where a redaction may
  reach across a blank: a secret-named key (``password: …``, ``"api key": "…"``, ``--token …``),
  ``Bearer``, an ``=``, or a command word whose credential comes later on the line: ``curl -u``,
  ``mysql``/``mariadb``/``sshpass -p``, ``set``/``setenv``/``config``, ``--password-stdin`` and
  ``echo``/``printf`` (the password of ``echo PW | docker login --password-stdin`` comes *before*
  its trigger, so the ``echo`` holds it), ``aws``/``secret`` (an AWS secret key in prose).
* **A quoted phrase that may still turn into a key** (``"Client Secret": …``): a cut is never
  placed within a quote and the three words after it.
* **A private-key block**, from the ``-----BEGIN`` line until its ``-----END`` line.
* **An OAuth window**: a ``code`` key is an authorization code only within
  ``OAUTH_WINDOW`` characters of an OAuth word (``grant_type`` …), on any line, so text around
  either is held until that window has arrived.

Every hold is bounded: a newline ends the line holds; beyond :data:`MAX_HOLD` characters held the
text is released (redacted) up to its last blank anyway, so a hostile stream cannot stall the
answer or grow memory; a private key longer than ``PEM_MAX_HOLD`` is released as one placeholder
and the rest of the block is dropped until its END line. Beyond those bounds the guarantee is the
weaker "what each released piece holds is redacted". Ordinary prose still streams word by word.
``flush()`` releases the rest (redacted) at the end of a message, before a tool card, and at the
end of the turn.
"""

from __future__ import annotations

import re
from typing import Final

from acp_adapter.safety.redact.engine import (
    is_sensitive_key,
    private_key_blocks,
    private_key_end,
    redact_text,
)
from acp_adapter.safety.redact.keyed import _NEEDLES
from acp_adapter.safety.redact.toolargs import TOOL_LITERALS

#: Most text held back on one line (characters). Longer than any command-line form's reach
#: (the redactor looks 2,048 characters along a line from ``mysql`` or back from
#: ``--password-stdin``), so every held form is caught whole; beyond it the line is released
#: (redacted) up to its last blank, so a pathological stream cannot stall the answer forever.
MAX_HOLD: Final = 4096
#: Most text held back for one unterminated private-key block: ``PEM_HOLD_FACTOR * max_hold``
#: characters (64 KiB by default); beyond it the block is released as one placeholder and the
#: rest of its body is dropped until its END line.
PEM_HOLD_FACTOR: Final = 16
PEM_MAX_HOLD: Final = PEM_HOLD_FACTOR * MAX_HOLD
#: How far an OAuth word and a ``code`` key may be apart and still belong together (characters);
#: the window :mod:`acp_adapter.safety.redact` uses.
OAUTH_WINDOW: Final = 512

# Triggers that hold their partial line until it ends (searched in the lower-cased line). Each
# needs a character after it, so a trigger seen once stays a trigger as the line grows (a word at
# the very end of the buffer is the partial word, held anyway).
# A word counts as a trigger after any character the command-line forms let stand before their
# command word (``.echo PW | … --password-stdin`` is redacted whole), so the word's line is held
# whenever one-shot redaction could reach back to it; a word glued to more name characters is not.
# The programs that take a password as an argument of their own (``7z -pPASS``, ``net use … PASS``)
# hold their line too: the password may come several words after the program's name.
_LINE_TRIGGER: Final = re.compile(
    r"=|-u|--password-stdin|<<<|-----begin"
    r"|(?<![a-z0-9_-])(?:mysql(?:dump|admin|import|check|sh)?|mariadb(?:-dump)?|sshpass|echo|printf|setenv|set|config|aws|secret"
    r"|login|docker|podman|buildah|skopeo|nerdctl|oras|helm|az|redis-cli|htpasswd|sudo|"
    + "|".join(re.escape(name) for name in TOOL_LITERALS)
    + r")(?=[^a-z0-9])"
)
# The key needles of the redactor's key/value pass. The identifier around one holds its line when
# what follows may start an assignment (a separator or a quote), or when it names a secret and a
# blank follows (``--token value``, ``DB_PASSWORD value``, ``Bearer value``).
_NEEDLE: Final = re.compile("|".join(_NEEDLES))
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_ASSIGNING: Final = frozenset("=:\"'`\\")
_BLANKS: Final = " \t"
# A quote followed by up to three words and blanks: a quoted key phrase (``"Client Secret": …``)
# may still be being written, so no cut goes inside one.
_OPEN_PHRASE: Final = re.compile(r"[\"'](?:[A-Za-z0-9_.-]{1,20} ){0,3}[A-Za-z0-9_.-]{0,20}\Z")
_PHRASE_REACH: Final = 4 * 21 + 1
_OAUTH_WORDS: Final = re.compile(r"grant_type|redirect_uri|code_verifier|authorization_code|client_id")
_OAUTH_WORD_MAX: Final = len("authorization_code")
# A ``code`` key whose value may follow: a separator, a quote, blanks (then maybe a separator), or
# the end of what has arrived.
_CODE_KEY: Final = re.compile(r"(?<![a-z0-9_.])-{0,2}code(?=[ \t]*(?:[=:\"'`\\]|\Z)|\Z)")
_PEM_END_REACH: Final = 96


def _line_hold(line: str) -> tuple[bool, int]:
    """(hold the whole partial ``line``, else the earliest position a cut may not pass).

    The second value covers a needle identifier whose fate the next characters decide (``code``
    followed by blanks only so far): the text from the identifier on is held until they arrive."""
    low = line.lower()
    if _LINE_TRIGGER.search(low) is not None:
        return True, len(line)
    n = len(low)
    limit = n
    for m in _NEEDLE.finditer(low):
        start, end = m.start(), m.end()
        while start and low[start - 1] in _KEY_CHARS:
            start -= 1
        while end < n and low[end] in _KEY_CHARS:
            end += 1
        if end >= n:
            continue  # the partial word: held anyway
        nxt = low[end]
        if nxt in _ASSIGNING:
            return True, n
        if nxt in _BLANKS:
            if is_sensitive_key(line[start:end].lstrip("-")):
                return True, n
            j = end
            while j < n and low[j] in _BLANKS:
                j += 1
            if j >= n:
                limit = min(limit, start)
            elif low[j] in "=:":
                return True, n
    return False, limit


class StreamRedactor:
    """Feed chunks in, get redacted text out that is safe to send now."""

    def __init__(self, max_hold: int = MAX_HOLD) -> None:
        self._buf = ""
        self._max_hold = max_hold
        self._pem_max_hold = PEM_HOLD_FACTOR * max_hold
        # The last character released: redaction looks one character to the left of a key, so the
        # next piece is redacted with it in front (a blank or newline; anything else is not kept).
        self._prev = ""
        # ``_buf`` starts with a line known to need holding until its end (saves rescanning it).
        self._line_held = False
        # ``_buf`` starts with an unterminated private-key block (saves rescanning it).
        self._pem_held = False
        # Inside a private-key block released early (past its hold): drop text until its END.
        self._dropping_pem = False

    @property
    def pending(self) -> str:
        return self._buf

    def feed(self, text: str) -> str:
        if not text:
            return ""
        self._buf += text
        if self._dropping_pem:
            self._skip_pem_body()
            if self._dropping_pem:
                return ""
        elif self._pem_held:
            fresh = self._buf[-len(text) - _PEM_END_REACH :]
            if len(self._buf) <= self._pem_max_hold and "-----END" not in fresh:
                return ""
        elif self._line_held and "\n" not in text and len(self._buf) <= self._max_hold:
            return ""
        return self._release()

    def flush(self) -> str:
        if self._dropping_pem:
            self._skip_pem_body()
        out = "" if self._dropping_pem else self._emit(self._buf)
        self._buf = ""
        self._dropping_pem = self._pem_held = self._line_held = False
        return out

    # -- internals ---------------------------------------------------------------------------

    def _emit(self, piece: str) -> str:
        if not piece:
            return ""
        prev = self._prev if self._prev in ("\n", " ", "\t") else ""
        self._prev = piece[-1]
        if not prev:
            return redact_text(piece)
        done = redact_text(prev + piece)
        # A leading blank is never part of a redacted span, so it comes back unchanged.
        return done[1:] if done[:1] == prev else redact_text(piece)

    def _skip_pem_body(self) -> None:
        """Drop the body of a private-key block whose placeholder was already released."""
        end = private_key_end(self._buf)
        if end is None:
            self._buf = self._buf[-_PEM_END_REACH:]  # an END marker may be split across chunks
            return
        self._buf = self._buf[end:]
        self._dropping_pem = False
        self._prev = "-"

    def _release(self) -> str:
        buf = self._buf
        n = len(buf)
        self._pem_held = self._line_held = False
        cut, line_held = self._safe_cut(buf)
        block = private_key_blocks(buf, cut)
        if block is not None:
            begin, end = block
            begin_line = buf.rfind("\n", 0, begin) + 1
            if n - begin_line <= self._pem_max_hold:
                cut = begin_line
                self._pem_held = cut == 0 and end is None
            elif end is not None:
                cut = end  # too long to hold: release the whole block (one placeholder)
            else:
                # Too long to hold and no END yet: release everything (the block becomes one
                # placeholder, as in redact_text of the whole text) and drop its body until END.
                self._buf = ""
                self._dropping_pem = True
                return self._emit(buf)
        elif n - cut > self._max_hold:
            blank = max(buf.rfind(" "), buf.rfind("\t"), buf.rfind("\n"))
            cut = blank + 1 if blank + 1 > cut else n
            late = private_key_blocks(buf, cut)
            if late is not None:
                cut = buf.rfind("\n", 0, late[0]) + 1
            line_held = False
        # the held line now starts the buffer, so the next feeds need not rescan it
        self._line_held = line_held and cut == buf.rfind("\n") + 1 and cut < n
        self._buf = buf[cut:]
        return self._emit(buf[:cut])

    def _safe_cut(self, buf: str) -> tuple[int, bool]:
        """The longest prefix of ``buf`` whose redaction cannot depend on text still to come, and
        whether the partial last line is held whole."""
        line_start = buf.rfind("\n") + 1
        line = buf[line_start:]
        held, limit = _line_hold(line)
        if held:
            cut = line_start
        else:
            limit += line_start
            blank = max(line.rfind(" "), line.rfind("\t"))
            cut = line_start + blank + 1 if blank != -1 else line_start
            if cut > limit:
                blank = max(buf.rfind(" ", line_start, limit), buf.rfind("\t", line_start, limit))
                cut = blank + 1 if blank != -1 else line_start
            cut = self._outside_phrase(buf, line_start, cut)
        oauth_cut = self._outside_oauth(buf, cut)
        return oauth_cut, held and oauth_cut == cut

    @staticmethod
    def _outside_phrase(buf: str, line_start: int, cut: int) -> int:
        """Move ``cut`` left of a quote that may open a key phrase still being written."""
        while cut > line_start:
            window = buf[max(line_start, cut - _PHRASE_REACH) : cut]
            m = _OPEN_PHRASE.search(window)
            if m is None:
                return cut
            quote = cut - len(window) + m.start()
            blank = max(buf.rfind(" ", line_start, quote), buf.rfind("\t", line_start, quote))
            cut = blank + 1 if blank != -1 else line_start
        return cut

    @staticmethod
    def _outside_oauth(buf: str, cut: int) -> int:
        """Keep an OAuth word and every ``code`` key within the window of it in one piece.

        Each occurrence claims a span of text that must be redacted together: a ``code`` key the
        window around it, an OAuth word the window after it (a ``code`` key before it claims it
        anyway). A cut inside a span, or before one whose end has not arrived, moves to the start
        of the span's first line."""
        if cut == 0:
            return 0
        low = buf.lower()
        if "code" not in low and _OAUTH_WORDS.search(low) is None:
            return cut
        spans = [(m.start(), m.start() + OAUTH_WINDOW + 5) for m in _OAUTH_WORDS.finditer(low)]
        spans += [
            (max(0, m.start() - OAUTH_WINDOW), m.end() + OAUTH_WINDOW + _OAUTH_WORD_MAX)
            for m in _CODE_KEY.finditer(low)
        ]
        moved = True
        while moved and cut:
            moved = False
            for start, end in spans:
                if start < cut < end:
                    cut = buf.rfind("\n", 0, start) + 1
                    moved = True
        return cut
