"""``acp-progress relay`` in the test process: the editor (the test's SDK client) on one end of a
socket pair, the relay's own code on the other, the wrapped agent spawned by the relay as it is.

For relay tests whose point is what the relay forwards and injects (its think cards, heartbeats,
cancels, the wrapped agent's client methods): the relay's command line is parsed by the real parser,
its settings come from the environment given, and :func:`acp_adapter.frontends.relay.relay_streams`
is the code ``relay`` runs on stdio — only its process (an interpreter start and the ACP SDK
imported again, over a second of CPU) is gone, and the bytes still go through a real socket as
JSON-RPC lines. A test about the relay's process (its exit code, its stderr, the editor hanging up on
its stdin, a pipe that is never read) spawns it with :func:`tests.helpers.acp_agent.spawn_agent`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from acp import PROTOCOL_VERSION
from acp.core import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation

from tests.helpers.piped_agent import piped_agent

__all__ = ["injected", "relay_argv", "relay_inside"]

#: what ``relay_argv`` puts before the command line's own words
_MODULE_PREFIX = ["-m", "acp_adapter.cli"]


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``env`` over ``os.environ`` while the relay runs (its settings, and the agent it spawns,
    read it as a relay process started with ``env`` would), put back after."""
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _options(words: Sequence[str]) -> tuple[list[str], Any]:
    from acp_adapter.cli import build_parser
    from acp_adapter.cli._flags import settings_from
    from acp_adapter.cli.relay import relay_options

    args = build_parser(words).parse_args(words)
    chosen = relay_options(args, settings_from(args))
    assert not isinstance(chosen, int), f"relay {list(words)} is a usage error (exit {chosen})"
    return chosen


@contextlib.asynccontextmanager
async def relay_inside(
    client: Any,
    *,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    agent: Callable[[], Any] | None = None,
) -> AsyncIterator[tuple[Any, asyncio.Task[int]]]:
    """The relay ``argv`` (``-m acp_adapter.cli relay … -- AGENT``, as for a relay process) with
    ``client`` as its editor, initialised as :func:`~tests.helpers.acp_agent.spawn_agent`
    initialises: yields the connection and the relay's task (its result is the exit code). Leaving
    closes the editor's side (the relay sees the end of its input) and waits for the relay to end.

    With ``agent`` (a scripted foreign agent's constructor), ``argv`` ends at ``--`` and the agent
    the relay spawns is :func:`~tests.helpers.piped_agent.piped_agent`'s pipe process, with a new
    ``agent()`` in this process behind it."""
    async with contextlib.AsyncExitStack() as stack:
        if agent is not None:
            argv = [*argv, *await stack.enter_async_context(piped_agent(agent))]
        async with _relay_inside(client, argv, env) as served:
            yield served


@contextlib.asynccontextmanager
async def _relay_inside(
    client: Any, argv: Sequence[str], env: Mapping[str, str] | None
) -> AsyncIterator[tuple[Any, asyncio.Task[int]]]:
    from acp_adapter.frontends.relay import relay_streams
    from acp_adapter.protocol.stdio import STREAM_LIMIT

    words = list(argv)
    if words[:2] == _MODULE_PREFIX:
        words = words[2:]
    with _environment(env):
        agent_argv, options = _options(words)
        relay_end, editor_end = socket.socketpair()
        relay_reader, relay_writer = await asyncio.open_connection(sock=relay_end, limit=STREAM_LIMIT)
        editor_reader, editor_writer = await asyncio.open_connection(sock=editor_end, limit=STREAM_LIMIT)
        relay = asyncio.ensure_future(relay_streams(relay_reader, relay_writer, agent_argv, options))
        conn = ClientSideConnection(client, editor_writer, editor_reader)
        try:
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="pytest", version="0"),
            )
            yield conn, relay
        finally:
            with contextlib.suppress(OSError):
                editor_writer.write_eof()  # the editor hangs up, as at the end of a relay's stdin
            try:
                await asyncio.wait_for(asyncio.shield(relay), 15)
            finally:
                relay.cancel()
                await conn.close()
                relay_writer.close()
                editor_writer.close()


def relay_argv(
    *agent: str, think_after: str = "0.3", heartbeat: str = "0.1", extra: tuple[str, ...] = ()
) -> list[str]:
    """The argv of ``python`` running ``acp-progress relay`` with these timings around ``agent``
    (none: the argv ends at ``--``, for :func:`relay_inside`'s ``agent``)."""
    return [
        "-m",
        "acp_adapter.cli",
        "relay",
        "--think-after",
        think_after,
        "--heartbeat-interval",
        heartbeat,
        *extra,
        "--",
        *agent,
    ]


def injected(client: Any) -> dict[str, list[Any]]:
    """The think cards the relay injected (its own ids), of a recording client."""
    return {cid: ups for cid, ups in client.think_cards().items() if cid.startswith("relay-think-")}
