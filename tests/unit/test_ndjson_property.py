"""Property test of the one line reader: whatever bytes arrive, it never raises, and every answer
it writes is one strict JSON line holding valid JSON-RPC error objects (bad input loses nothing)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from acp_adapter.protocol import (
    Accepted,
    JsonRpcStream,
    Refused,
    StreamLimits,
    classify_line,
    dumps_line,
    nesting_exceeds,
)

LIMITS = StreamLimits(max_line_bytes=2048, max_depth=8)


def _strict(line: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


class _Writer:
    """What JsonRpcStream needs of a StreamWriter, recording every write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def is_closing(self) -> bool:
        return False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    async def drain(self) -> None:
        return None


def _is_error_response(answer: Any) -> bool:
    error = answer.get("error") if isinstance(answer, dict) else None
    return (
        answer.get("jsonrpc") == "2.0"
        and "id" in answer
        and (answer["id"] is None or isinstance(answer["id"], str | int))
        and not isinstance(answer["id"], bool)
        and isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and isinstance(error.get("message"), str)
    )


async def _drive(data: bytes) -> tuple[list[dict[str, Any]], list[bytes]]:
    source = asyncio.StreamReader()
    source.feed_data(data)
    source.feed_eof()
    writer = _Writer()
    stream = JsonRpcStream(source, writer, LIMITS)  # type: ignore[arg-type]  # a recording writer
    accepted = []
    while (message := await stream.receive()) is not None:
        accepted.append(message)
    return accepted, writer.writes


def _nest(depth: int, inner: bytes) -> bytes:
    return b"[" * depth + inner + b"]" * depth


fragments = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(
        [
            b"{",
            b"}",
            b"[",
            b"]",
            b'"',
            b"\\",
            b"\n",
            b"NaN",
            b"Infinity",
            b"1e999",
            b'"\\ud800"',
            b"\xff\xfe",
            b'{"jsonrpc":"2.0","id":1,"method":"m"}',
            b'{"id":',
            b'"id":1.5',
            b"null",
            b" " * 700,
        ]
    ),
    st.builds(_nest, st.integers(0, 40), st.sampled_from([b"", b"1", b'"]"', b'"\\"["'])),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fragments, max_size=30))
def test_the_reader_never_raises_and_answers_only_in_strict_json_rpc(parts):
    accepted, writes = asyncio.run(_drive(b"".join(parts)))
    for message in accepted:
        assert isinstance(message, dict)
        if "id" in message:
            assert message["id"] is None or isinstance(message["id"], str | int)
    for data in writes:
        assert data.endswith(b"\n") and data.count(b"\n") == 1  # one whole line per write
        answer = _strict(data)
        answers = answer if isinstance(answer, list) else [answer]
        assert answers and all(_is_error_response(a) for a in answers), answer


def _expected(lines: list[bytes]) -> tuple[int, list[bytes]]:
    """What the stream owes for these lines: how many it hands on, and its answers in order — one
    per refused line that is due one (a notification batch is due none), none for the rest."""
    accepted = 0
    answers: list[bytes] = []
    for line in lines:
        if len(line) > LIMITS.max_line_bytes:
            answers.append(b"too long")  # compared by its error code below: skipped whole, answered once
            continue
        result = classify_line(line, LIMITS.max_depth)
        if isinstance(result, Accepted):
            accepted += 1
        elif isinstance(result, Refused) and result.answer is not None:
            answers.append(dumps_line(result.answer))
    return accepted, answers


line_of_fragments = st.lists(fragments, max_size=12).map(lambda parts: b"".join(parts).replace(b"\n", b""))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line_of_fragments, max_size=12))
@example([b" " * 3000 + b'{"jsonrpc":"2.0","id":1,"method":"m"}', b'{"id":NaN}', b"[" * 9, b"[]", b"[{}]"])
def test_every_refused_line_gets_exactly_one_answer_in_order(lines):
    accepted, writes = asyncio.run(_drive(b"".join(line + b"\n" for line in lines)))
    count, expected = _expected(lines)
    assert len(accepted) == count
    assert len(writes) == len(expected), (lines, writes)
    for written, due in zip(writes, expected, strict=True):
        if due == b"too long":
            answer = _strict(written)
            assert answer["id"] is None and answer["error"]["code"] == -32700
            assert "too long" in answer["error"]["data"]["details"]
        else:
            assert written == due


@given(st.integers(0, 60), st.sampled_from([b"", b"0", b'"[[[["', b'{"a":[]}']))
def test_the_nesting_scan_agrees_with_the_real_depth(depth, inner):
    line = _nest(depth, inner)
    real = depth + inner.count(b"{") + (1 if inner == b'{"a":[]}' else 0)
    assert nesting_exceeds(line, 8) is (real > 8)


def test_a_line_within_the_limits_is_accepted_untouched():
    line = b'{"jsonrpc":"2.0","id":"x","method":"m","params":{"s":"[[[[[[[[[[[[","n":[[1]]}}'
    accepted, writes = asyncio.run(_drive(line + b"\n"))
    assert writes == [] and accepted == [json.loads(line)]
    assert isinstance(Accepted(accepted[0], line), Accepted)
