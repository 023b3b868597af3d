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
  page), so no input may trigger regex backtracking.  Every pattern either starts with a
  literal (which ``re`` finds with a fast scan) and has bounded repetitions, or only runs
  in small windows around a cheap ``str.find`` hit.  Starts inside a run of token
  characters are ruled out by a fixed-width look-behind, so one run is scanned once.

The work is split into passes that each run over the current text, in this order:
PEM private-key blocks, URL-borne credentials (``user:pass@``, webhook paths,
``secret://``), provider token shapes (GitHub, OpenAI, AWS, ...), and finally
``key=value`` / header / query-parameter forms, which are only examined near one of a
dozen keyword hits (``token``, ``secret``, ``pass`` ...) found with ``str.find``.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["REDACTED", "is_sensitive_key", "redact_text", "redact_value"]

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


def _key_kind(name: str) -> int:
    """Classify a key by its words (uncached; see _kind_cached)."""
    words = _words(name)
    if not words:
        return _NOT_SECRET
    named_secret = False
    for i, word in enumerate(words):
        prev = words[i - 1] if i else ""
        if (
            word in _SECRET_WORDS
            or word.endswith(_SECRET_SUFFIXES)
            or (word == "key" and prev in _KEY_QUALIFIERS)
            or (word == "code" and prev in _CODE_QUALIFIERS)
        ):
            named_secret = True
            break
    if not named_secret:
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


_classify = _kind_cached


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
    return _classify(name) != _NOT_SECRET


# ---------------------------------------------------------------------------------------
# Pass 1: PEM private key blocks
# ---------------------------------------------------------------------------------------

_PEM_BEGIN: Final = re.compile(r"-----BEGIN[A-Z0-9 ]{0,48}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END: Final = re.compile(r"-----END[A-Z0-9 ]{0,48}PRIVATE KEY(?: BLOCK)?-----")


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
# keeps runs like ``eyJeyJeyJ...`` linear).  ``back`` widens the region to the left for
# patterns whose literal is not the first character of the token.
_SHAPES: Final[tuple[tuple[re.Pattern[str], int], ...]] = (
    # GitHub: classic and fine-grained tokens.
    (
        re.compile(
            r"gh(?<![A-Za-z0-9_]gh)(?:[pousr]_[A-Za-z0-9]{20,255}|ithub_pat_[A-Za-z0-9_]{20,255})"
        ),
        0,
    ),
    # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-); a digit is required so
    # that kebab-case words starting with ``sk-`` survive.
    (
        re.compile(r"sk-(?<![A-Za-z0-9_-]sk-)(?=[A-Za-z_-]{0,254}[0-9])[A-Za-z0-9_-]{20,512}"),
        0,
    ),
    # Stripe secret / restricted / publishable keys.
    (
        re.compile(r"k_(?<=[spr]k_)(?<![A-Za-z0-9_][spr]k_)(?:live|test)_[A-Za-z0-9]{10,255}"),
        1,
    ),
    # Stripe webhook signing secrets.
    (re.compile(r"whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9+/=]{20,255}"), 0),
    # AWS access key ids (exact length) and Google API keys.
    (
        re.compile(
            r"A(?<![A-Za-z0-9]A)(?:(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
            r"|Iza[A-Za-z0-9_-]{30,255})"
        ),
        0,
    ),
    # Slack bot/user/app tokens.
    (re.compile(r"x(?<![A-Za-z0-9_-]x)(?:ox[abprse]|app)-[A-Za-z0-9-]{10,255}"), 0),
    # JSON Web Tokens: three base64url segments, the header starting with ``{"``.
    (
        re.compile(
            r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{10,4096}\.[A-Za-z0-9_-]{2,8192}\.[A-Za-z0-9_-]{0,4096}"
        ),
        0,
    ),
    # Google OAuth access tokens.
    (re.compile(r"ya29\.(?<![A-Za-z0-9_-]ya29\.)[A-Za-z0-9_-]{20,4096}"), 0),
    # GitLab personal / deploy / runner / trigger tokens.
    (
        re.compile(
            r"gl(?<![A-Za-z0-9_]gl)(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|oas)-[A-Za-z0-9_-]{20,255}"
        ),
        0,
    ),
    # Hugging Face.
    (re.compile(r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,255}"), 0),
    # npm.
    (re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36,255}"), 0),
    # PyPI upload tokens (macaroons).
    (re.compile(r"pypi-AgEI(?<![A-Za-z0-9_-]pypi-AgEI)[A-Za-z0-9_-]{20,4096}"), 0),
    # SendGrid.
    (re.compile(r"SG\.(?<![A-Za-z0-9_.-]SG\.)[A-Za-z0-9_-]{16,64}\.[A-Za-z0-9_-]{16,128}"), 0),
    # DigitalOcean personal / OAuth / refresh tokens.
    (re.compile(r"_v1_(?<=do[por]_v1_)(?<![A-Za-z0-9_]do[por]_v1_)[a-f0-9]{64}"), 3),
    # Twilio API key SIDs.
    (re.compile(r"SK(?<![A-Za-z0-9]SK)[0-9a-fA-F]{32}(?![A-Za-z0-9])"), 0),
)


def _sub_back(pattern: re.Pattern[str], back: int, text: str) -> str:
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


def _redact_shapes(text: str) -> str:
    """Replace tokens recognisable by their shape alone, wherever they appear."""
    for pattern, back in _SHAPES:
        text = pattern.sub(REDACTED, text) if back == 0 else _sub_back(pattern, back, text)
    return text


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
_MAX_KEY: Final = 80
# Key characters, for measuring the key around a needle hit.  The backward run is matched
# on the reversed text, so both directions are a single bounded regex step.
_KEY_RUN: Final = re.compile(r"[a-z0-9_.-]{0,81}")

# Anchored at the start of a key (on the lower-cased text).  Groups: 1 leading ``-``/``--``
# of a CLI flag, 2 opening quote, 3 key, 4 separator.  The look-behind rejects keys that
# are the tail of a path, a dotted name, a hostname or an email.  A quoted key may hold a
# few space-separated words (``"API Key"``); each extra word starts with the space, so
# there is one way to split it.  An unquoted ``key:`` needs a space or quote after the
# colon (``file.py:42`` is not an assignment), and the final look-ahead demands a value.
_KV: Final = re.compile(
    r"(?<![a-z0-9_./\\@-])"
    r"(-{1,2}(?=[a-z_]))?"
    r"(\\?[\"'])?"
    r"([a-z_][a-z0-9_.-]{0,79}(?(2)(?: [a-z0-9_.-]{1,20}){0,3}))"
    r"(?(2)\2)"
    r"([ \t]{0,8}(?:=>|:?=(?!=)|(?(2):|:(?=[ \t\"'`])))[ \t]{0,8}|(?(1)[ \t]{1,8}(?!-)|(?!)))"
    r"(?=[^\s,;&)}\]<>])"
)
# A free-standing ``Bearer <credential>`` (outside a recognised header); the credential
# must hold a digit so that prose like "Bearer authentication" is left alone.
_BEARER: Final = re.compile(
    r"bearer(?<![a-z0-9_-]bearer)[ \t]{1,8}(?=[a-z._~+/=-]{0,4095}[0-9])([a-z0-9._~+/=-]{8,4096})"
)

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
_QUOTED: Final = (
    r"(?:[rRbBfFuU]{1,2}(?=[\"'`]))?(?:"
    r"\\\"(?P<e>[^\"\\\n]{0,4096})(?:\\\")?"
    r"|\"(?P<d>(?:[^\"\\\n]|\\.){0,4096})\"?"
    r"|'(?P<s>[^'\n]{0,4096})'?"
    r"|`(?P<b>[^`\n]{0,4096})`?"
)
_BARE_CLASS: Final = r"[^\s\"'`,;&<>(){}\[\]\\]"
# Plain values: one word, or a whole ``${{ ... }}`` template expression.
_VAL_PLAIN: Final = re.compile(
    _QUOTED + r"|(?P<t>\$\{\{[^}\n]{0,256}\}\})" + r"|(?P<w>" + _BARE_CLASS + r"{1,4096}))"
)
# Header values (Authorization, Cookie): the rest of the line or of the enclosing quote.
_VAL_HEADER: Final = re.compile(_QUOTED + r"|(?P<l>[^\r\n\"'`]{1,8192}))")
_VAL_BARE: Final = re.compile(_BARE_CLASS + r"{1,4096}")
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
    }
)
_AUTH_SCHEMES: Final = frozenset({"bearer", "basic", "token", "digest", "negotiate", "ntlm", "apikey"})

_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    """Lower-case without changing length, so offsets map 1:1 onto the original."""
    low = text.lower()
    if len(low) == len(text):
        return low
    # Only a few characters (e.g. U+0130) grow when lower-cased; fall back to ASCII only.
    return text.translate(_ASCII_LOWER)


def _value_region(text: str, i: int, kind: int, after_space: bool) -> tuple[int, int, int] | None:
    """Find the value starting at ``i``: (secret start, secret end, scan resume position).

    Returns None when there is nothing to hide (empty value, code such as ``get_token()``,
    a literal like ``null``).
    """
    m = (_VAL_PLAIN if kind == _PLAIN else _VAL_HEADER).match(text, i)
    if m is None:
        return None
    name = m.lastgroup
    start, end = m.span(name)
    if name == "w":
        if end - i == 4096:  # an over-long run: extend in bounded steps, never leak a tail
            while True:
                more = _VAL_BARE.match(text, end)
                if more is None:
                    break
                end = more.end()
                if end - more.start() < 4096:
                    break
        nxt = text[end : end + 1]
        if nxt == "(" or nxt == "[":
            return None  # ``token = get_token()`` / ``key = cfg["api_key"]``: code, not a value
        if after_space and text[i] == "-":
            return None  # ``--token --verbose``: the next flag, not a value
        word = text[i:end].lower() if end - i <= 9 else ""
        if word in _SKIP_VALUES:
            return None
        if word in _AUTH_SCHEMES and nxt in (" ", "\t"):
            # ``auth: Bearer abc``: the credential is the *next* word; treat it like a header.
            return _value_region(text, i, _AUTH_HEADER, after_space)
        return start, end, end
    resume = m.end()
    if name == "l":
        end = start + len(m.group("l").rstrip())
    if end <= start:
        return None
    if kind == _AUTH_HEADER:
        scheme = _SCHEME.match(text, start, end)
        if scheme is not None and scheme.end() < end:
            start = scheme.end()
    return start, end, resume


def _quoted_phrase_key_at(text: str, low: str, ks: int) -> tuple[re.Match[str], int] | None:
    """Handle ``"Client Secret": ...``, where the needle is not in the first word."""
    lo = max(0, ks - 64)
    q = max(low.rfind('"', lo, ks), low.rfind("'", lo, ks))
    if q < 0:
        return None
    if q and low[q - 1] == "\\":
        q -= 1
    m = _KV.match(low, q)
    if m is None or m.group(2) is None or m.end(3) <= ks:
        return None
    kind = _classify(text[m.start(3) : m.end(3)])
    return None if kind == _NOT_SECRET else (m, kind)


_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
# What may follow a key: a separator, spaces before one, or the key's closing quote.
_AFTER_KEY: Final = frozenset("=:\"' \t\\>")
# Characters that cannot start a value (the regex look-ahead says the same; checking here
# first keeps dense runs of empty assignments such as ``&sig=&sig=`` out of the regex).
_NO_VALUE: Final = frozenset(" \t\r\n,;&)}]<>")
_NEEDLE_FINDERS: Final = tuple(re.compile(re.escape(needle)) for needle in _NEEDLES)
_NEEDLE_LENS: Final = tuple(len(needle) for needle in _NEEDLES)
_NEEDLE_SHIFT: Final = 4
_NEEDLE_MASK: Final = (1 << _NEEDLE_SHIFT) - 1


def _needle_hits(low: str) -> list[int]:
    """All needle positions, sorted, each packed with the needle's index in its low bits."""
    hits: list[int] = []
    for index, finder in enumerate(_NEEDLE_FINDERS):
        hits.extend([m.start() << _NEEDLE_SHIFT | index for m in finder.finditer(low)])
    hits.sort()
    return hits


def _redact_keyed(text: str) -> str:
    """Hide values of ``key=value``, ``key: value``, JSON, header and query forms.

    Needle hits are visited left to right.  For each, the identifier around it is
    measured (with a bounded regex step only when it extends beyond the needle), cheap
    character tests and the cached classifier discard the many hits that are prose or
    harmless keys, and only then is the key matched and its value located.  A cursor skips
    hits inside an identifier or a value already handled, so a run such as
    ``tokentoken...`` or ``password=token=...`` costs one step per key, not per hit.
    """
    low = _ascii_lower(text)
    hits = _needle_hits(low)
    if not hits:
        return text
    n = len(text)
    rev = ""
    key_run = _KEY_RUN.match
    kv_match = _KV.match
    kind_of = _kind_cached
    key_chars = _KEY_CHARS
    after_key = _AFTER_KEY
    no_value = _NO_VALUE
    needle_lens = _NEEDLE_LENS
    spans: list[tuple[int, int]] = []
    cursor = 0
    for code in hits:
        h = code >> _NEEDLE_SHIFT
        if h < cursor:
            continue
        ks = h
        if h and low[h - 1] in key_chars:
            if not rev:
                rev = low[::-1]
            ks = h - (key_run(rev, n - h).end() - (n - h))
        ke = h + needle_lens[code & _NEEDLE_MASK]
        if ke < n and low[ke] in key_chars:
            ke = key_run(low, ke).end()
        cursor = ke
        if ke >= n - 1 or ke - ks > _MAX_KEY + 2:
            continue  # too long to be a key, or no room for a separator and a value
        nxt = low[ke]
        if nxt not in after_key or (nxt == "=" and low[ke + 1] in no_value):
            continue
        name_start = ks
        while name_start < h and low[name_start] == "-":
            name_start += 1  # ``--token``: the dashes belong to the flag, not to the key
        kind = kind_of(text[name_start:ke])
        found: tuple[re.Match[str], int] | None = None
        if kind == _NOT_SECRET:
            if nxt == "=" and ks and low[ks - 1] in "?&#;" and low[ks:ke] in _QUERY_KEYS:
                m = kv_match(low, ks)
                if m is not None:
                    found = (m, _PLAIN)
            elif (nxt == '"' or nxt == "'") and ks and low[ks - 1] == " ":
                found = _quoted_phrase_key_at(text, low, ks)
            if found is None:
                continue
        else:
            if nxt == ":" and low[ke + 1] not in " \t\"'`":
                continue  # unquoted ``key:x``: ``file.py:42``, ``host:port``, not an assignment
            if (nxt == " " or nxt == "\t") and name_start == ks:
                # Only a separator after the spaces, or a bare ``Bearer <token>``, can follow.
                j = ke + 1
                while j < n and j - ke <= 8 and (low[j] == " " or low[j] == "\t"):
                    j += 1
                if j >= n or (low[j] != "=" and low[j] != ":"):
                    if low.startswith("bearer", ks):
                        b = _BEARER.match(low, ks)
                        if b is not None:
                            spans.append(b.span(1))
                            cursor = b.end()
                    continue
            start = ks
            if ks and (low[ks - 1] == '"' or low[ks - 1] == "'"):
                start = ks - 2 if ks > 1 and low[ks - 2] == "\\" else ks - 1
            m = kv_match(low, start)
            if m is None and start != ks:
                m = kv_match(low, ks)
            if m is not None:
                found = (m, kind)
            elif (nxt == '"' or nxt == "'") and ks and low[ks - 1] == " ":
                found = _quoted_phrase_key_at(text, low, ks)
            if found is None:
                continue
        m, kind = found
        region = _value_region(text, m.end(), kind, m.group(4).strip() == "")
        if region is None:
            continue
        start, end, resume = region
        spans.append((start, end))
        if resume > cursor:
            cursor = resume
    if not spans:
        return text
    return _replace_spans(text, spans)


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


def redact_text(text: str) -> str:
    """Return ``text`` with every recognisable secret replaced by :data:`REDACTED`.

    Labels survive (``Authorization: Bearer [REDACTED]``, ``"api_key": "[REDACTED]"``,
    ``https://user:[REDACTED]@host``) so the reader still knows what was hidden.  The
    result is a fixed point: redacting it again changes nothing.  Runs in time linear in
    ``len(text)`` whatever the content.
    """
    if not text:
        return text
    text = _redact_pem(text)
    text = _redact_urls(text)
    text = _redact_shapes(text)
    return _redact_keyed(text)


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
        for key, item in value.items():
            if isinstance(key, str):
                new_key = redact_text(key)
                out[new_key] = REDACTED if is_sensitive_key(key) else _redact_value(item, depth + 1)
            else:
                out[key] = _redact_value(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        if depth >= _MAX_DEPTH:
            return REDACTED
        items = [_redact_value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
