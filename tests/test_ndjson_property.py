"""Property test of the one line reader: whatever bytes arrive, it never raises, and every answer
it writes is one strict JSON line holding valid JSON-RPC error objects (issue 18)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_adapter.protocol import Accepted, JsonRpcStream, StreamLimits, nesting_exceeds

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
