"""Credentials given as command-line arguments (redact pass 5).

A model that runs shell commands writes them the way people do: ``curl -u user:pass``,
``mysql -pPASS``, ``sshpass -p PASS``, ``npm config set //registry/:_authToken VALUE``,
``set -x API_TOKEN VALUE``, ``echo VALUE | docker login --password-stdin``. None of these has the
``key=value`` shape the key/value pass looks for, so they get their own scans. Each is anchored on
a literal (``-u``/``--user``, the mysql family's names, ``set``/``config``, ``--password-stdin``),
every repetition is bounded, and a cursor makes sure no character is examined twice by the same
scan, so the pass stays linear in its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final

_VALUE: Final = r"(?:\"[^\"\n]{1,512}\"|'[^'\n]{1,512}'|[^\s\"'|;&<>]{1,512})"

# ``curl -u user:pass`` / ``--user=user:pass``: the password after the first colon. A value that
# is only digits on both sides (``docker run -u 1000:1000``) is a uid:gid, not a credential.
# One pattern opening with the literal ``-u``, so ``re`` jumps between its occurrences instead of
# stopping at every dash of the text; ``--user`` is found at its own ``-u`` (one scan for both).
_USER_TAIL: Final = r"(?:[ \t]{1,8}|=)(?P<q>[\"']?)[^\s:\"']{0,256}:(?P<pw>[^\s\"']{1,512})"
_USER_FLAGS: Final = (re.compile(r"-u(?:(?<=--u)ser(?<![\w-]--user)|(?<![\w-]-u))" + _USER_TAIL),)
# The mysql family (and sshpass) take a password glued to ``-p`` (``-pPASS``); ``sshpass`` also
# with a blank (``sshpass -p PASS``).
# (literal, finder): the plain ``in`` test is a faster scan than the regex when the name is absent.
_MYSQL: Final = tuple(
    (literal, re.compile(pattern))
    for literal, pattern in (
        ("mysql", r"mysql(?<![\w.-]mysql)(?:dump|admin|import|check|sh)?\b"),
        ("mariadb", r"mariadb(?<![\w.-]mariadb)(?:-dump)?\b"),
        ("sshpass", r"sshpass(?<![\w.-]sshpass)\b"),
    )
)
_GLUED_P: Final = re.compile(
    r"(?<![\w-])-p(?P<pw>[^\s\"'|;&<>-][^\s\"'|;&<>]{0,511}|\"[^\"\n]{1,512}\"|'[^'\n]{1,512}')"
)
_SSHPASS_P: Final = re.compile(r"(?<![\w-])-p[ \t]{1,8}(?P<pw>" + _VALUE + ")")
# ``mysql -p PASS``: to mysql the word after ``-p `` is the database and the password is prompted
# for, but the spaced form is a common mistake, so a word there that looks like a password (two
# kinds of character of lower case, upper case, digits, symbols: ``R00tPa55``) is hidden, while a
# plain name (``mysql -u root -p app``) stays.
_SPACED_P: Final = re.compile(r"(?<![\w-])-p[ \t]{1,8}(?P<pw>[^\s\"'|;&<>-][^\s\"'|;&<>]{0,511})")


def _looks_like_password(value: str) -> bool:
    kinds = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
        any(not c.isalnum() for c in value),
    )
    return sum(kinds) >= 2


# ``set KEY VALUE`` (fish, tcsh ``setenv``, redis ``CONFIG SET``, ``npm/yarn config set``) and
# ``git config [--global] KEY VALUE``: the value when the key names a secret.
_SET_TAIL: Final = (
    r"(?:[ \t]{1,8}-{1,2}[a-z][a-z-]{0,20}){0,4}[ \t]{1,8}"
    r"(?P<key>[^\s=\"']{1,128})[ \t]{1,8}(?P<val>" + _VALUE + ")"
)
_SET_FORMS: Final = (
    re.compile(r"set(?<![\w.-]set)(?:env)?" + _SET_TAIL),
    re.compile(r"config(?<![\w.-]config)(?![ \t]{1,8}set\b)" + _SET_TAIL),
)
_KEY_TAIL: Final = re.compile(r"[A-Za-z0-9_.-]{1,128}$")
# ``echo VALUE | … --password-stdin`` / ``printf '%s' VALUE | …`` and ``… --password-stdin <<< VALUE``.
_STDIN_FLAG: Final = "--password-stdin"
_ECHO: Final = re.compile(
    r"(?<![\w-])(?:echo|printf)(?:[ \t]{1,8}-[a-zA-Z]{1,3})?(?:[ \t]{1,8}(?:'%s'|\"%s\"|%s))?"
    r"[ \t]{1,8}(?P<val>" + _VALUE + r")[ \t]{0,8}\|"
)
_HERE_STRING: Final = re.compile(r"[ \t]{0,8}<<<[ \t]{0,8}(?P<val>" + _VALUE + ")")
_LINE_SPAN: Final = 2048

# Registry and cloud logins take ``-p PASS`` (``docker``/``podman``/``buildah``/``skopeo``/``helm``/
# ``oras``/``az``/``nerdctl login``), ``redis-cli`` takes ``-a PASS``; the flag must follow the
# command word on its line. ``ps -p 123`` and ``ssh -p 22`` have no such word and stay.
# Each scan opens with its literal (``login``, ``redis-cli``, ``pass:``, ``password``, ``sudo``) so
# ``re`` jumps between occurrences; the words before it are checked in a short window afterwards.
_LOGINS: Final = (
    ("login", re.compile(r"login(?<![\w.-]login)\b")),
    ("redis-cli", re.compile(r"redis-cli(?<![\w.-]redis-cli)\b")),
)
_LOGIN_TOOL: Final = re.compile(
    r"(?<![\w.-])(?:docker|podman|buildah|skopeo|nerdctl|oras|helm(?:[ \t]{1,8}registry)?|az)[ \t]{1,8}\Z"
)
_TOOL_REACH: Final = 32
_LOGIN_P: Final = re.compile(r"(?<![\w-])-(?P<flag>[pa])(?:[ \t]{1,8}|=)?(?P<pw>" + _VALUE + ")")
# ``openssl … -pass pass:SECRET`` / ``-passin pass:…`` / ``-passout pass:…`` / ``-k``-less forms:
# the ``pass:`` source holds the password itself (``env:``/``file:``/``fd:`` only name it).
_OPENSSL_PASS: Final = re.compile(r"pass:(?<![\w.-]pass:)(?P<pw>" + _VALUE + ")")
# ``htpasswd -b FILE USER PASS`` / ``htpasswd -nb USER PASS``: the password is a positional word.
_HTPASSWD: Final = re.compile(r"htpasswd(?<![\w.-]htpasswd)\b")
# where any of the three ``pass`` families may start: ``pass:``, (ht)``passwd``, ``password``
_PASS_WORDS: Final = re.compile(r"pass(?:(?P<colon>:)|(?P<wd>wd)|word)")
_WORD: Final = re.compile(r"\"[^\"\n]{1,512}\"|'[^'\n]{1,512}'|[^\s\"'|;&<>]{1,512}")
# netrc: ``machine HOST login USER password SECRET`` (``default``/``account`` too), or a line that is
# only ``password SECRET`` (the one-token-per-line layout). Prose ("login with your password") has
# more than one word between the keywords and stays.
_NETRC: Final = re.compile(r"password(?<![\w.-]password)[ \t]{1,8}(?P<pw>" + _VALUE + ")")
_NETRC_REACH: Final = 280  # a keyword, a blank, a word (<= 256), a blank
_NETRC_NEAR: Final = 48  # the window tried first: two ordinary words and their blanks
_NETRC_WORDS: Final = frozenset({"machine", "default", "login", "account"})
_LINE_REST: Final = re.compile(r"[ \t]{0,16}(?:\n|\Z)")
# ``.pgpass``: ``host:port:database:user:password`` -- found from its port (digits or ``*``), the host
# checked backwards; the password ends the word (``\:`` escapes a colon in it).
# ``hostname:port:database:username:password`` (the format in the docs) and IPv6 addresses (more
# groups) do not match.
_PGPASS_LINE: Final = re.compile(
    r"\n[ \t]{0,8}+[^\s:]{1,256}+:(?:[0-9]{1,5}+|\*):[^\s:]{1,256}+:[^\s:]{1,256}+:"
    r"(?P<pw>(?:[^\s:\\]|\\.){1,512})[ \t]{0,8}(?=\r?\n|\Z)"
)
# where a ``.pgpass`` line may be: a port field (digits or ``*``) followed by two more fields
# (a finder only, so a superset: ``*`` followed by digits passes here and fails the whole-line match;
# one character class first is cheaper at each of a log's many colons than an alternation)
_PGPASS_PORT: Final = re.compile(r":[0-9*][0-9]{0,4}+:[^\s:]{1,256}+:[^\s:]{1,256}+:")
# hex groups only (``fe80:0:0:0:1``): an address, not a ``.pgpass`` line
_HEX_GROUPS: Final = re.compile(r"[0-9a-fA-F:]{1,2048}")
# ``echo PW | sudo -S …`` and ``sudo -S … <<< PW``: ``-S`` (upper case) reads the password from stdin.
_SUDO_S: Final = re.compile(
    r"sudo(?<![\w.-]sudo)(?:[ \t]{1,8}-[a-zA-Z]{1,8}|[ \t]{1,8}--[a-z-]{1,24}(?:=\S{1,64})?){0,16}?"
    r"[ \t]{1,8}-[a-zA-Z]{0,8}S"
)


def _unquoted(m: re.Match[str], group: str) -> tuple[int, int]:
    start, end = m.span(group)
    if end - start >= 2 and m.string[start] in "\"'" and m.string[end - 1] == m.string[start]:
        return start + 1, end - 1
    return start, end


def _is_reference(value: str) -> bool:
    """``$TOKEN`` / ``${TOKEN}`` / ``$(cat file)`` name where a secret lives, not the secret."""
    return value.startswith("$") or value.startswith("[REDACTED")


def redact_command_lines(text: str, low: str, is_secret_key: Callable[[str], bool]) -> list[tuple[int, int]]:
    """Spans of ``text`` (``low`` is its length-preserving lower-case copy) holding credentials
    passed as command-line arguments. ``is_secret_key`` is the one key classifier.

    Each family of tools passes its secret its own way, so each has a scan of its own; a scan
    whose literal is absent from ``low`` is not even called (the stream redactor calls this
    thousands of times per megabyte)."""
    spans: list[tuple[int, int]] = []
    _user_flag_passwords(text, spans)
    _client_passwords(text, low, spans)
    if "set" in low or "config" in low:
        _set_command_values(text, low, is_secret_key, spans)
    if _STDIN_FLAG in low:
        _password_stdin_values(text, low, spans)
    _password_families(text, low, spans)
    return spans


def _user_flag_passwords(text: str, spans: list[tuple[int, int]]) -> None:
    """``curl -u user:password`` / ``--user=user:password``: the part after the last colon."""
    for m in (m for flag in _USER_FLAGS for m in flag.finditer(text)):
        user_pw = m.group(0)
        colon = user_pw.rfind(":", 0, len(user_pw) - len(m.group("pw")))
        user = user_pw[:colon].rsplit(None, 1)[-1].lstrip("=\"'") if colon > 0 else ""
        pw = m.group("pw").rstrip("\"'")
        if (user.isdigit() and pw.isdigit()) or _is_reference(pw) or not pw:
            continue
        spans.append((m.start("pw"), m.start("pw") + len(pw)))


def _client_passwords(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """``mysql -pSECRET`` (glued, or spaced when it looks like a password) and ``sshpass -p SECRET``,
    on the rest of the line after the tool's name."""
    cursor = 0
    for m in _hits_in_order(low, _MYSQL):
        if m.start() < cursor:
            continue
        line_end = _line_window(low, m.end())
        pattern = _SSHPASS_P if m.group(0) == "sshpass" else _GLUED_P
        for p in pattern.finditer(text, m.end(), line_end):
            _keep_unquoted(text, p, "pw", spans)
        if pattern is _GLUED_P:
            for p in _SPACED_P.finditer(text, m.end(), line_end):
                value = p.group("pw")
                if _looks_like_password(value) and not _is_reference(value):
                    spans.append(p.span("pw"))
        cursor = line_end


def _set_command_values(
    text: str, low: str, is_secret_key: Callable[[str], bool], spans: list[tuple[int, int]]
) -> None:
    """``config set KEY VALUE`` / ``set KEY VALUE`` forms whose key the classifier calls secret."""
    for m in (m for form in _SET_FORMS for m in form.finditer(low)):
        key = text[m.start("key") : m.end("key")]
        tail = _KEY_TAIL.search(key)
        if tail is None or not is_secret_key(tail.group(0).lstrip("_.-")):
            continue
        _keep_unquoted(text, m, "val", spans)


def _password_stdin_values(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """``echo SECRET | docker login --password-stdin`` and ``... --password-stdin <<< SECRET``."""
    pos = 0
    # the next ``<<<`` at or after the cursor, found once and reused: searching every hit's
    # 2 KiB line window with the regex would examine the same characters ~100 times over
    next_here = low.find("<<<")
    while (hit := low.find(_STDIN_FLAG, pos)) != -1:
        line_start = max(low.rfind("\n", max(0, hit - _LINE_SPAN), hit) + 1, pos, hit - _LINE_SPAN)
        for e in _ECHO.finditer(text, line_start, hit):
            _keep_unquoted(text, e, "val", spans)
        after = hit + len(_STDIN_FLAG)
        line_end = low.find("\n", after, after + _LINE_SPAN)
        window_end = line_end if line_end != -1 else after + _LINE_SPAN
        if next_here != -1 and next_here < after:
            next_here = low.find("<<<", after)
        if next_here != -1 and next_here < window_end:
            here = _HERE_STRING.search(text, max(after, next_here - 8), window_end)
            if here is not None:
                _keep_unquoted(text, here, "val", spans)
        pos = after


def _keep_unquoted(text: str, m: re.Match[str], group: str, spans: list[tuple[int, int]]) -> None:
    """Keep the value in ``m``'s ``group`` (without its quotes) unless it names where a secret lives."""
    start, end = _unquoted(m, group)
    if not _is_reference(text[start:end]):
        spans.append((start, end))


_SCAN_DIRECTLY: Final = 4096


def _hits_in_order(low: str, finders: Iterable[tuple[str, re.Pattern[str]]]) -> list[re.Match[str]]:
    """Every match of the ``(literal, finder)`` pairs, by position. Each finder opens with its literal,
    so on a long text its scan costs what a ``literal in low`` test would (testing first was a second
    scan); on a short one the test is cheaper than starting the scan."""
    if len(low) < _SCAN_DIRECTLY:
        hits = [m for literal, finder in finders if literal in low for m in finder.finditer(low)]
    else:
        hits = [m for _literal, finder in finders for m in finder.finditer(low)]
    hits.sort(key=lambda m: m.start())
    return hits


def _line_window(low: str, start: int) -> int:
    end = low.find("\n", start, start + _LINE_SPAN)
    return end if end != -1 else min(len(low), start + _LINE_SPAN)


def _keep(text: str, m: re.Match[str], spans: list[tuple[int, int]]) -> None:
    start, end = _unquoted(m, "pw")
    if end > start and not _is_reference(text[start:end]):
        spans.append((start, end))


def _password_families(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """Password forms given on a command line or in a file: logins' ``-p``, ``redis-cli -a``, ``htpasswd -b``,
    openssl ``pass:``, netrc and ``.pgpass`` lines, ``sudo -S`` fed on stdin."""
    _login_passwords(text, low, spans)
    _pass_word_forms(text, low, spans)
    if ":" in low:
        _pgpass_lines(text, spans)
    if "sudo" in low:
        _sudo_stdin_passwords(text, low, spans)


def _login_passwords(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """A login tool's ``-p PASSWORD`` (``redis-cli``'s ``-a``) on the rest of its line."""
    cursor = 0
    for m in _hits_in_order(low, _LOGINS):
        if m.start() < cursor:
            continue
        if m.group(0) == "redis-cli":
            want = "a"
        elif _LOGIN_TOOL.search(low, max(0, m.start() - _TOOL_REACH), m.start()) is not None:
            want = "p"
        else:
            continue
        cursor = _line_window(low, m.end())
        for p in _LOGIN_P.finditer(text, m.end(), cursor):
            if p.group("flag") == want:
                _keep(text, p, spans)


def _pass_word_forms(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """openssl's ``pass:``, ``htpasswd`` and netrc's ``password`` share one scan for ``pass`` (a text
    full of prose "password" pays for one pass over it, not three). Each family resumes after its
    own last match, as its own scan would (a hit inside a value it already took is not tried again:
    ``pass:pass:…`` stays linear)."""
    netrc_from = openssl_from = 0
    for hit in _PASS_WORDS.finditer(low):
        start, end = hit.span()
        if end - start == 8:  # ``password``
            if start >= netrc_from:
                netrc_from = _netrc(text, low, start, spans)
        elif end - start == 5:  # ``pass:``
            if start >= openssl_from and (found := _OPENSSL_PASS.match(low, start)) is not None:
                _keep(text, found, spans)
                openssl_from = found.end()
        elif low.startswith("ht", start - 2) and _HTPASSWD.match(low, start - 2) is not None:
            _htpasswd(text, end, _line_window(low, end), spans)


def _pgpass_lines(text: str, spans: list[tuple[int, int]]) -> None:
    """A ``.pgpass`` line is a whole line, found from its port field followed by two more fields
    (a log's ``12:34:56`` is not: nothing is tried at a newline without such a port after it)."""
    seen_line = -2
    for port in _PGPASS_PORT.finditer(text):
        line_start = text.rfind("\n", max(0, port.start() - _LINE_SPAN), port.start())
        if line_start == seen_line:
            continue
        seen_line = line_start
        if line_start < 0:
            first = _PGPASS_LINE.match("\n" + text[:_LINE_SPAN])
            if first is not None and not _HEX_GROUPS.fullmatch(first.group(0).strip()):
                start, end = first.span("pw")
                spans.append((start - 1, end - 1))
            continue
        line = _PGPASS_LINE.match(text, line_start)
        if line is not None and not _HEX_GROUPS.fullmatch(line.group(0).strip()):
            _keep(text, line, spans)


def _sudo_stdin_passwords(text: str, low: str, spans: list[tuple[int, int]]) -> None:
    """``echo SECRET | sudo -S ...`` and ``sudo -S ... <<< SECRET``: the password sudo reads."""
    pos = 0
    next_here = low.find("<<<")
    for m in _SUDO_S.finditer(text):
        back = max(0, m.start() - _LINE_SPAN, pos)
        line_start = max(low.rfind("\n", back, m.start()) + 1, back)
        for e in _ECHO.finditer(text, line_start, m.start()):
            _keep_unquoted(text, e, "val", spans)
        pos = m.end()
        line_end = _line_window(low, m.end())
        if next_here != -1 and next_here < m.end():
            next_here = low.find("<<<", m.end())
        if next_here != -1 and next_here < line_end:
            here = _HERE_STRING.search(text, next_here, line_end)
            if here is not None:
                _keep_unquoted(text, here, "val", spans)


def _netrc(text: str, low: str, start: int, spans: list[tuple[int, int]]) -> int:
    """``machine H password P`` / ``login U password P``, or a line that is only ``password P``.

    Prose ("see the password reset link") is most of the hits, so the words before ``password`` are
    read from a short window first; the long one (a host word may be 256 characters) only when the
    short one cuts a word it needs. Returns where the next ``password`` may be tried.
    """
    before = low[max(0, start - _NETRC_NEAR) : start]
    words = before.rsplit(None, 2)
    if start > _NETRC_NEAR and len(words) < 3:
        before = low[max(0, start - _NETRC_REACH) : start]
        words = before.rsplit(None, 2)
    keyword = bool(words) and (words[-1] in _NETRC_WORDS or (len(words) > 1 and words[-2] in _NETRC_WORDS))
    if not keyword:
        tail = before.rpartition("\n")
        if tail[2].strip(" \t"):
            return start  # words before it on its line: prose
        if not tail[1] and start > len(before):
            tail = low[max(0, low.rfind("\n", 0, start) + 1) : start].rpartition("\n")
            if tail[2].strip(" \t"):
                return start
    m = _NETRC.match(low, start)
    if m is None:
        return start
    if keyword or _LINE_REST.match(low, m.end()) is not None:
        _keep(text, m, spans)
    return m.end()


def _htpasswd(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    """``htpasswd [-flags] [FILE] USER PASSWORD``: with ``b`` among the flags the password is the
    last positional word (the second with ``n``, which writes no file; else the third)."""
    flags = ""
    positional: list[re.Match[str]] = []
    for w in _WORD.finditer(text, start, end):
        word = w.group(0)
        if not positional and word.startswith("-") and len(word) > 1:
            flags += word[1:]
            continue
        positional.append(w)
        if len(positional) == 3:
            break
    if "b" not in flags:
        return
    index = 1 if "n" in flags else 2
    if len(positional) > index:
        w = positional[index]
        s, e = w.span()
        if e - s >= 2 and text[s] in "\"'" and text[e - 1] == text[s]:
            s, e = s + 1, e - 1
        if not _is_reference(text[s:e]):
            spans.append((s, e))
