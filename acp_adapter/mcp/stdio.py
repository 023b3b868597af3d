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
    bound = limit
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # no awaits until the task group is entered, or a cancellation would leak the process
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        try:
            async with read_stream_writer:
                try:
                    async for chunk in process.stdout:
                        buffer += chunk
                        start = 0
                        while (end := buffer.find(b"\n", start)) >= 0:
                            line = bytes(buffer[start:end]).decode(
                                server.encoding, server.encoding_error_handler
                            )
                            start = end + 1
                            try:
                                await read_stream_writer.send(sdk._parse_line(line))
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                        del buffer[:start]
                        if len(buffer) > bound:
                            if on_cut is not None:
                                on_cut()
                            else:
                                log.warning("an MCP server wrote a line longer than %d bytes", bound)
                            buffer.clear()
                            # closed now (the drain below runs until shutdown): the session sees
                            # the connection end and a call in flight fails
                            await read_stream_writer.aclose()
                            return
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError, UnicodeDecodeError):
            if not shutting_down:
                log.warning("reading from an MCP server's stdout failed")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    data = (json + "\n").encode(
                        encoding=server.encoding, errors=server.encoding_error_handler
                    )
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT) as flush_scope:
            await writer_done.wait()
        if flush_scope.cancelled_caught:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        await _stop_server_process(process, stop_grace)
        await sdk._aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # the server must stop even under cancellation
                await shutdown()
            tg.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


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
