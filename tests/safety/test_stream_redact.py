"""Streamed text is redacted as if it had arrived whole, however it is chunked."""

from __future__ import annotations

import random

import pytest

from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.redact.stream import StreamRedactor

TEXTS = [
    "Here is the config:\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789\nand more text.",
    "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD done",
    "the key is ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAabcdefghijk\nlmnopqrstuv\n"
    "-----END RSA PRIVATE KEY-----\nafter",
    "password: hunter2-very-secret and then prose",
    "curl -H 'Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789' "
    "https://u:p4ssw0rd@example.com/x?access_token=abcdef123456",
    "A plain sentence about streaming spinners, with no secrets at all.\nSecond line.",
]


def stream(text: str, rng: random.Random) -> tuple[str, list[str]]:
    redactor = StreamRedactor()
    out: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(1, 9)
        out.append(redactor.feed(text[i : i + n]))
        i += n
    out.append(redactor.flush())
    return "".join(out), out


@pytest.mark.parametrize("text", TEXTS)
def test_chunked_equals_whole(text: str):
    for seed in range(100):
        joined, _ = stream(text, random.Random(seed))
        assert joined == redact_text(text)


def test_plain_prose_streams_word_by_word():
    redactor = StreamRedactor()
    assert redactor.feed("Hello wor") == "Hello "
    assert redactor.feed("ld, how are") == "world, how "
    assert redactor.flush() == "are"


def test_a_secret_line_is_held_until_it_ends():
    redactor = StreamRedactor()
    assert redactor.feed("Authorization: Bea") == ""
    assert redactor.feed("rer abcdefghijklmnopqrstuvwx") == ""
    assert redactor.feed("yz0123\nnext") == "Authorization: Bearer [REDACTED]\n"


def test_a_pathological_line_cannot_stall_forever():
    redactor = StreamRedactor(max_hold=100)
    released = redactor.feed("key " + "word " * 100)
    assert released and len(redactor.pending) < 100
