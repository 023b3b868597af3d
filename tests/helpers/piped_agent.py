"""An SDK agent served in the test's process, reached through a process that only pipes bytes.

For tests of a front-end that spawns its agent (the relay, the client driver, watch, chat,
sessions) whose point is what the front-end does with the agent's messages, not the agent's
process: the front-end still spawns a real process on real pipes (``tests/agents/socket_pipe.py``,
a few milliseconds of CPU to start), and the agent behind it — a scripted foreign agent, or this
project's agent served as ``serve`` serves it, built by ``make_agent`` — answers from this process
over a Unix socket, instead of an interpreter start and the ACP SDK imported again (over half a
second of CPU) per agent. A test about the agent's own process (its crash, its exit code, its
stderr, its children, what a spawned editor such as acpx sees) spawns the agent as it is.

:func:`piped_agent_thread` serves from a thread of its own, for a front-end run as a process of its
own or inside the test's process with its own event loop (``run_cli_inside``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.helpers.acp_agent import ROOT

__all__ = [
    "as_it_is_served",
    "as_its_script_does",
    "as_serve_does",
    "piped_agent",
    "piped_agent_thread",
    "piped_progress_agent",
]

SOCKET_PIPE = ROOT / "tests" / "agents" / "socket_pipe.py"

#: serves one agent on one connection's streams until the connection ends
Serve = Callable[[Any, asyncio.StreamWriter, asyncio.StreamReader], Awaitable[None]]


async def as_its_script_does(agent: Any, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> None:
    """A scripted SDK agent, as its script runs it on stdio (``acp.run_agent``)."""
    from acp import run_agent

    await run_agent(agent, writer, reader)  # to the agent's client, from it


async def as_it_is_served(agent: Any, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> None:
    """This project's agent as ``serve`` serves it (:func:`as_serve_does`), any other agent as its
    script runs it (:func:`as_its_script_does`)."""
    from acp_adapter.server import ProgressAgent

    serve = as_serve_does if isinstance(agent, ProgressAgent) else as_its_script_does
    await serve(agent, writer, reader)


async def as_serve_does(agent: Any, writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> None:
    """This project's agent (a ProgressAgent), as ``serve`` runs it on stdio
    (:func:`acp_adapter.server.serve_connection`; here the hang-up runs after the connection has
    seen the end of input, not before: the front-ends tested hang up with no turn running, or are
    gone by then)."""
    from acp_adapter.server import serve_connection

    await serve_connection(agent, reader, writer)


@contextlib.contextmanager
def piped_progress_agent(env: Mapping[str, str]) -> Iterator[str]:
    """The ``--agent`` command of a pipe process behind which this project's agent, with the
    settings ``env`` gives, answers from a thread of this process (a new agent per connection)."""
    from acp_adapter.config import Settings
    from tests.helpers.shared_agent import progress_agent

    with piped_agent_thread(lambda: progress_agent(Settings.from_env(env))) as argv:
        yield shlex.join(argv)


@contextlib.asynccontextmanager
async def piped_agent(
    make_agent: Callable[[], Any], serve_with: Serve = as_it_is_served
) -> AsyncIterator[list[str]]:
    """Yields the command line of an agent process whose every connection is served by a new
    ``make_agent()`` in this process, as its own process would serve it on its stdio
    (:func:`as_it_is_served`, unless ``serve_with`` says otherwise); leaving stops serving."""
    from acp_adapter.protocol.stdio import STREAM_LIMIT

    served: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        served.add(task)
        try:
            await serve_with(make_agent(), writer, reader)
        finally:
            writer.close()  # the pipe process sees the end and exits, as the agent's script would
            served.discard(task)

    folder = Path(tempfile.mkdtemp(prefix="acp-pipe-", dir="/tmp"))  # short: a socket path has ~100 bytes
    path = folder / "agent.sock"
    server = await asyncio.start_unix_server(serve, path=str(path), limit=STREAM_LIMIT)
    try:
        yield [sys.executable, "-S", str(SOCKET_PIPE), str(path)]
    finally:
        server.close()
        for task in list(served):
            task.cancel()
        await asyncio.gather(*served, return_exceptions=True)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def piped_agent_thread(
    make_agent: Callable[[], Any], serve_with: Serve = as_it_is_served
) -> Iterator[list[str]]:
    """:func:`piped_agent` served by an event loop in a thread of its own (stopped on leaving)."""
    started: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Event, list[str]]]
    started = concurrent.futures.Future()

    async def serve() -> None:
        try:
            stop = asyncio.Event()
            async with piped_agent(make_agent, serve_with) as argv:
                started.set_result((asyncio.get_running_loop(), stop, argv))
                await stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="piped-agent", daemon=True)
    thread.start()
    loop, stop, argv = started.result(timeout=30)
    try:
        yield argv
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
