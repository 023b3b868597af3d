"""Passwords that particular programs take as arguments of their own (part of the command-line pass).

Many programs read a password from a flag or a position that means "password" only to them:
``7z a -pPASS``, ``zip -P PASS``, ``keytool -storepass PASS``, ``smbclient -U user%PASS``,
``ldapsearch -w PASS``, ``sqlcmd -P PASS``, ``plink -pw PASS``, ``sshpass -pPASS``,
``chpasswd <<< user:PASS``, ``nmcli … password PASS``, ``wpa_passphrase SSID PASS``,
``net use \\\\srv\\share PASS``. Nothing in them has the ``key=value`` shape the key/value pass
reads, and the same flag after another program is harmless (``unzip -p`` prints a file, ``sort -P``,
``ssh -p 22``), so each flag is read only on the line of the program that gives it that meaning.

Every scan opens with its program's literal (``re`` jumps between occurrences), reads at most the
rest of that line, and every repetition is bounded: the pass stays linear in its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from acp_adapter.safety.redact.cmdline import _VALUE, _hits_in_order, _is_reference, _line_window, _unquoted

_Spans = list[tuple[int, int]]
#: a scan of one program's arguments: (text, lower-case copy, after the name, line end, spans found)
#: → where it stopped reading (a later hit of the same scan before that point was read already)
_Scan = Callable[[str, str, int, int, _Spans], int]


def _flag(pattern: str) -> re.Pattern[str]:
    """A flag (case as written: ``-P`` and ``-p`` differ) followed by its value."""
    return re.compile(r"(?<![\w-])(?:" + pattern + r")(?P<pw>" + _VALUE + ")")


_BLANKS: Final = r"[ \t]{1,8}"
# ``-pPASS`` glued (7-Zip, RAR, sshpass): ``-p`` alone asks for the password and stays.
_GLUED_LOWER_P: Final = _flag(r"-p(?=[^\s\"'|;&<>-])")
_ZIP_P: Final = _flag(r"-P(?:" + _BLANKS + r"|(?=[^\s\"'|;&<>-]))")
_KEYTOOL: Final = _flag(r"-(?:src|dest)?(?:store|key)pass" + _BLANKS + r"|-new" + _BLANKS)
_LDAP_W: Final = _flag(r"-w(?:" + _BLANKS + r"|(?=[^\s\"'|;&<>-]))")
# ``ldappasswd -s NEW`` sets a new password and ``-a OLD`` gives the old one
_LDAPPASSWD: Final = _flag(r"-[sa]" + _BLANKS)
_SQLCMD_P: Final = _flag(r"-P(?:" + _BLANKS + r"|(?=[^\s\"'|;&<>-]))")
_PUTTY_PW: Final = _flag(r"-pw" + _BLANKS)
# Samba's ``-U user%password`` / ``--user=user%password`` (also ``net … -U``, ``smbmap``)
_SAMBA_USER: Final = re.compile(
    r"(?<![\w-])(?:-U|--user(?:name)?)(?:" + _BLANKS + r"|=)[\"']?[^\s%\"'|;&<>]{1,256}%"
    r"(?P<pw>[^\s\"'|;&<>]{1,512})"
)
# nmcli: ``password PASS``, ``wifi-sec.psk PASS``, ``802-1x.password PASS``, ``wep-key0 PASS`` …
_NMCLI_SECRET: Final = re.compile(
    r"(?<![\w.-])(?:[a-z0-9-]{1,32}\.)?(?:password|psk|wep-key[0-3]|pin|private-key-password"
    r"|leap-password|password-raw)" + _BLANKS + r"(?P<pw>" + _VALUE + ")"
)
_WORD: Final = re.compile(r"\"[^\"\n]{1,512}\"|'[^'\n]{1,512}'|[^\s\"'|;&<>]{1,512}")
# the user:password pairs ``chpasswd`` reads, and ``passwd --stdin``'s password, fed on stdin
_HERE: Final = re.compile(r"<<<[ \t]{0,8}(?P<val>" + _VALUE + ")")
_ECHOED: Final = re.compile(
    r"(?<![\w-])(?:echo|printf)(?:[ \t]{1,8}-[a-zA-Z]{1,3})?(?:[ \t]{1,8}(?:'%s\\n?'|\"%s\\n?\"|%s))?"
    r"[ \t]{1,8}(?P<val>" + _VALUE + r")[ \t]{0,8}\|[ \t]{0,8}(?:sudo[ \t]{1,8})?$"
)
_NET_VERB: Final = re.compile(r"[ \t]{1,8}(?P<verb>use|user)(?![\w.-])")
_COMMAND_END: Final = re.compile(r"[&;|\n]")
_DEVICE: Final = re.compile(r"(?:[a-z]:|\*|lpt[0-9]:|com[0-9]:)", re.IGNORECASE)
_PASSWORD_LINE: Final = 256


def _keep(text: str, m: re.Match[str], group: str, spans: _Spans) -> None:
    start, end = _unquoted(m, group)
    if end > start and not _is_reference(text[start:end]):
        spans.append((start, end))


def _flags(*patterns: re.Pattern[str]) -> _Scan:
    """A scan that hides the value of any of ``patterns`` on the program's line."""

    def scan(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
        for pattern in patterns:
            for m in pattern.finditer(text, start, end):
                _keep(text, m, "pw", spans)
        return end

    return scan


def _after_colon(text: str, start: int, end: int, spans: _Spans) -> None:
    """``user:password`` (or just ``password``): the part after the first colon."""
    colon = text.find(":", start, end)
    start = colon + 1 if colon != -1 else start
    if end > start and not _is_reference(text[start:end]):
        spans.append((start, end))


def _stdin_fed(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
    """``chpasswd <<< user:PASS`` and ``echo user:PASS | chpasswd`` (``passwd --stdin`` alike)."""
    here = _HERE.search(text, start, end)
    if here is not None:
        value_start, value_end = _unquoted(here, "val")
        _after_colon(text, value_start, value_end, spans)
    line_start = max(low.rfind("\n", max(0, start - _PASSWORD_LINE), start) + 1, start - _PASSWORD_LINE, 0)
    program_start = start - 1
    while program_start > line_start and not low[program_start - 1].isspace():
        program_start -= 1
    echoed = _ECHOED.search(text[line_start:program_start].rstrip(" \t") or "", 0)
    if echoed is not None:
        value_start, value_end = _unquoted(echoed, "val")
        _after_colon(text, line_start + value_start, line_start + value_end, spans)
    return end


def _passwd_stdin(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
    if "--stdin" in low[start:end]:
        _stdin_fed(text, low, start, end, spans)
    return end


def _wpa_passphrase(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
    """``wpa_passphrase SSID PASSPHRASE``: the second word."""
    words = [w for _, w in zip(range(2), _WORD.finditer(text, start, end), strict=False)]
    if len(words) == 2:
        _keep_word(text, words[1], spans)
        return words[1].end()
    return end


def _keep_word(text: str, word: re.Match[str], spans: _Spans) -> None:
    s, e = word.span()
    if e - s >= 2 and text[s] in "\"'" and text[e - 1] == text[s]:
        s, e = s + 1, e - 1
    if e > s and not _is_reference(text[s:e]):
        spans.append((s, e))


def _net(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
    """Windows' ``net use [DEVICE] \\\\server\\share [PASSWORD] [/user:NAME]`` and
    ``net user NAME PASSWORD``: the password is the word that is no device, share, option or name
    (``*`` asks for it and stays)."""
    verb = _NET_VERB.match(low, start)
    if verb is None:
        return start
    command_end = _COMMAND_END.search(low, verb.end(), end)
    end = command_end.start() if command_end is not None else end
    positional: list[re.Match[str]] = []
    for w in _WORD.finditer(text, verb.end(), end):
        word = w.group(0)
        if word.startswith("/"):
            continue
        if verb.group("verb") == "use" and (word.startswith("\\\\") or _DEVICE.fullmatch(word)):
            continue
        positional.append(w)
    if verb.group("verb") == "user":
        positional = positional[1:2]  # the first word is the account's name
    for w in positional[:1]:
        if w.group(0) != "*":
            _keep_word(text, w, spans)
    return end


_SAMBA_SCAN: Final = _flags(_SAMBA_USER)


def _net_command(text: str, low: str, start: int, end: int, spans: _Spans) -> int:
    """``net use``/``net user`` (Windows) and Samba's own ``net … -U user%password``."""
    command_end = _net(text, low, start, end, spans)
    if command_end == start:  # no ``use``/``user`` verb: Samba's form may be anywhere on the line
        command_end = end
    return _SAMBA_SCAN(text, low, start, command_end, spans)


_LDAP_SCAN: Final = _flags(_LDAP_W)
_SCAN_OF: Final[dict[str, _Scan]] = {
    **dict.fromkeys(("7z", "7za", "7zr", "rar", "unrar", "sshpass"), _flags(_GLUED_LOWER_P)),
    **dict.fromkeys(("zip", "unzip", "zipcloak"), _flags(_ZIP_P)),
    **dict.fromkeys(("keytool", "jarsigner"), _flags(_KEYTOOL)),
    **dict.fromkeys(
        (
            "ldapsearch",
            "ldapadd",
            "ldapmodify",
            "ldapdelete",
            "ldapmodrdn",
            "ldapcompare",
            "ldapwhoami",
            "ldapexop",
        ),
        _LDAP_SCAN,
    ),
    "ldappasswd": _flags(_LDAP_W, _LDAPPASSWD),
    **dict.fromkeys(("sqlcmd", "bcp", "osql"), _flags(_SQLCMD_P)),
    **dict.fromkeys(("plink", "pscp", "psftp", "putty"), _flags(_PUTTY_PW)),
    **dict.fromkeys(
        ("smbclient", "rpcclient", "smbcacls", "smbget", "smbmap", "smbtree", "smbcquotas"), _SAMBA_SCAN
    ),
    "nmcli": _flags(_NMCLI_SECRET),
    "chpasswd": _stdin_fed,
    "passwd": _passwd_stdin,
    "wpa_passphrase": _wpa_passphrase,
    "net": _net_command,
}
#: what every program name above contains: one scan of the text per core (each scan of a long text
#: costs a pass over it, so the 35 names share 17 of them); a hit's whole word is then looked up
_CORES: Final = (
    "7z",
    "rar",
    "zip",
    "sshpass",
    "keytool",
    "jarsigner",
    "ldap",
    "sqlcmd",
    "bcp",
    "osql",
    "p",
    "smb",
    "rpcclient",
    "nmcli",
    "passwd",
    "wpa_passphrase",
    "net",
)
_FINDERS: Final = tuple(
    (core, re.compile(r"p(?=(?:link|scp|sftp|utty)(?![\w.-]))"))
    if core == "p"
    else (core, re.compile(re.escape(core) + r"(?=[a-z0-9_]{0,16}(?![\w.-]))"))
    for core in _CORES
)
#: the program names, for the redactor's screen (a text naming none of them skips this scan)
TOOL_LITERALS: Final = tuple(_SCAN_OF)
_WORD_START: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.")
_NAME_END: Final = re.compile(r"[a-z0-9_]{0,16}")


def redact_tool_arguments(text: str, low: str) -> _Spans:
    """Spans of ``text`` (``low``: its length-preserving lower-case copy) holding a password given
    to one of the programs above."""
    spans: _Spans = []
    # each scan reads a program's line once: a hit of the same scan inside a line it already read
    # is skipped (``keytool -storepass keytool -storepass …`` costs one read per line, not per hit)
    read_to: dict[_Scan, int] = {}
    for m in _hits_in_order(low, _FINDERS):
        name_start = m.start()
        while name_start and low[name_start - 1] in _WORD_START and m.start() - name_start < 16:
            name_start -= 1
        rest = _NAME_END.match(low, m.start())
        name_end = rest.end() if rest is not None else m.end()
        scan = _SCAN_OF.get(low[name_start:name_end])
        if scan is None or (name_start and low[name_start - 1] in _WORD_START):
            continue
        if name_start < read_to.get(scan, 0):
            continue
        read_to[scan] = scan(text, low, name_end, _line_window(low, name_end), spans)
    return spans
