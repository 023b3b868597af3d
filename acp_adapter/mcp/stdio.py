"""The ``mcp`` SDK's stdio client transport with one addition: a bound on the length of a line.

Why: the SDK's ``stdio_client`` keeps appending a server's stdout to one buffer until it sees a
newline, so a server that writes without ever ending its line grows the agent's memory without
limit. This is the SDK's transport, step for step — same process start (its own process group),
same message parsing, same shutdown sequence (close stdin, wait, SIGTERM then SIGKILL of the
group), all by the SDK's own functions — except that the reader counts: a line longer than
``max_line`` bytes ends the connection (the session sees it closed: a call in flight fails as a
crash) instead of growing the buffer. Messages stay the SDK's models; nothing here writes MCP JSON.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

import anyio
import anyio.lowlevel
from mcp.client import stdio as sdk
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.os.win32.utilities import ServerProcess, close_process_job
from mcp.shared.message import SessionMessage

from acp_adapter.mcp.limits import MAX_MESSAGE

log = logging.getLogger("acp_progress.mcp")


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters,
    errlog: TextIO,
    limit: int = MAX_MESSAGE,
    on_cut: Callable[[], None] | None = None,
    stop_grace: float = sdk.PROCESS_TERMINATION_TIMEOUT,
) -> AsyncGenerator[TransportStreams, None]:
    """Like ``mcp.client.stdio.stdio_client``, with lines bounded to ``limit`` bytes; ``on_cut``
    is told when a line was cut off. ``stop_grace`` is how long the server may take to exit once
    its stdin is closed before its process group is terminated."""
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # no awaits until the task group is entered, or a cancellation would leak the process
    pipes = _ServerPipes(process, server, limit, on_cut)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.read_stdout)
        tg.start_soon(pipes.write_stdin)
        try:
            yield pipes.read_stream, pipes.write_stream
        finally:
            with anyio.CancelScope(shield=True):  # the server must stop even under cancellation
                await pipes.shutdown(stop_grace)
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


class _ServerPipes:
    """The session's streams joined to a server process's stdout and stdin, and their shutdown.

    Why an object: the reader, the writer and the shutdown share the four stream ends, the process
    and whether the connection is shutting down (a read failing then is expected, not worth a
    warning)."""

    def __init__(
        self,
        process: ServerProcess,
        server: StdioServerParameters,
        limit: int,
        on_cut: Callable[[], None] | None,
    ) -> None:
        self._process = process
        self._server = server
        self._limit = limit
        self._on_cut = on_cut
        self._read_writer, self.read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream, self._write_reader = anyio.create_memory_object_stream[SessionMessage](0)
        self._shutting_down = False
        self._writer_done = anyio.Event()

    async def read_stdout(self) -> None:
        """The server's stdout, line by line, to the session; the rest of it drained at the end."""
        try:
            async with self._read_writer:
                try:
                    await self._forward_lines()
                finally:
                    await sdk._drain_stdout(self._process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError, UnicodeDecodeError):
            if not self._shutting_down:
                log.warning("reading from an MCP server's stdout failed")

    async def _forward_lines(self) -> None:
        """Parse each complete line into a message for the session; a line past the limit ends the
        connection instead of growing the buffer."""
        assert self._process.stdout is not None
        encoding, errors = self._server.encoding, self._server.encoding_error_handler
        buffer = bytearray()
        async for chunk in self._process.stdout:
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[start:end]).decode(encoding, errors)
                start = end + 1
                try:
                    await self._read_writer.send(sdk._parse_line(line))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
            del buffer[:start]
            if len(buffer) > self._limit:
                if self._on_cut is not None:
                    self._on_cut()
                else:
                    log.warning("an MCP server wrote a line longer than %d bytes", self._limit)
                buffer.clear()
                # closed now (the drain after this runs until shutdown): the session sees the
                # connection end and a call in flight fails
                await self._read_writer.aclose()
                return

    async def write_stdin(self) -> None:
        """The session's messages to the server's stdin, one line each."""
        assert self._process.stdin is not None
        try:
            async with self._write_reader:
                async for session_message in self._write_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    data = (json + "\n").encode(
                        encoding=self._server.encoding, errors=self._server.encoding_error_handler
                    )
                    await self._process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self._read_writer.aclose()
        finally:
            self._writer_done.set()

    async def shutdown(self, stop_grace: float) -> None:
        """The SDK's sequence: close the session's ends, let the writer flush (bounded), stop the
        server process, close every stream."""
        self._shutting_down = True
        self.read_stream.close()
        self.write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT) as flush_scope:
            await self._writer_done.wait()
        if flush_scope.cancelled_caught:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        await _stop_server_process(self._process, stop_grace)
        await sdk._aclose_all(self.read_stream, self.write_stream, self._read_writer, self._write_reader)
        await anyio.lowlevel.checkpoint()


async def _stop_server_process(process: ServerProcess, grace: float) -> None:
    """The SDK's shutdown sequence (close stdin, wait, terminate the group, reap), with the wait
    before the terminate ``grace`` seconds instead of the SDK's fixed one."""
    assert process.stdin and process.stdout, "server process is spawned with pipes"
    await sdk._close_pipe(process.stdin)
    if not await sdk._wait_for_process_exit(process, grace):
        await sdk._terminate_process_tree(process)
        if not await sdk._wait_for_process_exit(process, sdk._KILL_REAP_TIMEOUT):
            log.warning("MCP server process %d is still alive after the kill; abandoning it", process.pid)
    close_process_job(process)
    await sdk._close_pipe(process.stdout)
    sdk._close_subprocess_transport(process)
