"""Redact passes 1-3: PEM private-key blocks, credentials carried by URLs, provider token shapes.

Each pass is a handful of literal-anchored, bounded regex scans (see the package docstring for
why every repetition is bounded).
"""

from __future__ import annotations

import re
from typing import Any, Final

from acp_adapter.safety.redact.placeholder import REDACTED
from acp_adapter.safety.redact.shapes import BOUNDARY, PROVIDER_TRIGGERS, SPECIAL_SHAPES, grouped_patterns
from acp_adapter.safety.redact.textops import _extend

# ---------------------------------------------------------------------------------------
# Pass 1: PEM private key blocks
# ---------------------------------------------------------------------------------------

_PEM_BEGIN: Final = re.compile(r"-----BEGIN[A-Z0-9 ]{0,48}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END: Final = re.compile(r"-----END[A-Z0-9 ]{0,48}PRIVATE KEY(?: BLOCK)?-----")


def private_key_blocks(text: str, stop: int) -> tuple[int, int | None] | None:
    """The first private-key block that :func:`redact_text` would find open at ``stop``: (start of
    its BEGIN marker, end of its END marker or None when there is none yet), else None.

    For the stream redactor, which must not cut a block that this module redacts as one unit."""
    pos = 0
    while text.find("-----BEGIN", pos, stop) != -1:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None or begin.start() >= stop:
            return None
        end = _PEM_END.search(text, begin.end())
        if end is None:
            return begin.start(), None
        if end.end() > stop:
            return begin.start(), end.end()
        pos = end.end()
    return None


def private_key_end(text: str) -> int | None:
    """End of the first private-key END marker in ``text`` (None if there is none)."""
    end = _PEM_END.search(text)
    return None if end is None else end.end()


def _redact_pem(text: str) -> str:
    """Replace whole private-key blocks; an unterminated one runs to the end of input.

    A truncated key (tool output cut at a size limit) is still a key, hence the fail-closed
    rule for a missing END line.  Works on real and ``\\n``-escaped (JSON) newlines alike
    because it never looks at line structure.
    """
    if "-----BEGIN" not in text:
        return text
    out: list[str] = []
    last = 0
    pos = 0
    while True:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None:
            break
        out.append(text[last : begin.start()])
        out.append(REDACTED)
        end = _PEM_END.search(text, begin.end())
        if end is None:
            last = len(text)
            break
        last = pos = end.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# ---------------------------------------------------------------------------------------
# Pass 2: credentials carried by URLs
# ---------------------------------------------------------------------------------------

# Anchored on the literal ``://`` so the scan is fast; each alternative is bounded.
_URL: Final = re.compile(
    r"://(?:"
    r"(?<=secret://)(?P<sref>[^\s\"'<>`]{1,512})"
    r"|hooks\.slack\.com/(?:services|workflows|triggers)/(?P<slack>[A-Za-z0-9_/-]{8,512})"
    r"|(?:discord(?:app)?\.com)/api/webhooks/(?P<discord>[0-9]{5,30}/[A-Za-z0-9_-]{20,200})"
    r"|[^\s:/@?#\"'<>`\[\]]{0,256}:(?P<pw>[^\s/@?#\"'<>`]{1,512})@"
    r")"
)


def _url_repl(m: re.Match[str]) -> str:
    """Replace only the named secret group of a URL match, keeping scheme, user and host."""
    whole = m.group(0)
    name = m.lastgroup or ""
    start, end = m.span(name)
    offset = m.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def _redact_urls(text: str) -> str:
    """Hide the password of ``scheme://user:pass@host`` and secret-bearing URL paths."""
    if "://" not in text:
        return text
    return _URL.sub(_url_repl, text)


# ---------------------------------------------------------------------------------------
# Pass 3: provider token shapes
# ---------------------------------------------------------------------------------------

# Each pattern starts with a literal so ``re`` can skip ahead with its prefix scan; the
# look-behind that follows the literal rejects starts inside a longer token (which also
# keeps runs like ``eyJeyJeyJ...`` linear).  A placeholder's brackets count as token
# characters in these boundary checks: a placeholder stands where token characters were,
# so a second pass must see the same boundaries as the first (idempotence).  ``back``
# widens the region to the left for patterns whose literal is not the token's first
# character.
_SHAPES: Final[tuple[tuple[re.Pattern[str], int], ...]] = (
    # GitHub: classic tokens and fine-grained personal access tokens.
    (re.compile(r"gh(?<![\]A-Za-z0-9_]gh)[pousr]_[A-Za-z0-9]{20,255}"), 0),
    (re.compile(r"github_pat_(?<![\]A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{20,255}"), 0),
    # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-); a digit is required so
    # that kebab-case words starting with ``sk-`` survive.
    (
        re.compile(r"sk-(?<![\]A-Za-z0-9_-]sk-)(?=[A-Za-z_-]{0,254}[0-9])[A-Za-z0-9_-]{20,512}"),
        0,
    ),
    # Stripe secret / restricted / publishable keys.
    (
        re.compile(r"k_(?<=[spr]k_)(?<![\]A-Za-z0-9_][spr]k_)(?:live|test)_[A-Za-z0-9]{10,255}"),
        1,
    ),
    # Stripe webhook signing secrets.
    (re.compile(r"whsec_(?<![\]A-Za-z0-9_]whsec_)[A-Za-z0-9+/=]{20,255}"), 0),
    # AWS access key ids (exact length) and Google API keys.
    (
        re.compile(
            r"A(?<![\]A-Za-z0-9]A)(?:(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9\[])"
            r"|Iza[A-Za-z0-9_-]{30,255})"
        ),
        0,
    ),
    # Slack bot/user/app tokens.
    (re.compile(r"x(?<![\]A-Za-z0-9_-]x)(?:ox[abprse]|app)-[A-Za-z0-9-]{10,255}"), 0),
    # JSON Web Tokens: three base64url segments, the header starting with ``{"``.
    (
        re.compile(
            r"eyJ(?<![\]A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{10,4096}\.[A-Za-z0-9_-]{2,16384}\.[A-Za-z0-9_-]{0,4096}"
        ),
        0,
    ),
    # Google OAuth access tokens.
    (re.compile(r"ya29\.(?<![\]A-Za-z0-9_-]ya29\.)[A-Za-z0-9_-]{20,4096}"), 0),
    # GitLab personal / deploy / runner / trigger tokens.
    (
        re.compile(
            r"gl(?<![\]A-Za-z0-9_]gl)(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas)-[A-Za-z0-9_-]{20,255}"
        ),
        0,
    ),
    # Hugging Face.
    (re.compile(r"hf_(?<![\]A-Za-z0-9_]hf_)[A-Za-z0-9]{30,255}"), 0),
    # npm.
    (re.compile(r"npm_(?<![\]A-Za-z0-9_]npm_)[A-Za-z0-9]{36,255}"), 0),
    # PyPI upload tokens (macaroons).
    (re.compile(r"pypi-AgEI(?<![\]A-Za-z0-9_-]pypi-AgEI)[A-Za-z0-9_-]{20,4096}"), 0),
    # SendGrid.
    (re.compile(r"SG\.(?<![\]A-Za-z0-9_.-]SG\.)[A-Za-z0-9_-]{16,64}\.[A-Za-z0-9_-]{16,128}"), 0),
    # DigitalOcean personal / OAuth / refresh tokens.
    (re.compile(r"_v1_(?<=do[por]_v1_)(?<![\]A-Za-z0-9_]do[por]_v1_)[a-f0-9]{64}"), 3),
    # Twilio API key SIDs.
    (re.compile(r"SK(?<![\]A-Za-z0-9]SK)[0-9a-fA-F]{32}(?![A-Za-z0-9\[])"), 0),
)


def _sub_back(pattern: re.Pattern[str], back: int, text: str) -> str:
    """Like ``pattern.sub(REDACTED, text)`` with each match widened ``back`` characters left."""
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        start = max(m.start() - back, last)
        out.append(text[last:start])
        out.append(REDACTED)
        last = m.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


_GROUPED_SHAPES: Final = grouped_patterns()
_SPECIAL_SHAPES: Final = tuple((re.compile(p), back, keep) for p, back, keep in SPECIAL_SHAPES)
_KEEP_REPL: Final = {keep: (lambda m, k=keep: m.group(0)[:k] + REDACTED) for keep in range(1, 4)}

# Discord bot tokens: ``<base64 user id, 23-27>.<6>.<27-38>``, the id starting with M, N or O.
# There is no literal prefix, so the scan is anchored on the first dot and a fixed-width
# look-behind; the start of the first segment is then found by a bounded walk to the left.
_DISCORD: Final = re.compile(
    r"\.(?<=[A-Za-z0-9_-]{23}\.)[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_\[-])"
)
_TOKEN_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _redact_discord(text: str) -> str:
    if "." not in text:
        return text
    out: list[str] = []
    last = 0
    for m in _DISCORD.finditer(text):
        start = m.start() - 23
        floor = max(m.start() - 28, last)
        while start > floor and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        if (
            m.start() - start > 27
            or text[start] not in "MNO"
            or (start > 0 and (text[start - 1] in _TOKEN_CHARS or text[start - 1] in ".]"))
        ):
            continue
        out.append(text[last:start])
        out.append(REDACTED)
        last = m.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _sub_grouped(pattern: re.Pattern[str], table: tuple[tuple[str, int], ...], text: str) -> str:
    """Replace the prefixed tokens one grouped scan finds (see ``redact_shapes.grouped_patterns``)."""
    out: list[str] = []
    last = 0
    for m in pattern.finditer(text):
        _prefix, k = table[int((m.lastgroup or "g0")[1:])]
        start = m.start() - k
        if start < last or (start > 0 and text[start - 1] in BOUNDARY):
            continue
        out.append(text[last:start])
        out.append(REDACTED)
        last = m.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# AGH claim tokens (the first secret family AGH's bridges redact): ``agh_claim_`` + a base64url
# body, which may hold ``-`` and ``_`` (AGH's own tests use ``agh_claim_raw-claim-value``). The
# prefix alone identifies one, so every form is caught: bare, ``--claim X``, ``--claim=X``,
# ``"claim": "X"``, a query string.
_CLAIM: Final = re.compile(r"agh_claim_(?<![\]A-Za-z0-9_-]agh_claim_)[A-Za-z0-9_-]{4,4096}")
_CLAIM_MORE: Final = re.compile(r"[A-Za-z0-9_-]{1,4096}")


def _redact_claims(text: str) -> str:
    """Replace AGH claim tokens; a body longer than one bounded match is walked to its end."""
    if "agh_claim_" not in text:
        return text
    out: list[str] = []
    last = 0
    for m in _CLAIM.finditer(text):
        if m.start() < last:
            continue
        out.append(text[last : m.start()])
        out.append(REDACTED)
        last = _extend(text, m.end(), _CLAIM_MORE)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


# AWS secret access keys have no prefix: 40 characters of base64 (``[A-Za-z0-9/+]``). Alone that is
# indistinguishable from a SHA-1 or a path, so one is taken only right after the word ``aws`` or
# ``secret`` (or an identifier starting with one: ``AWS_SECRET_ACCESS_KEY``), with at most five
# connecting words between (``aws secret key is …``, ``secret: …``, ``the AWS secret access key = …``),
# and only when it mixes upper and lower case: a git SHA-1 (lower-case hex) next to "secret" is
# left alone, while a random 40-character key lacks either case with odds of about 1e-9.
_AWS_GAP: Final = r"(?:[ \t]{1,4}|[ \t]{0,4}[:=][ \t]{0,4})"
_AWS_WORDS: Final = (
    "is|was|are|be|to|set|now|here|new|old|the|my|your|our|its|of|for|aws|iam|s3|secret|access|key|keys"
    "|value|id|account|token"
)
_AWS_TAIL: Final = (
    r"[a-z0-9_-]{0,40}(?:"
    + _AWS_GAP
    + r"(?:"
    + _AWS_WORDS
    + r")(?![a-z0-9_-])){0,5}"
    + _AWS_GAP
    + r"[\"'`]?(?P<v>[a-z0-9/+]{40})(?![a-z0-9/+=_-])(?!\.[a-z0-9])"
)
_AWS_PROSE: Final = (
    re.compile(r"aws(?<![a-z0-9]aws)" + _AWS_TAIL),
    re.compile(r"secret(?<![a-z0-9]secret)" + _AWS_TAIL),
)


def _aws_prose_spans(text: str, low: str) -> list[tuple[int, int]]:
    """Spans of AWS secret access keys written next to the word ``aws`` / ``secret`` in prose
    (``low`` is the length-preserving lower-case copy of ``text``)."""
    spans: list[tuple[int, int]] = []
    for pattern in _AWS_PROSE:
        for m in pattern.finditer(low):
            start, end = m.span("v")
            value = text[start:end]
            if value.lower() != value and value.upper() != value:
                spans.append((start, end))
    return spans


# Lower-cased literals, at least one of which every token shape of pass 3 needs (the prefix of
# each shape, or a literal of its look-behind); keep in sync with the shapes. A short text with
# none of them skips that pass's few dozen scans (see :func:`_redact_shapes`).
_SHAPE_LITERALS: Final = (
    "agh_claim_",
    "github_pat_",
    "sk-",
    "k_live_",
    "k_test_",
    "whsec_",
    "akia",
    "asia",
    "abia",
    "acca",
    "aiza",
    "xox",
    "xapp-",
    "eyj",
    "ya29.",
    "hf_",
    "npm_",
    "pypi-",
    "sg.",
    "_v1_",
    *PROVIDER_TRIGGERS,
)
_SHAPE_PATTERNS: Final = (
    r"gh[pousr]_",
    r"gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas)-",
    r"sk[0-9a-f]{32}",
    # Discord tokens, anchored on their first dot so other positions fail at one character
    r"\.(?<=[a-z0-9_-]{23}\.)[a-z0-9_-]{6}\.",
)


def _trie_pattern(words: tuple[str, ...]) -> str:
    """One regex for a set of literals with shared prefixes merged (``a(?:kia|sia|…)``).

    ``re`` tries the branches of an alternation one by one at every position; merged, a position
    costs one test per distinct next character instead of one per literal.
    """
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        if "" in node:  # a literal ends here: the rest is optional (a match already)
            return ""
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return build(trie)


_SHAPE_TRIGGER: Final = re.compile("|".join((_trie_pattern(_SHAPE_LITERALS), *_SHAPE_PATTERNS)))
"""Matches where a token shape may start (the screen of pass 3 for short texts)."""
#: Texts shorter than this are screened before the shape pass; a longer text is scanned by each
#: shape anyway, and screening it would cost one more scan, slower than the literal searches.
_SHAPE_SCREEN_BELOW: Final = 8192


def _redact_shapes(text: str) -> str:
    """Replace tokens recognisable by their shape alone, wherever they appear.

    A short text without any shape trigger skips the pass: the stream redactor sends every
    released piece that holds a key needle (``token expired``, ``secret_sauce.py``) through all
    the passes, and the shapes' few dozen scans were most of that piece's cost."""
    if len(text) < _SHAPE_SCREEN_BELOW and _SHAPE_TRIGGER.search(text.lower()) is None:
        return text
    text = _redact_claims(text)
    for pattern, back in _SHAPES:
        text = pattern.sub(REDACTED, text) if back == 0 else _sub_back(pattern, back, text)
    for pattern, table in _GROUPED_SHAPES:
        text = _sub_grouped(pattern, table, text)
    for pattern, back, keep in _SPECIAL_SHAPES:
        if keep:
            text = pattern.sub(_KEEP_REPL[keep], text)
        elif back:
            text = _sub_back(pattern, back, text)
        else:
            text = pattern.sub(REDACTED, text)
    return _redact_discord(text)
