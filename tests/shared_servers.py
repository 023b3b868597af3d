"""In-process agents and shared servers for the slower front-end and MCP test modules.

:func:`routed_agent` is :func:`tests.conftest.inprocess_agent` with the agent's own connection
(:func:`acp_adapter.agent.routes.agent_connection`, what ``serve`` builds), so ``session/close``,
``session/resume`` and ``session/delete`` are routed as in a real agent process. Tests use it
where the agent's process proves nothing (its exit, signals or stdio framing are not the point):
it saves the ~1 s of CPU each agent process pays to import the ACP SDK."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from acp import PROTOCOL_VERSION

__all__ = ["SharedAgent", "cli_in_process", "progress_agent", "routed_agent", "shared_agent"]


def progress_agent(**settings: Any) -> Any:
    """A ProgressAgent for this process with the test suite's fast settings (embedded model)."""
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    from .conftest import fast_settings

    base: dict[str, Any] = {"embedded_delay": 0.05}
    base.update(settings)
    return ProgressAgent(turn_runner=AIAgent, settings=fast_settings(**base))


@contextlib.contextmanager
def cli_in_process() -> Iterator[Any]:
    """``acp_adapter.cli.main`` for this process, for command lines that end before any agent
    or server starts (a refused flag, a bad file): the process start (~1 s of CPU) proves
    nothing there. The streams ``main`` wraps and the logging it sets up are put back after."""
    import logging
    import sys

    from acp_adapter.cli import main

    streams = sys.stdout, sys.stderr
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield main
    finally:
        sys.stdout, sys.stderr = streams
        root.handlers[:] = handlers
        root.setLevel(level)


@contextlib.asynccontextmanager
async def routed_agent(client: Any, agent: Any) -> AsyncIterator[Any]:
    """Connect ``client`` to ``agent`` over the SDK's in-memory transports, through the agent's
    own connection (with its extra routes); yields the initialised client connection."""
    from acp._transport import memory_transport_pair
    from acp.core import ClientSideConnection

    from acp_adapter.agent.routes import agent_connection

    agent_end, client_end = memory_transport_pair()
    agent_conn = agent_connection(agent, agent_end)
    client_conn = ClientSideConnection(client, client_end)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent_conn.listen)
            try:
                await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
                yield client_conn
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await agent.hang_up()  # as serve at the end of input: turns drained, MCP servers stopped
        await client_conn.close()
        await agent_conn.close()


@dataclass
class SharedAgent:
    """One agent process shared by a module's tests (each test makes sessions of its own)."""

    conn: Any
    process: Any
    log: Path
    client: Any

    def log_mark(self) -> int:
        """Where the agent's stderr log ends now (see :meth:`log_since`)."""
        return self.log.stat().st_size

    def log_since(self, mark: int) -> str:
        """What the agent logged after ``mark``: the part of the shared log one test caused."""
        with self.log.open("rb") as handle:
            handle.seek(mark)
            return handle.read().decode("utf-8", "replace")


@contextlib.asynccontextmanager
async def shared_agent(env: dict[str, str] | None = None) -> AsyncIterator[SharedAgent]:
    """A real agent process (``python -m acp_adapter`` over stdio) with one recording client,
    for a module-scoped fixture: a module whose tests only need "an agent to talk to" pays for
    one agent start instead of one per test. Tests must not rely on ``client.updates`` being
    empty (filter by their session id) and must leave ``client.on_update`` as they found it."""
    from .conftest import RecordingClient, spawn_agent

    client = RecordingClient()
    async with spawn_agent(client, env=env) as (conn, process, log):
        yield SharedAgent(conn, process, log, client)
