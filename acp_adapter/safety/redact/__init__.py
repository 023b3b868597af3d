"""The one secret redactor of the project.

Everything that leaves the adapter for a client (tool cards, previews, logs, error
messages) may contain whatever the agent or a tool happened to print: tokens pasted on a
command line, ``Authorization`` headers in a curl call, a ``.env`` file that was read,
a stack trace with a connection URL.  Redaction is therefore done in one place, with one
vocabulary of what counts as a secret, so that every surface hides the same things.

Three promises shape the implementation:

* **Keep the label, drop the value.**  ``password=[REDACTED]`` still tells a user which
  setting was involved; only the secret itself goes.
* **Idempotent.**  Output is often redacted again on its way through another layer, so a
  second pass must not change anything (no ``[REDACTED]`` nested in a placeholder).
* **Linear time on any input.**  Tool output is attacker-controllable (a file, a web
  page), so no input may trigger regex backtracking.  Every repetition is bounded, every
  scan starts from a literal (which ``re`` finds with its fast prefix search), and a
  fixed-width look-behind after the literal rejects starts inside a longer run, so a run
  of token characters is examined once.  Values longer than a bound are walked in
  bounded chunks rather than cut short, so their tails do not leak.

The work is split into passes over the current text, in this order: PEM private-key
blocks; credentials carried by URLs (``user:pass@``, webhook paths, ``secret://``);
provider token shapes (GitHub, OpenAI, AWS, ...); and ``key=value`` / header / JSON /
query-parameter forms.  The last pass is driven by a dozen lower-case needles
(``token``, ``secret``, ``pass`` ...): only where one occurs is the key around it
measured, classified with :func:`is_sensitive_key` and its value located.  Short strings,
the bulk of what :func:`redact_value` sees, are first screened with one regex and returned
untouched when no pass could apply.
"""

from __future__ import annotations

import re
from typing import Any, Final

from acp_adapter.safety.redact.cmdline import redact_command_lines
from acp_adapter.safety.redact.shapes import BOUNDARY, PROVIDER_TRIGGERS, SPECIAL_SHAPES, grouped_patterns

__all__ = [
    "REDACTED",
    "is_sensitive_key",
    "is_sensitive_name",
    "private_key_blocks",
    "private_key_end",
    "redact_text",
    "redact_value",
]

REDACTED: Final[str] = "[REDACTED]"
"""Placeholder for a removed secret.

Brackets are deliberate: no value or token pattern below accepts ``[`` as a first
character, which is what makes a second redaction pass a no-op.
"""

# ---------------------------------------------------------------------------------------
# Key classifier
# ---------------------------------------------------------------------------------------

# Words that name a secret on their own, after camelCase / separator splitting.
_SECRET_WORDS: Final = frozenset(
    {
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "pwd",
        "passphrase",
        "apikey",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "setcookie",
        "bearer",
        "verifier",
        "requirepass",
        "masterauth",
        "authorisation",
    }
)
# Lower-case glued spellings (``accesstoken``, ``XAPIKEY``, ``dbpassword``) end like this.
_SECRET_SUFFIXES: Final = (
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signingkey",
    "credential",
    "credentials",
    "cookie",
    "verifier",
)
# ``<qualifier>_key`` is a secret (``api_key``); a bare ``key`` or ``primary_key`` is not.
_KEY_QUALIFIERS: Final = frozenset(
    {
        "api",
        "private",
        "access",
        "secret",
        "session",
        "signing",
        "sign",
        "master",
        "encryption",
        "encrypt",
        "account",
        "client",
        "shared",
        "app",
        "license",
        "licence",
        "ssh",
        "deploy",
        "hmac",
        "webhook",
        "admin",
        "service",
        "subscription",
        "storage",
        "consumer",
    }
)
# ``<qualifier>_code`` is a secret (``auth_code``); ``status_code`` / ``exit_code`` are not.
_CODE_QUALIFIERS: Final = frozenset(
    {"auth", "oauth", "verification", "otp", "mfa", "totp", "recovery", "backup", "device"}
)
# A key that counts, sizes or types something is metadata about tokens, not a token:
# ``max_tokens``, ``token_count``, ``token_type``.  Any of these words clears the key.
_COUNT_WORDS: Final = frozenset(
    {
        "count",
        "counts",
        "limit",
        "limits",
        "max",
        "min",
        "num",
        "number",
        "total",
        "used",
        "usage",
        "budget",
        "length",
        "len",
        "size",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "expired",
        "lifetime",
        "type",
        "kind",
        "remaining",
        "estimate",
    }
)
# A key that *points at* a secret rather than holding it (``token_url``, ``secret_name``,
# ``password_file``, ``api_key_env``) keeps its value, judged by its last word.
_HARMLESS_TAIL: Final = frozenset(
    {
        "url",
        "uri",
        "urls",
        "endpoint",
        "path",
        "paths",
        "file",
        "filename",
        "dir",
        "directory",
        "name",
        "names",
        "env",
        "var",
        "variable",
        "scope",
        "scopes",
        "method",
        "methods",
        "policy",
        "required",
        "enabled",
        "disabled",
        "provider",
        "source",
        "ref",
        "prefix",
        "hint",
        "format",
        "label",
        "mode",
        "helper",
        "stdin",
    }
)
_WORD_RE: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# Key kinds: how the value after a sensitive key is delimited in free text.
_NOT_SECRET: Final = 0
_PLAIN: Final = 1  # one token: ``password=hunter2``
_AUTH_HEADER: Final = 2  # rest of the header, keeping the scheme: ``Bearer [REDACTED]``
_WHOLE_HEADER: Final = 3  # rest of the header: ``Cookie: [REDACTED]``

_MAX_KEY_CLASSIFY: Final = 256


def _words(name: str) -> list[str]:
    """Split ``XApiKey`` / ``x-api-key`` / ``X_API_KEY`` alike into lower-case words."""
    return [w.lower() for w in _WORD_RE.findall(name)]


def _names_secret(words: list[str], *, plurals: bool = False) -> bool:
    """True if the words of a name use the secret vocabulary above (the one list)."""
    for i, word in enumerate(words):
        prev = words[i - 1] if i else ""
        if plurals and len(word) > 3 and word.endswith("s") and word not in _SECRET_WORDS:
            word = word[:-1]  # ``tokens_used``, ``secrets``: still about a secret
        if (
            word in _SECRET_WORDS
            or word.endswith(_SECRET_SUFFIXES)
            or (word == "key" and prev in _KEY_QUALIFIERS)
            or (word == "code" and prev in _CODE_QUALIFIERS)
        ):
            return True
    return False


def _key_kind(name: str) -> int:
    """Classify a key by its words (uncached; see _kind_cached)."""
    words = _words(name)
    if not words or not _names_secret(words):
        return _NOT_SECRET
    if words[-1] in _HARMLESS_TAIL or any(w in _COUNT_WORDS for w in words):
        return _NOT_SECRET
    last = words[-1]
    if last == "authorization":
        return _AUTH_HEADER
    if last in ("cookie", "cookies", "setcookie"):
        return _WHOLE_HEADER
    return _PLAIN


_KIND_CACHE: dict[str, int] = {}
_KIND_CACHE_MAX: Final = 8192


def _kind_cached(name: str) -> int:
    """Classify a key once; keys repeat endlessly in logs, and a dict hit is the cheapest
    operation available on the hot path (cheaper than ``functools.lru_cache``)."""
    kind = _KIND_CACHE.get(name)
    if kind is None:
        # Keys longer than any real one are judged by their head so that a megabyte-long
        # dict key costs no more than a short one; they are not worth caching.
        kind = _key_kind(name[:_MAX_KEY_CLASSIFY])
        if len(name) <= _MAX_KEY_CLASSIFY:
            if len(_KIND_CACHE) >= _KIND_CACHE_MAX:
                _KIND_CACHE.clear()
            _KIND_CACHE[name] = kind
    return kind


def is_sensitive_name(name: str) -> bool:
    """Tell whether a field *named* ``name`` must never be shown in a preview.

    The same vocabulary as :func:`is_sensitive_key` (there is one list of secret words), read
    more strictly: count-like keys and pointers to secrets (``tokens_used``, ``token_url``) are
    sensitive here too, because a preview that is wrongly withheld costs a label while a preview
    that shows a secret leaks it. Every name :func:`is_sensitive_key` flags is flagged here, so a
    card title can never show a value that the same card's ``rawInput`` hides.
    """
    if not isinstance(name, str) or not name:
        return False
    return _names_secret(_words(name[:_MAX_KEY_CLASSIFY]), plurals=True)


def is_sensitive_key(name: str) -> bool:
    """Tell whether a field or parameter *named* ``name`` holds a secret.

    Public because every place that shows structured data (tool previews, redact_value,
    free-text ``key=value`` forms) must agree on one vocabulary.  Matching is on words,
    not substrings, so ``tokenizer``, ``author``, ``keyboard`` and ``monkey`` are not
    secrets while ``accessToken``, ``X-Api-Key`` and ``DB_PASSWORD`` are.  Count-like
    keys (``max_tokens``, ``token_count``) and pointers to secrets (``token_url``,
    ``secret_name``) are not sensitive: hiding them would only hide useful metadata.
    """
    if not isinstance(name, str) or not name:
        return False
    return _kind_cached(name) != _NOT_SECRET


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


# AGH claim tokens (seed 000's first family): ``agh_claim_`` + a base64url body, which may hold
# ``-`` and ``_`` (AGH's own tests use ``agh_claim_raw-claim-value``). The prefix alone identifies
# one, so every form is caught: bare, ``--claim X``, ``--claim=X``, ``"claim": "X"``, a query string.
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


# ---------------------------------------------------------------------------------------
# Pass 4: key/value, header and query-parameter forms, near keyword hits
# ---------------------------------------------------------------------------------------

# Every sensitive key and query parameter contains one of these (lower-case) strings.  A
# ``str.find`` per needle is far faster than any regex alternation in ``re``, so the
# key/value machinery runs only where a needle occurs, anchored at the key around it.
_NEEDLES: Final = (
    "token",
    "secret",
    "pass",
    "pwd",
    "auth",
    "cookie",
    "credential",
    "bearer",
    "verifier",
    "key",
    "sig",
    "code",
)
# Per-needle finders: the needle literal first (so ``re`` scans for it at full speed), then
# look-arounds that drop, inside the regex engine, hits that cannot be part of an
# assignment: words that merely contain a needle (``tokens``, ``passed``, ``author``,
# ``keyboard``, ``decode``) and needles that end a word followed by no separator and value
# (prose such as "the token expired").  A hit followed by more key characters is kept
# without looking further, so no character is ever scanned twice here; the Python side
# measures that key once and skips the hits inside it.  Python re-checks everything.
_AFTER_NEEDLE: Final = (
    r"(?=[a-z0-9_.-]"
    r"|[ \t]{0,8}(?:=>?|:=|:(?=[ \t\"'`]))[ \t]{0,8}[^\s,;&)}\]<>=]"
    r"|[\"'`\\])"
)
_NEEDLE_FILTERS: Final = {
    "token": r"(?!s(?![a-z]))",  # the plural word ``tokens`` counts; ``tokenSecret`` does not
    "pass": r"(?=w|phrase)",
    "auth": r"(?!or(?!i))",
    "key": r"(?<=[a-z0-9_.?&#; -]key)",
    "sig": r"(?<=[?&#;-]sig)",
    "code": r"(?<![^a-z0-9_.?&#;\"' \t\n-]code)",
}
# ``Bearer <credential>``: blanks and a credential holding a digit.
_NEEDLE_EXTRA: Final = {
    "bearer": r"|(?=[ \t]{1,8}(?=[a-z._~+/=-]{0,4095}[0-9])[a-z0-9._~+/=-]{8})",
}


def _needle_finder(needle: str) -> re.Pattern[str]:
    # ``--token value``: a flag (the needle right after a dash) followed by blanks and a value.
    flag_form = rf"|(?<=-{needle})(?=[ \t]{{1,8}}[^\s-])"
    return re.compile(
        needle
        + _NEEDLE_FILTERS.get(needle, "")
        + "(?:"
        + _AFTER_NEEDLE
        + flag_form
        + _NEEDLE_EXTRA.get(needle, "")
        + ")"
    )


_NEEDLE_FINDERS: Final = tuple(_needle_finder(needle) for needle in _NEEDLES)
_NEEDLE_LENS: Final = tuple(len(needle) for needle in _NEEDLES)
_NEEDLE_SHIFT: Final = 4
_NEEDLE_MASK: Final = (1 << _NEEDLE_SHIFT) - 1

_MAX_KEY: Final = 80
# Key characters (of the lower-cased text).  The identifier around a needle hit is measured
# with one bounded regex step in each direction; the backward one runs on the reversed text.
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEY_RUN: Final = re.compile(r"[a-z0-9_.-]{0,81}")
_KEY_FIRST: Final = frozenset("abcdefghijklmnopqrstuvwxyz_")
# A key must not continue a path, a hostname, an email or an escaped name; nor directly
# follow a placeholder (``]``), where the original text had a value character instead and
# a second pass must see the same thing as the first.
_KEY_BOUNDARY: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-/\\@]")
# What may follow a key: a separator, spaces before one, or the key's closing quote.
_AFTER_KEY: Final = frozenset("=:\"' \t\\")
# Characters a value cannot start with.
_NO_VALUE: Final = frozenset(" \t\r\n\f\v,;&)}]<>")
_BLANK: Final = frozenset(" \t")
# First characters of a value that the inlined fast path may take as a bare word: anything
# that is not a quote, a template ``$``, a string prefix letter or a non-value character.
_PLAIN_VALUE_START: Final = frozenset("acdeghijklmnopqstvwxyzACDEGHIJKLMNOPQSTVWXYZ0123456789_-+/.:@!#%*?~^|")
_SEP_SPACES: Final = 8
_PHRASE_WORD: Final = re.compile(r"[a-z0-9_.-]{1,20}")

# A free-standing ``Bearer <credential>`` (outside a recognised header); the credential
# must hold a digit so that prose like "Bearer authentication" is left alone.
_BEARER: Final = re.compile(
    r"bearer(?<![a-z0-9_-]bearer)[ \t]{1,8}(?=[a-z._~+/=-]{0,4095}[0-9])([a-z0-9._~+/=-]{8,4096})"
)

_BEARER_MORE: Final = re.compile(r"[A-Za-z0-9._~+/=-]{1,4096}")

# Query parameters that carry secrets although the name alone would not say so.
_QUERY_KEYS: Final = frozenset(
    {
        "key",
        "sig",
        "signature",
        "code",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
    }
)

# Quoted values keep their quotes; the group that matched is the secret.  An unterminated
# quote runs to the end of the line (fail closed).  Python string prefixes are skipped.
_VAL_QUOTED: Final = re.compile(
    r"(?:[rRbBfFuU]{1,2}(?=[\"'`]))?(?:"
    r"\\\"(?P<e>[^\"\\\n]{0,4096})(?:\\\")?"
    r"|\"(?P<d>(?:[^\"\\\n]|\\.){0,4096})\"?"
    r"|'(?P<s>[^'\n]{0,4096})'?"
    r"|`(?P<b>[^`\n]{0,4096})`?"
    r")"
)
_QUOTED_LIMIT: Final = 4096
# Continuations of a quoted value that is longer than one bounded match, and its closer.
_QUOTED_CONTINUATION: Final = {
    "e": (re.compile(r"[^\"\\\n]{1,4096}"), '\\"'),
    "d": (re.compile(r"(?:[^\"\\\n]|\\.){1,4096}"), '"'),
    "s": (re.compile(r"[^'\n]{1,4096}"), "'"),
    "b": (re.compile(r"[^`\n]{1,4096}"), "`"),
}
_QUOTE_STARTS: Final = frozenset("\"'`\\rRbBfFuU")
# ``${{ secrets.X }}`` / ``${VAR}``: one unit, so no ``{...}`` remnant is left behind.
_VAL_TEMPLATE: Final = re.compile(r"\$\{\{[^}\n]{0,256}\}\}|\$\{[^}\n]{0,256}\}")
# Header values (Authorization, Cookie): the rest of the line, or of the enclosing quote
# when the header itself sits inside one (``curl -H "Authorization: Bearer ..."``).
_VAL_LINE: Final = {
    "": re.compile(r"[^\r\n]{1,8192}"),
    '"': re.compile(r'[^\r\n"]{1,8192}'),
    "'": re.compile(r"[^\r\n']{1,8192}"),
}
_BARE_LIMIT: Final = 4096
_VAL_BARE: Final = re.compile(r"[^\s\"'`,;&<>(){}\[\]\\]{1,4096}")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,30}[ \t]+")
# Bare values that are plainly not secrets: leaving them makes code and config readable.
_SKIP_VALUES: Final = frozenset(
    {
        "null",
        "none",
        "true",
        "false",
        "nil",
        "undefined",
        "str",
        "int",
        "bytes",
        "bool",
        "float",
        "string",
        "number",
        "boolean",
        "any",
        "object",
        "secretstr",
        "await",
        "new",
        "yield",
        "lambda",
        "function",
    }
)
_AUTH_SCHEMES: Final = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey"})
# A reference in source code (``process.env.API_KEY``, ``self.token``, ``config.password``)
# names where a secret lives; hiding it would only make displayed code unreadable.
_CODE_ROOT_START: Final = frozenset("acekoprst")
_CODE_REFERENCE: Final = re.compile(
    r"(?:process|os|self|this|cls|config|settings|env|options|opts|args|kwargs|ctx|context"
    r"|req|request|params|props|app)(?:\.[A-Za-z_$][A-Za-z0-9_$]{0,63}){1,8}"
)
# Short bare words the value parser treats specially; the inlined fast path leaves them to it.
_PLAIN_SPECIAL: Final = _SKIP_VALUES | _AUTH_SCHEMES


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


def _needle_hits(low: str) -> list[int]:
    """All needle positions, sorted, each packed with the needle's index in its low bits."""
    hits: list[int] = []
    for index, finder in enumerate(_NEEDLE_FINDERS):
        hits.extend([m.start() << _NEEDLE_SHIFT | index for m in finder.finditer(low)])
    hits.sort()
    return hits


def _separator_end(low: str, after: int, quoted: bool, flag: bool) -> tuple[int, bool] | None:
    """Parse the separator after a key ending at ``after``.

    Accepts ``=``, ``=>``, ``:=`` and ``:`` with up to 8 blanks on either side, and for a
    ``--flag`` a run of blanks alone.  An unquoted ``key:`` needs a blank or a quote after
    the colon, so ``file.py:42`` and ``host:port`` never read as assignments; ``==`` is a
    comparison.  Returns (value start, separated by blanks only) or None.
    """
    n = len(low)
    j = after
    while j < n and low[j] in _BLANK and j - after < _SEP_SPACES:
        j += 1
    if j + 1 >= n:
        return None
    c = low[j]
    if c == "=":
        c2 = low[j + 1]
        if c2 == "=":
            return None
        j += 2 if c2 == ">" else 1
    elif c == ":":
        c2 = low[j + 1]
        if c2 == "=":
            j += 2
        elif quoted or c2 in " \t\"'`":
            j += 1
        else:
            return None
    elif flag and j > after:
        return j, True
    else:
        return None
    k = j
    while k < n and low[k] in _BLANK and k - j < _SEP_SPACES:
        k += 1
    return k, False


def _value_region(
    text: str, i: int, kind: int, after_blank_sep: bool, enclosing_quote: str = ""
) -> tuple[int, int, int] | None:
    """Find the value starting at ``i``: (secret start, secret end, scan resume position).

    Returns None when there is nothing to hide (empty value, code such as ``get_token()``,
    a literal like ``null``, the next ``--flag``).
    """
    n = len(text)
    if i >= n or text[i] in _NO_VALUE:
        return None
    c = text[i]
    if c in _QUOTE_STARTS:
        m = _VAL_QUOTED.match(text, i)
        if m is not None:
            name = m.lastgroup or ""
            start, end = m.span(name)
            resume = m.end()
            if end - start >= _QUOTED_LIMIT:
                # The bounded match stopped short of the closing quote: carry on in
                # bounded steps rather than leave the tail of a long value readable.
                continuation, closer = _QUOTED_CONTINUATION[name]
                end = _extend(text, end, continuation)
                resume = end + len(closer) if text.startswith(closer, end) else end
            if end <= start:
                return None
            if kind == _AUTH_HEADER:
                start = _skip_scheme(text, start, end)
            return start, end, resume
    if kind != _PLAIN:
        pattern = _VAL_LINE[enclosing_quote]
        line = pattern.match(text, i)
        if line is None:
            return None
        resume = _extend(text, line.end(), pattern)
        end = i + len(text[i:resume].rstrip())
        if end <= i:
            return None
        start = _skip_scheme(text, i, end) if kind == _AUTH_HEADER else i
        return start, end, resume
    if c == "$":
        m = _VAL_TEMPLATE.match(text, i)
        if m is not None:
            return i, m.end(), m.end()
    m = _VAL_BARE.match(text, i)
    if m is None:
        return None
    end = m.end()
    if end - i == _BARE_LIMIT:  # an over-long run: extend in bounded steps, never leak a tail
        end = _extend(text, end, _VAL_BARE)
    nxt = text[end] if end < n else ""
    if nxt == "(" or nxt == "[":
        return None  # ``token = get_token()`` / ``key = cfg["api_key"]``: code, not a value
    if _CODE_REFERENCE.fullmatch(text, i, end) is not None:
        return None
    if after_blank_sep and c == "-":
        return None  # ``--token --verbose``: the next flag, not a value
    if end - i <= 9:
        word = text[i:end].lower()
        if word in _SKIP_VALUES:
            return None
        if word in _AUTH_SCHEMES and (nxt == " " or nxt == "\t"):
            # ``auth: Bearer abc``: the credential is the *next* word; treat it like a header.
            return _value_region(text, i, _AUTH_HEADER, after_blank_sep, enclosing_quote)
    return i, end, end


def _skip_scheme(text: str, start: int, end: int) -> int:
    """Keep an auth scheme (``Bearer``, ``Basic``, ...) visible in front of its credential."""
    m = _SCHEME.match(text, start, end)
    if m is not None and m.end() < end:
        return m.end()
    return start


def _quoted_key(low: str, ks: int, ke: int) -> tuple[int, int] | None:
    """If ``low[ks:ke]`` is a quoted key, return (position after the closing quote, start
    of the opening quote); ``\\"key\\"`` (JSON inside a string) counts as quoted."""
    if not ks:
        return None
    q = low[ks - 1]
    if q != '"' and q != "'":
        return None
    if ks > 1 and low[ks - 2] == "\\":
        if low.startswith("\\" + q, ke):
            return ke + 2, ks - 2
        return None
    if ke < len(low) and low[ke] == q:
        return ke + 1, ks - 1
    return None


def _phrase_key(low: str, ks: int, ke: int) -> tuple[int, int, int] | None:
    """Handle a quoted key of several words (``"Client Secret": ...``) around a hit.

    Returns (key start, position after the closing quote, start of the opening quote).
    """
    n = len(low)
    q = low[ke] if ke < n else ""
    if (q != '"' and q != "'") or not ks or low[ks - 1] != " ":
        return None
    open_at = low.rfind(q, max(0, ks - 64), ks)
    if open_at < 0:
        return None
    # Words of key characters separated by single spaces, at most four in all.
    pos = open_at + 1
    words = 0
    while pos < ks:
        w = _PHRASE_WORD.match(low, pos)
        if w is None or w.end() >= ks or low[w.end()] != " ":
            return None
        pos = w.end() + 1
        words += 1
    if words == 0 or words > 3 or low[open_at + 1] not in _KEY_FIRST:
        return None
    start = open_at
    if open_at and low[open_at - 1] == "\\":
        return None
    return open_at + 1, ke + 1, start


def _matched_end(match: re.Match[str] | None) -> int:
    """End of a match that cannot fail (the pattern accepts the character just checked)."""
    assert match is not None
    return match.end()


def _redact_keyed(text: str) -> str:
    """Hide values of ``key=value``, ``key: value``, JSON, header and query forms.

    Needle hits are visited left to right.  For each, the identifier around it is
    measured, cheap character tests and the cached classifier discard the many hits that
    are prose or harmless keys, and only then are the separator and the value parsed.  A
    cursor skips hits inside an identifier or a value already handled, so a run such as
    ``tokentoken...`` or ``password=token=...`` costs one step per key, not per hit.
    Everything here is plain character tests and anchored, bounded regex steps, and the
    common shapes (``key=value``, ``key: value``, ``"key": "value"``) take an inlined
    path: dense adversarial input costs a small constant per needle hit.
    """
    low = _ascii_lower(text)
    hits = _needle_hits(low)
    if not hits:
        return text
    n = len(text)
    rev = ""
    key_run = _KEY_RUN.match
    bare_match = _VAL_BARE.match
    kind_of = _kind_cached
    key_chars = _KEY_CHARS
    key_first = _KEY_FIRST
    boundary = _KEY_BOUNDARY
    no_value = _NO_VALUE
    plain_start = _PLAIN_VALUE_START
    needle_lens = _NEEDLE_LENS
    spans: list[tuple[int, int]] = []
    oauth: _OAuthContext | None = None
    cursor = 0
    for code in hits:
        h = code >> _NEEDLE_SHIFT
        if h < cursor:
            continue
        # The identifier around the needle: [ks, ke).
        ks = h
        if h and low[h - 1] in key_chars:
            if not rev:
                rev = low[::-1]
            ks = h - (_matched_end(key_run(rev, n - h)) - (n - h))
        ke = h + needle_lens[code & _NEEDLE_MASK]
        if ke < n and low[ke] in key_chars:
            ke = _matched_end(key_run(low, ke))
        cursor = ke
        if ke >= n - 1 or ke - ks > _MAX_KEY + 2:
            continue  # too long to be a key, or no room for a separator and a value
        nxt = low[ke]
        if nxt not in _AFTER_KEY:
            continue
        name_start = ks
        while name_start < h and low[name_start] == "-":
            name_start += 1  # ``--token``: the dashes belong to the flag, not to the key
        flag = name_start > ks
        before = low[ks - 1] if ks else " "
        if (
            name_start - ks > 2
            or low[name_start] not in key_first
            or (before in boundary and not (flag and before == "-"))
        ):
            continue
        kind = kind_of(text[name_start:ke])
        if kind == _NOT_SECRET and ke - name_start == 4 and low.startswith("code", name_start):
            if oauth is None:
                oauth = _OAuthContext(low)
            if oauth.near(ks):
                kind = _PLAIN  # ``"code"`` of an OAuth token request: an authorization code
        found: tuple[int, int, bool] | None = None
        # Fast path: an unquoted ``key=value`` / ``key: value`` with a plain value.
        if nxt == "=" or nxt == ":":
            if kind == _NOT_SECRET:
                if not (nxt == "=" and before in "?&#;" and not flag and low[ks:ke] in _QUERY_KEYS):
                    continue
                kind = _PLAIN
            c2 = low[ke + 1]
            if c2 in plain_start:
                if nxt == ":":
                    continue  # unquoted ``key:x``: ``file.py:42``, ``host:port``, not an assignment
                if kind == _PLAIN:
                    # ``key=v`` (not ``==``/``=>``) with a value starting with a plain character.
                    m = bare_match(text, ke + 1)
                    end = m.end() if m is not None else ke
                    if (
                        ke < end < ke + 1 + _BARE_LIMIT
                        and (end - ke > 10 or text[ke + 1 : end].lower() not in _PLAIN_SPECIAL)
                        and (
                            text[ke + 1] not in _CODE_ROOT_START
                            or _CODE_REFERENCE.fullmatch(text, ke + 1, end) is None
                        )
                    ):
                        after_value = text[end] if end < n else ""
                        if after_value != "(" and after_value != "[":
                            spans.append((ke + 1, end))
                            cursor = end
                        continue
            elif c2 in no_value and c2 != " " and c2 != "\t":
                continue
        elif nxt == " " or nxt == "\t":
            if kind == _NOT_SECRET:
                continue
            j = ke + 1
            while j < n and j - ke <= _SEP_SPACES and (low[j] == " " or low[j] == "\t"):
                j += 1
            if j < n and low[j] != "=" and low[j] != ":" and not flag:
                # No separator after the blanks: only a bare ``Bearer <credential>`` is left.
                bearer = _bearer_span(text, low, name_start)
                if bearer is not None:
                    spans.append(bearer)
                    cursor = bearer[1]
                continue
        elif nxt == before and (nxt == '"' or nxt == "'") and not (ks > 1 and low[ks - 2] == "\\"):
            # ``"key": value`` / ``'key' => value``: a quoted one-word key.
            if kind == _NOT_SECRET or (ks > 1 and low[ks - 2] in boundary):
                continue
            sep = _separator_end(low, ke + 1, True, False)
            if sep is not None:
                found = (sep[0], kind, sep[1])
        elif kind == _NOT_SECRET and nxt == "\\":
            continue
        if found is None:
            found = _slow_assignment(text, low, ks, ke, name_start, flag, kind)
        if found is None:
            if nxt == " " or nxt == "\t":
                bearer = _bearer_span(text, low, name_start)
                if bearer is not None:
                    spans.append(bearer)
                    cursor = bearer[1]
            continue
        value_at, kind, blank_sep = found
        enclosing = before if before == '"' or before == "'" else ""
        region = _value_region(text, value_at, kind, blank_sep, enclosing)
        if region is None:
            continue
        start, end, resume = region
        spans.append((start, end))
        if resume > cursor:
            cursor = resume
    if not spans:
        return text
    return _replace_spans(text, spans)


# Words of an OAuth token request (RFC 6749 4.1.3): a bare ``code`` key near one of them holds an
# authorization code, while ``"code": 404`` in an error object is left alone.
_OAUTH_WORDS: Final = ("grant_type", "redirect_uri", "code_verifier", "authorization_code", "client_id")
_OAUTH_WINDOW: Final = 512
_OAUTH_KEYS: Final = frozenset({"grant_type", "redirect_uri", "code_verifier", "client_id", "client_secret"})


class _OAuthContext:
    """Answers "is an OAuth request word within the window around this position?" for positions
    visited left to right. Each word keeps the next occurrence at or after the window start and
    only searches again once the window has moved past it, so each word's scans cover the text
    once: linear however many ``code`` keys there are."""

    def __init__(self, low: str) -> None:
        self._low = low
        self._next = dict.fromkeys(_OAUTH_WORDS, -2)  # -2: not searched yet; -1: none left

    def near(self, at: int) -> bool:
        lo, hi = at - _OAUTH_WINDOW, at + _OAUTH_WINDOW
        for word, pos in self._next.items():
            if pos == -1:
                continue
            if pos == -2 or pos < lo:
                pos = self._next[word] = self._low.find(word, max(lo, 0))
                if pos == -1:
                    continue
            if pos <= hi:
                return True
        return False


def _bearer_span(text: str, low: str, at: int) -> tuple[int, int] | None:
    """The credential of a free-standing ``Bearer <credential>`` starting at ``at``."""
    if not low.startswith("bearer", at):
        return None
    m = _BEARER.match(low, at)
    if m is None:
        return None
    return m.start(1), _extend(text, m.end(), _BEARER_MORE)


def _slow_assignment(
    text: str, low: str, ks: int, ke: int, name_start: int, flag: bool, kind: int
) -> tuple[int, int, bool] | None:
    """The general key/separator parse behind the inlined fast path.

    Handles quoted keys (``"key":``, ``'key' =>``, ``\\"key\\":``), quoted keys of
    several words, blanks around the separator, ``--flag value`` and query parameters.
    Returns (value start, key kind, separated by blanks only) or None.
    """
    after = ke
    quoted = False
    if not flag:
        closing = _quoted_key(low, ks, ke)
        if closing is not None:
            after, open_at = closing
            if open_at and low[open_at - 1] in _KEY_BOUNDARY:
                return None
            quoted = True
        elif kind == _NOT_SECRET or low[ke] in "\"'":
            phrase = _phrase_key(low, ks, ke)
            if phrase is not None:
                key_start, after, open_at = phrase
                if open_at and low[open_at - 1] in _KEY_BOUNDARY:
                    return None
                kind = _kind_cached(text[key_start:ke])
                quoted = True
    if kind == _NOT_SECRET:
        if quoted or flag or not ks or low[ks - 1] not in "?&#;" or low[ke] != "=":
            return None
        if low[ks:ke] not in _QUERY_KEYS:
            return None
        kind = _PLAIN
    sep = _separator_end(low, after, quoted, flag)
    if sep is None:
        return None
    return sep[0], kind, sep[1]


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


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


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
# Every detection needs at least one of these: the PEM header, ``://``, a shape trigger above, a
# command-line or AWS word of pass 5, or a key needle of pass 4. Short strings are screened with
# it in one regex step: most strings redact_value sees are names, paths and numbers, and the
# pass-by-pass pipeline has a fixed cost of a few dozen scans however short the input.
_SCREEN_LITERALS: Final = (
    "-----begin",
    "://",
    "aws",
    "-u",
    "mysql",
    "mariadb",
    "sshpass",
    *_SHAPE_LITERALS,
    *_NEEDLES,
)
_SCREEN_PATTERNS: Final = _SHAPE_PATTERNS


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


_ANY_TRIGGER: Final = re.compile("|".join((_trie_pattern(_SCREEN_LITERALS), *_SCREEN_PATTERNS)))
"""Matches where at least one trigger occurs (a screen: a false alarm costs time, never safety)."""
_SCREEN_BELOW: Final = 512
_SHAPE_TRIGGER: Final = re.compile("|".join((_trie_pattern(_SHAPE_LITERALS), *_SHAPE_PATTERNS)))
"""Matches where a token shape may start (the screen of pass 3 for short texts)."""
#: Texts shorter than this are screened before the shape pass; a longer text is scanned by each
#: shape anyway, and screening it would cost one more scan, slower than the literal searches.
_SHAPE_SCREEN_BELOW: Final = 8192


def redact_text(text: str) -> str:
    """Return ``text`` with every recognisable secret replaced by :data:`REDACTED`.

    Labels survive (``Authorization: Bearer [REDACTED]``, ``"api_key": "[REDACTED]"``,
    ``https://user:[REDACTED]@host``) so the reader still knows what was hidden.  The
    result is a fixed point: redacting it again changes nothing.  Runs in time linear in
    ``len(text)`` whatever the content.
    """
    if not text:
        return text
    if len(text) < _SCREEN_BELOW:
        # Short strings repeat endlessly (dict keys, phases, titles, a message redacted once by
        # its builder and again inside ``_meta``): answer them from a bounded cache.
        done = _SHORT_CACHE.get(text)
        if done is None:
            done = text if _ANY_TRIGGER.search(text.lower()) is None else _redact_passes(text)
            if len(_SHORT_CACHE) >= _SHORT_CACHE_MAX:
                _SHORT_CACHE.clear()
            _SHORT_CACHE[text] = done
        return done
    return _redact_passes(text)


_SHORT_CACHE: dict[str, str] = {}
_SHORT_CACHE_MAX: Final = 4096


def _redact_passes(text: str) -> str:
    """Every pass of :func:`redact_text`, in order."""
    text = _redact_pem(text)
    text = _redact_urls(text)
    text = _redact_shapes(text)
    text = _redact_cli(text)
    return _redact_keyed(text)


def _redact_cli(text: str) -> str:
    """Pass 5: credentials given as command-line arguments (see :mod:`acp_adapter.safety.redact.cmdline`),
    and AWS secret keys in prose, which need the same lower-case copy of the text."""
    low = _ascii_lower(text)
    spans = redact_command_lines(text, low, is_sensitive_key)
    spans.extend(_aws_prose_spans(text, low))
    return _replace_spans(text, spans) if spans else text


_MAX_DEPTH: Final = 200


def redact_value(value: Any) -> Any:
    """Return a redacted deep copy of a JSON-like value; the input is never mutated.

    Strings go through :func:`redact_text`; a dict entry whose key names a secret (see
    :func:`is_sensitive_key`) is replaced wholesale, whatever its type, because a number
    or a nested object under ``password`` is as secret as a string.  Keys are redacted
    too, since tools sometimes key maps by token.  Structures nested deeper than any sane
    payload are replaced rather than walked, so hostile input cannot exhaust the stack.
    """
    return _redact_value(value, 0)


def _redact_value(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        if depth >= _MAX_DEPTH:
            return REDACTED
        out: dict[Any, Any] = {}
        oauth_request = "code" in value and not _OAUTH_KEYS.isdisjoint(value)
        for key, item in value.items():
            if isinstance(key, str):
                new_key = redact_text(key)
                secret = is_sensitive_key(key) or (oauth_request and key == "code")
                out[new_key] = REDACTED if secret else _redact_value(item, depth + 1)
            else:
                out[key] = _redact_value(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        if depth >= _MAX_DEPTH:
            return REDACTED
        items = [_redact_value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
