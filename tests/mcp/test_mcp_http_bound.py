"""The bounded HTTP body of MCP transports, unit by unit: compressed bodies are inflated in bounded
pieces whatever the chunking (a bomb is counted piece by piece), an event stream is bounded per
event however its bytes are split, and a plain body as a whole."""

from __future__ import annotations

import gzip
import itertools
import zlib
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_adapter.mcp.http import BoundedStream, ResponseTooLarge, _decoder
from acp_adapter.mcp.limits import SizeGuard

PIECE = 64 << 10


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["gzip", "deflate"]),
    st.binary(max_size=4000),
    st.integers(min_value=1, max_value=300),
    st.lists(st.integers(min_value=0, max_value=10**6), max_size=8),
)
def test_inflating_gives_the_body_back_in_pieces_of_at_most_64_kib(
    encoding: str, seed: bytes, repeat: int, cuts: list[int]
) -> None:
    data = seed * repeat + b"x" * (repeat * 1000)  # compresses well: pieces come out full
    packed = gzip.compress(data) if encoding == "gzip" else zlib.compress(data)
    decode = _decoder(encoding)
    assert decode is not None
    pieces = [p for chunk in _chunks(packed, cuts) for p in decode(chunk)]
    assert b"".join(pieces) == data and all(len(p) <= PIECE for p in pieces)


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def _read(stream: BoundedStream) -> int:
    return sum([len(piece) async for piece in stream])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=900), min_size=1, max_size=6),
    st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r"]),
    st.lists(st.integers(min_value=0, max_value=10**5), max_size=10),
)
def test_an_event_stream_is_bounded_per_event_however_it_is_split(
    sizes: list[int], end: bytes, cuts: list[int]
) -> None:
    limit = 1000
    body = b"".join(b"data: " + b"y" * size + end for size in sizes)
    largest = max(len(b"data: ") + size for size in sizes)
    guard = SizeGuard(limit)
    stream = BoundedStream(_Chunks(_chunks(body, cuts)), guard, events=True)
    if largest + len(end) <= limit:  # every event (with its blank line) fits
        assert anyio.run(_read, stream) == len(body) and guard.tripped == 0
    elif largest > limit:  # one event's own bytes pass the limit
        with pytest.raises(ResponseTooLarge):
            anyio.run(_read, stream)
        assert guard.tripped == 1


def test_a_plain_body_is_bounded_as_a_whole_and_a_bomb_is_cut_after_the_limit() -> None:
    guard = SizeGuard(100_000)
    body = [b"z" * 60_000, b"z" * 60_000]
    with pytest.raises(ResponseTooLarge, match="larger than the 100,000 bytes limit"):
        anyio.run(_read, BoundedStream(_Chunks(body), guard, events=False))
    bomb = gzip.compress(b"\0" * (50 << 20))  # 50 MiB in about 50 KB
    decode = _decoder("gzip")
    assert len(bomb) < 100_000 and decode is not None
    with pytest.raises(ResponseTooLarge):
        anyio.run(_read, BoundedStream(_Chunks([bomb]), guard, events=False, decode=decode))
    assert guard.tripped == 2
