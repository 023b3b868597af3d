"""Redact pass 4: ``key=value``, header, JSON and query-parameter forms, found near key needles.

Only where one of a dozen lower-case needles (``token``, ``secret``, ``pass`` ...) occurs is the
key around it measured, classified with :func:`is_sensitive_key` and its value located.
"""

from __future__ import annotations

import re
from typing import Final

from acp_adapter.safety.redact.keys import _AUTH_HEADER, _NOT_SECRET, _PLAIN, _kind_cached
from acp_adapter.safety.redact.oauth import _OAuthContext
from acp_adapter.safety.redact.textops import _ascii_lower, _extend, _replace_spans

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
    "pw",
    "psk",
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
    "pass": r"(?=w|phrase|(?![a-z0-9]))",  # ``password``, ``passphrase``, ``DB_PASS``
    "pw": r"(?=d?(?![a-z0-9]))",  # ``--pw``, ``-pw``, ``pwd``; not ``pwm`` or ``pwn``
    "psk": r"(?![a-z0-9])",  # ``wpa_psk``, ``wifi-sec.psk``
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


# A value's place: (secret start, secret end, position the scan resumes at).
_Region = tuple[int, int, int]
# "Not decided here": the step that returns it leaves the value to the more general parse after it.
_UNDECIDED: Final[_Region] = (-1, -1, -1)


def _value_region(
    text: str, i: int, kind: int, after_blank_sep: bool, enclosing_quote: str = ""
) -> _Region | None:
    """Find the value starting at ``i``: (secret start, secret end, scan resume position).

    Returns None when there is nothing to hide (empty value, code such as ``get_token()``,
    a literal like ``null``, the next ``--flag``).  Quoted values, header values and bare
    words end in different places, so each has a step of its own.
    """
    if i >= len(text) or text[i] in _NO_VALUE:
        return None
    if text[i] in _QUOTE_STARTS:
        m = _VAL_QUOTED.match(text, i)
        if m is not None:
            return _quoted_region(text, m, kind)
    if kind != _PLAIN:
        return _header_region(text, i, kind, enclosing_quote)
    return _bare_region(text, i, after_blank_sep, enclosing_quote)


def _quoted_region(text: str, m: re.Match[str], kind: int) -> _Region | None:
    """The inside of a quoted value matched by ``m``; the quotes themselves stay visible."""
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


def _header_region(text: str, i: int, kind: int, enclosing_quote: str) -> _Region | None:
    """A header's value: the rest of the line (or of the enclosing quote), trailing blanks
    left out, with an auth scheme in front of the credential kept visible."""
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


def _bare_region(text: str, i: int, after_blank_sep: bool, enclosing_quote: str) -> _Region | None:
    """An unquoted value: a template unit, or a word that is neither code nor a harmless literal."""
    if text[i] == "$":
        m = _VAL_TEMPLATE.match(text, i)
        if m is not None:
            return i, m.end(), m.end()
    m = _VAL_BARE.match(text, i)
    if m is None:
        return None
    end = m.end()
    if end - i == _BARE_LIMIT:  # an over-long run: extend in bounded steps, never leak a tail
        end = _extend(text, end, _VAL_BARE)
    nxt = text[end] if end < len(text) else ""
    if nxt == "(" or nxt == "[":
        return None  # ``token = get_token()`` / ``key = cfg["api_key"]``: code, not a value
    if _CODE_REFERENCE.fullmatch(text, i, end) is not None:
        return None
    if after_blank_sep and text[i] == "-":
        return None  # ``--token --verbose``: the next flag, not a value
    if end - i <= 9:
        word = text[i:end].lower()
        if word in _SKIP_VALUES:
            return None
        if word in _AUTH_SCHEMES and (nxt == " " or nxt == "\t"):
            # ``auth: Bearer abc``: the credential is the *next* word; treat it like a header.
            return _header_region(text, i, _AUTH_HEADER, enclosing_quote)
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
    """Hide values of ``key=value``, ``key: value``, JSON, header and query forms.  Every needle
    hit pays for this loop, so it drops prose and harmless keys inline before a value is looked
    for; a cursor skips hits inside a key or value already handled (one step per key, not per hit)."""
    low = _ascii_lower(text)
    hits = _needle_hits(low)
    if not hits:
        return text
    n = len(text)
    rev = ""
    spans: list[tuple[int, int]] = []
    oauth: _OAuthContext | None = None
    cursor = 0
    for code in hits:
        h = code >> _NEEDLE_SHIFT
        if h < cursor:
            continue
        ks = h  # the identifier around the needle: [ks, ke)
        if h and low[h - 1] in _KEY_CHARS:
            rev = rev or low[::-1]
            ks = h - (_matched_end(_KEY_RUN.match(rev, n - h)) - (n - h))
        ke = h + _NEEDLE_LENS[code & _NEEDLE_MASK]
        if ke < n and low[ke] in _KEY_CHARS:
            ke = _matched_end(_KEY_RUN.match(low, ke))
        cursor = ke
        if ke >= n - 1 or ke - ks > _MAX_KEY + 2 or low[ke] not in _AFTER_KEY:
            continue  # too long to be a key, no room for a value, or no separator next
        name_start = ks
        while name_start < h and low[name_start] == "-":
            name_start += 1  # ``--token``: the dashes belong to the flag, not to the key
        before = low[ks - 1] if ks else " "
        if name_start - ks > 2 or low[name_start] not in _KEY_FIRST:
            continue
        if before in _KEY_BOUNDARY and not (before == "-" and name_start > ks):
            continue  # the identifier continues a path, a hostname, an email or an escaped name
        kind = _kind_cached(text[name_start:ke])
        if kind == _NOT_SECRET and ke - name_start == 4 and low.startswith("code", name_start):
            oauth = oauth or _OAuthContext(low)
            if oauth.near(ks):
                kind = _PLAIN  # ``"code"`` of an OAuth token request: an authorization code
        if low[ke] == "=" or low[ke] == ":":  # the commonest shape, one call away
            region = _unquoted_assignment(text, low, ks, ke, name_start, kind)
        else:
            region = _secret_after_key(text, low, ks, ke, name_start, kind)
        if region is _UNDECIDED:
            region = _general_assignment(text, low, ks, ke, name_start, kind)
        if region is not None:
            spans.append((region[0], region[1]))
            cursor = region[2]  # past the value, which always starts after the key
    return _replace_spans(text, spans) if spans else text


def _secret_after_key(text: str, low: str, ks: int, ke: int, name_start: int, kind: int) -> _Region | None:
    """The value to hide after the key ``low[name_start:ke]`` (identifier from ``ks``) when a blank,
    a quote or a backslash follows it (``=`` and ``:`` take :func:`_unquoted_assignment`).

    Each shape takes a short step chosen by the character after the key; whatever that leaves
    undecided (:data:`_UNDECIDED`) goes through the general parse (:func:`_general_assignment`).
    """
    nxt = low[ke]
    if nxt == " " or nxt == "\t":
        return _blank_after_key(text, low, ks, ke, name_start, kind)
    if (
        nxt == (low[ks - 1] if ks else " ")
        and (nxt == '"' or nxt == "'")
        and not (ks > 1 and low[ks - 2] == "\\")
    ):
        return _quoted_word_key(text, low, ks, ke, kind)
    if kind == _NOT_SECRET and nxt == "\\":
        return None
    return _UNDECIDED


def _unquoted_assignment(text: str, low: str, ks: int, ke: int, name_start: int, kind: int) -> _Region | None:
    """``key=value`` / ``key: value`` with an unquoted key: the fast path for the commonest form.

    A harmless key still hides a generated credential (``MAILGUN_KEY=key-3f…``) and the value of
    a query parameter that carries secrets (``?sig=…``); an unquoted ``key:x`` is ``file.py:42``
    or ``host:port``, not an assignment.
    """
    nxt = low[ke]
    if kind == _NOT_SECRET:
        if nxt == "=" and (token_end := _credential_after_key(text, low, name_start, ke)):
            return ke + 1, token_end, token_end
        before = low[ks - 1] if ks else " "
        if not (nxt == "=" and before in "?&#;" and name_start == ks and low[ks:ke] in _QUERY_KEYS):
            return None
        kind = _PLAIN
    c2 = low[ke + 1]
    if c2 in _PLAIN_VALUE_START:
        if nxt == ":":
            return None
        if kind == _PLAIN:
            # the bare word, unless a call after it makes it code; an over-long word, a special
            # word or a code reference is left to the general value parse
            m = _VAL_BARE.match(text, ke + 1)
            end = m.end() if m is not None else ke
            if (
                ke < end < ke + 1 + _BARE_LIMIT
                and (end - ke > 10 or text[ke + 1 : end].lower() not in _PLAIN_SPECIAL)
                and (
                    text[ke + 1] not in _CODE_ROOT_START
                    or _CODE_REFERENCE.fullmatch(text, ke + 1, end) is None
                )
            ):
                after_value = text[end] if end < len(text) else ""
                return None if after_value == "(" or after_value == "[" else (ke + 1, end, end)
    elif c2 in _NO_VALUE and c2 != " " and c2 != "\t":
        return None
    return _UNDECIDED


def _blank_after_key(text: str, low: str, ks: int, ke: int, name_start: int, kind: int) -> _Region | None:
    """Blanks after a secret key: a separator after them is left to the general parse, as is a
    ``--flag value``; with neither, only a bare ``Bearer <credential>`` is left to hide."""
    if kind == _NOT_SECRET:
        return None
    n = len(low)
    j = ke + 1
    while j < n and j - ke <= _SEP_SPACES and (low[j] == " " or low[j] == "\t"):
        j += 1
    if j < n and low[j] != "=" and low[j] != ":" and name_start == ks:
        return _bearer_region(text, low, name_start)
    return _UNDECIDED


def _quoted_word_key(text: str, low: str, ks: int, ke: int, kind: int) -> _Region | None:
    """``"key": value`` / ``'key' => value``: a quoted one-word key and its separator."""
    if kind == _NOT_SECRET or (ks > 1 and low[ks - 2] in _KEY_BOUNDARY):
        return None
    sep = _separator_end(low, ke + 1, True, False)
    if sep is None:
        return _UNDECIDED
    return _value_region(text, sep[0], kind, sep[1], low[ke])


def _general_assignment(text: str, low: str, ks: int, ke: int, name_start: int, kind: int) -> _Region | None:
    """The value of any assignment the short steps left undecided (:func:`_slow_assignment`);
    with no assignment, a key followed by a blank may still be a bare ``Bearer <credential>``."""
    found = _slow_assignment(text, low, ks, ke, name_start, name_start > ks, kind)
    if found is None:
        return _bearer_region(text, low, name_start) if low[ke] in " \t" else None
    value_at, kind, blank_sep = found
    before = low[ks - 1] if ks else " "
    enclosing = before if before == '"' or before == "'" else ""
    return _value_region(text, value_at, kind, blank_sep, enclosing)


# A value that looks like a credential rather than a name: a run of 16+ letters and digits mixed
# (``key-0123456789abcdef…``, ``sk_live_…``), in a word of token characters (no ``/``, no blank).
_TOKEN_VALUE: Final = re.compile(r"[A-Za-z0-9_.+=-]{20,512}")
_TOKEN_RUN: Final = re.compile(r"(?=[A-Za-z]{0,511}[0-9])(?=[0-9]{0,511}[A-Za-z])[A-Za-z0-9]{16,}")


def _credential_after_key(text: str, low: str, name_start: int, ke: int) -> int:
    """End of the value of ``NAME_KEY=<credential>`` (0 when it is not one).

    ``key`` alone is no secret word (``SORT_KEY=name``, ``primary_key=id``), but an unqualified
    ``*_KEY`` holding what looks like a generated token (``MAILGUN_KEY=key-3f…``) is a key."""
    if not low.endswith("key", name_start, ke) or (ke - 3 > name_start and low[ke - 4] not in "_-."):
        return 0
    value = _TOKEN_VALUE.match(text, ke + 1)
    if value is None or _TOKEN_RUN.search(value.group(0)) is None:
        return 0
    end = value.end()
    return 0 if end < len(text) and text[end] in "([/:@" else end


def _bearer_region(text: str, low: str, at: int) -> _Region | None:
    """The credential of a free-standing ``Bearer <credential>`` starting at ``at``."""
    if not low.startswith("bearer", at):
        return None
    m = _BEARER.match(low, at)
    if m is None:
        return None
    end = _extend(text, m.end(), _BEARER_MORE)
    return m.start(1), end, end


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
