"""A credential split across streamed chunks never leaks.

For every held form and every family the stream redactor already caught, the text is split into
two chunks at EVERY position, streamed word by word and character by character, and the
concatenated output must equal the one-shot redaction (which hides the secret and keeps the
words around it). Fixtures are assembled from harmless pieces so the file holds nothing a
secret scanner would flag.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acp_adapter.safety.redact import REDACTED, redact_text
from acp_adapter.safety.redact.stream import MAX_HOLD, StreamRedactor

_ALNUM = "A1b2C3d4E5f6G7h8J9k0LmNpQrStUvWxYz"


def _tok(prefix: str, n: int, alphabet: str = _ALNUM, offset: int = 0) -> str:
    return prefix + "".join(alphabet[(i * 7 + offset) % len(alphabet)] for i in range(n))


CLAIM = "agh" + "_claim_" + "PjKY" + _tok("", 39, _ALNUM + "-_", offset=2)
AWS_SECRET = "r8Vq" + _tok("", 36, _ALNUM + "/+", offset=6)
GHP = "gh" + "p_" + _tok("", 36)
BOT = "123456789:" + _tok("AA", 33, _ALNUM + "-_")

# (text, secret that must never appear in the output)
CASES: list[tuple[str, str]] = [
    # five command-line forms that carry a password
    ("then curl -u admin:Adm1nPa55 https://api.example.com/x and done", "Adm1nPa55"),
    ("run mysql -h db -u root -pR00tPa55 app now", "R00tPa55"),
    ("run mysql -h db -u root -p R00tPa55 app now", "R00tPa55"),
    ("run sshpass -p Ssh1Pa55 ssh deploy@host now", "Ssh1Pa55"),
    ("echo D0ck3rPa55 | docker login -u bob --password-stdin ghcr.io", "D0ck3rPa55"),
    ("redis-cli CONFIG SET requirepass R3d1sPa55 now", "R3d1sPa55"),
    ("npm config set //registry.npmjs.org/:_authToken npmT0k3nAbc done", "npmT0k3nAbc"),
    ("docker login --password-stdin <<< H3r3Pa55 done", "H3r3Pa55"),
    (".echo D0ck3rPa55|--password-stdin", "D0ck3rPa55"),  # a dot before the command word
    # claim tokens and AWS secret keys in prose
    (f"agh task release T-42 --claim {CLAIM} now", CLAIM),
    (f'got {{"task": "T-42", "claim": "{CLAIM}"}} back', CLAIM),
    (f"aws secret key is {AWS_SECRET} ok", AWS_SECRET),
    (f"AWS_SECRET_ACCESS_KEY {AWS_SECRET} ok", AWS_SECRET),
    # families the stream redactor already caught
    (f"the token is {GHP} ok", GHP),
    ("Authorization: Bearer abcdefghijklmnop0123456789 and more", "abcdefghijklmnop0123456789"),
    ("export OPENAI_API_KEY=s3cr3tValue123 done", "s3cr3tValue123"),
    (f"POST https://api.telegram.org/bot{BOT}/sendMessage ok", BOT.split(":")[1]),
    # forms found while writing these tests: a key whose secret word is glued on, and a phrase key
    ("DB_PASSWORD: hunter2xyz and more", "hunter2xyz"),
    ('x "API Key": "my s3cretvalue here" y', "s3cretvalue"),
    ('{"grant_type": "authorization_code",\n "code": "4/0AXauthc0de"}', "4/0AXauthc0de"),
]


def _stream(chunks: list[str], max_hold: int = MAX_HOLD) -> str:
    redactor = StreamRedactor(max_hold=max_hold)
    return "".join(redactor.feed(c) for c in chunks) + redactor.flush()


@pytest.mark.parametrize(("text", "secret"), CASES, ids=[c[0][:28] for c in CASES])
def test_every_split_point_word_and_char_equal_the_one_shot_redaction(text: str, secret: str) -> None:
    whole = redact_text(text)
    assert secret not in whole and REDACTED in whole
    for i in range(len(text) + 1):
        assert _stream([text[:i], text[i:]]) == whole, i
    assert _stream(re.findall(r"\S+\s*|\s+", text)) == whole  # word by word
    assert _stream(list(text)) == whole  # character by character


@pytest.mark.parametrize(("text", "secret"), CASES, ids=[c[0][:28] for c in CASES])
def test_three_chunk_splits_around_the_secret_never_leak(text: str, secret: str) -> None:
    at = text.index(secret)
    whole = redact_text(text)
    for i in range(max(0, at - 12), at + len(secret) + 1):
        for j in range(i, min(len(text), at + len(secret) + 3) + 1):
            assert _stream([text[:i], text[i:j], text[j:]]) == whole, (i, j)


def test_prose_still_streams_word_by_word() -> None:
    redactor = StreamRedactor()
    words = re.findall(r"\S+\s*", "the build passed and the tests ran in the code base of the project ")
    released = [redactor.feed(w) for w in words]
    assert sum(1 for r in released if r) >= len(words) - 3  # not held until the end of the line
    assert "".join(released) + redactor.flush() == "".join(words)


def test_a_trigger_holds_only_its_line() -> None:
    redactor = StreamRedactor()
    assert redactor.feed("sshpass -p ") == ""
    assert redactor.feed("Ssh1Pa55 ssh host") == ""
    assert redactor.feed("\nnext words ") == "sshpass -p [REDACTED] ssh host\nnext words "


def test_the_hold_is_bounded_by_max_hold() -> None:
    redactor = StreamRedactor(max_hold=64)
    released = "".join(redactor.feed(w + " ") for w in ["curl"] + ["word"] * 40)
    assert released.startswith("curl word") and len(redactor.pending) <= 64


def test_a_line_without_blanks_is_released_past_the_bound() -> None:
    redactor = StreamRedactor(max_hold=64)
    assert redactor.feed("x" * 200)  # no blank to cut at: released whole rather than stalled
    assert redactor.pending == ""


def test_a_long_private_key_is_one_placeholder_and_its_body_never_leaks() -> None:
    body = "\n".join(_tok("", 60, offset=k) for k in range(200))
    text = f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter it"
    whole = redact_text(text)
    out = _stream([text[i : i + 50] for i in range(0, len(text), 50)], max_hold=64)
    assert out == whole
    assert _tok("", 60, offset=150) not in out


def test_an_unterminated_private_key_is_dropped_to_the_end() -> None:
    body = "\n".join(_tok("", 60, offset=k) for k in range(200))
    text = f"-----BEGIN PRIVATE KEY-----\n{body}"
    out = _stream([text[i : i + 7] for i in range(0, len(text), 7)], max_hold=64)
    assert out == redact_text(text) == REDACTED


# --- properties ----------------------------------------------------------------------------

_PIECES = [
    " ",
    "  ",
    "\t",
    "\n",
    "the",
    "code",
    "key",
    "value",
    "pass",
    "token",
    "secret",
    "aws",
    "curl",
    "-u",
    "mysql",
    "-p",
    "sshpass",
    "echo",
    "|",
    "--password-stdin",
    "config",
    "set",
    "requirepass",
    "=",
    ":",
    '"',
    "'",
    "Bearer",
    "Authorization:",
    "grant_type",
    "client_id",
    "https://",
    "u:pw@host",
    "admin:Adm1nPa55",
    "-pR00tPa55",
    "Ssh1Pa55",
    "<<<",
    "DB_PASSWORD",
    "Client Secret",
    "API Key",
    CLAIM,
    AWS_SECRET,
    GHP,
    "é",
    "日本",
    REDACTED,
]
_SECRET_PIECES = {CLAIM, AWS_SECRET, GHP, "admin:Adm1nPa55", "-pR00tPa55", "Ssh1Pa55"}
_plain_text = st.lists(
    st.sampled_from([p for p in _PIECES if p not in _SECRET_PIECES]) | st.text(alphabet="abc -", max_size=6),
    max_size=20,
).map("".join)
_text = st.lists(st.sampled_from(_PIECES) | st.text(alphabet="abcXYZ019_-./", max_size=6), max_size=40).map(
    "".join
)


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
@example(text=".echo the|--password-stdin", cuts=[6])  # a dot before echo: one-shot redacts it
def test_random_chunkings_equal_the_one_shot_redaction(text: str, cuts: list[int]) -> None:
    assert _stream(_chunks(text, cuts)) == redact_text(text)


@settings(max_examples=150, deadline=None)
@given(
    before=_plain_text,
    after=_plain_text,
    case=st.sampled_from(CASES),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_random_chunkings_of_texts_with_secrets_never_leak(
    before: str, after: str, case: tuple[str, str], cuts: list[int]
) -> None:
    text = f"{before}\n{case[0]}\n{after}"
    out = _stream(_chunks(text, cuts))
    assert case[1] not in out
    assert out == redact_text(text)
