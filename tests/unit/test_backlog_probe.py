"""The probe of what the peer has not read yet, on real kernel objects: a pipe (as stdio from a
Rust editor), an AF_UNIX socket pair (as stdio from a Node one) and the asyncio transports over
them; and no probe at all where it cannot know (a regular file, TCP)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import pytest

from acp_adapter.protocol.backlog import fd_backlog_probe, peer_backlog_probe

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe measures on Linux only"),
]


def test_a_pipe_counts_the_bytes_its_reader_has_not_read() -> None:
    read_end, write_end = os.pipe()
    try:
        probe = fd_backlog_probe(write_end)
        assert probe is not None
        assert probe() == 0
        os.write(write_end, b"x" * 1000)
        assert probe() == 1000
        assert os.read(read_end, 400) == b"x" * 400
        assert probe() == 600
        os.read(read_end, 600)
        assert probe() == 0
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_unix_socket_counts_what_its_receiver_has_not_consumed() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        probe = fd_backlog_probe(ours.fileno())
        assert probe is not None
        assert probe() == 0
        ours.sendall(b"x" * 1000)
        # the kernel's accounting size of the queued buffer: at least the payload
        assert probe() >= 1000  # type: ignore[operator]
        theirs.recv(400)
        assert probe() > 0  # type: ignore[operator]
        theirs.recv(600)
        assert probe() == 0


def test_a_closed_output_is_unknown_not_empty() -> None:
    read_end, write_end = os.pipe()
    closed = False
    probe = fd_backlog_probe(write_end, lambda: closed)
    assert probe is not None
    os.write(write_end, b"abc")
    assert probe() == 3
    closed = True
    assert probe() is None
    os.close(read_end)
    os.close(write_end)


def test_what_cannot_be_measured_gets_no_probe(tmp_path: Path) -> None:
    with open(tmp_path / "out.jsonl", "wb") as file:  # serve > out.jsonl
        assert fd_backlog_probe(file.fileno()) is None
    listener = socket.create_server(("127.0.0.1", 0))
    with listener, socket.create_connection(listener.getsockname()) as tcp:
        assert fd_backlog_probe(tcp.fileno()) is None  # its SIOCOUTQ counts unacknowledged bytes
    datagrams, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with datagrams, other:
        assert fd_backlog_probe(datagrams.fileno()) is None


async def test_a_pipe_transport_adds_its_own_buffer_to_the_kernels() -> None:
    """More than the 64 KiB pipe holds: the rest waits in the transport, and counts too."""
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    pipe = os.fdopen(write_end, "wb", buffering=0)
    transport, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, pipe)
    try:
        probe = peer_backlog_probe(transport)  # type: ignore[arg-type]
        assert probe is not None
        size = 200_000
        transport.write(b"y" * size)  # type: ignore[attr-defined]
        assert transport.get_write_buffer_size() > 0  # type: ignore[attr-defined]
        assert probe() == size
        reader = os.fdopen(read_end, "rb", buffering=0)
        got = 0
        while got < size:
            got += len(await asyncio.to_thread(reader.read, size - got))
            await asyncio.sleep(0)  # the transport writes more as the pipe drains
        for _ in range(100):
            if probe() == 0:
                break
            await asyncio.sleep(0.001)
        assert probe() == 0
        reader.close()
    finally:
        transport.close()
    await asyncio.sleep(0)
    assert probe() is None, "a closed transport's fd may belong to another file by now"


async def test_a_socket_transport_is_probed_through_its_socket() -> None:
    ours, theirs = socket.socketpair()
    _reader, writer = await asyncio.open_connection(sock=ours)
    try:
        probe = peer_backlog_probe(writer.transport)  # type: ignore[arg-type]
        assert probe is not None
        writer.write(b"z" * 500)
        assert probe() >= 500  # type: ignore[operator]
        assert theirs.recv(1000) == b"z" * 500
        assert probe() == 0
    finally:
        writer.close()
        theirs.close()
