"""This project's agent shared or in the test process, for tests that only need an agent to talk to.

A front-end test that needs "two stored sessions in this state directory" before it runs
``watch --continue``, or that checks afterwards which session is the newest, would otherwise start
a CLI process (which starts an agent process) for each such step: two Python processes importing
the ACP SDK, over a second of CPU, for a step that proves nothing about the front-end. The agent writes the
same store whoever its client is, so these helpers run a :class:`ProgressAgent` over the SDK's
in-memory transports on the same state directory instead; the step the test is about still runs as
a real process.

End-to-end modules whose tests each need "this project's agent over real stdio", but nothing of a
process of their own (no kill, no hang-up, no environment of their own), share one agent process
per module: :class:`SharedAgent` routes each session's notifications and permission requests to
the test's own :class:`RecordingClient`, so tests stay independent (each makes its own session).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tests.helpers.acp_agent import RecordingClient, fast_settings, prompt_text, spawn_agent


@contextlib.asynccontextmanager
async def served_inprocess(
    client: Any, agent: Any, capabilities: Any = None, *, use_unstable_protocol: bool = False
) -> AsyncIterator[Any]:
    """``agent`` (a ProgressAgent) served to ``client`` over the SDK's in-memory transports with the
    connection ``serve`` builds (:func:`~acp_adapter.agent.routes.agent_connection`: the
    ``session/delete``, ``session/resume`` and ``session/close`` routes included), initialised as
    :func:`tests.helpers.acp_agent.spawn_agent` does (client ``pytest``, with ``capabilities`` or
    none): the agent a spawned process would be, minus the process. ``use_unstable_protocol``
    lets the client side take the SDK's unstable methods (``elicitation/create``)."""
    import asyncio

    from acp import PROTOCOL_VERSION
    from acp._transport import memory_transport_pair
    from acp.core import ClientSideConnection
    from acp.schema import ClientCapabilities, Implementation

    from acp_adapter.agent.routes import agent_connection

    agent_end, client_end = memory_transport_pair()
    agent_conn = agent_connection(agent, agent_end)
    listening = asyncio.ensure_future(agent_conn.listen())
    client_conn = ClientSideConnection(client, client_end, use_unstable_protocol=use_unstable_protocol)
    try:
        await client_conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=capabilities or ClientCapabilities(),
            client_info=Implementation(name="pytest", version="0"),
        )
        yield client_conn
    finally:
        listening.cancel()
        with contextlib.suppress(BaseException):
            await listening
        with anyio.CancelScope(shield=True):
            await agent.hang_up()  # as serve at the end of input: turns drained, MCP servers stopped
        await client_conn.close()
        await agent_conn.close()


def progress_agent(settings: Any = None, *, store: Any = None, **overrides: Any) -> Any:
    """This project's agent (the loop ``serve`` gives it) with ``settings``, or else the suite's
    fast settings (embedded model, 0.05 s think delay) with ``overrides``; ``store`` replaces the
    one the settings would open (a test's store with a shorter busy timeout, say)."""
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    if settings is None:
        settings = fast_settings(**{"embedded_delay": 0.05, **overrides})
    return ProgressAgent(turn_runner=AIAgent, settings=settings, store=store)


@contextlib.asynccontextmanager
async def agent_on(state: Path, **settings: Any) -> AsyncIterator[tuple[Any, RecordingClient]]:
    """A connection to an in-process agent keeping its sessions in ``state`` (and its client)."""
    client = RecordingClient()
    agent = progress_agent(fast_settings(state_dir=str(state), **settings))
    async with served_inprocess(client, agent) as conn:
        yield conn, client


async def _seed(state: Path, cwd: Path, prompts: Sequence[str]) -> list[str]:
    ids: list[str] = []
    async with agent_on(state, embedded_delay=0.0) as (conn, _client):
        for text in prompts:
            session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
            response = await prompt_text(conn, session.session_id, text)
            assert response.stop_reason == "end_turn", response
            ids.append(session.session_id)
    return ids


def seed_sessions(state: Path, cwd: Path, prompts: Sequence[str]) -> list[str]:
    """One stored session per prompt in ``state`` (in this order, so the last is the newest), as
    ``watch PROMPT`` run in ``cwd`` would leave them; returns their ids."""
    return anyio.run(_seed, state, cwd, prompts)


async def _listed(state: Path, cwd: Path) -> list[str]:
    async with agent_on(state) as (conn, _client):
        listed = await conn.list_sessions(cwd=str(cwd))
    return [info.session_id for info in listed.sessions]


def listed_sessions(state: Path, cwd: Path) -> list[str]:
    """The ids of the sessions stored in ``state`` for ``cwd``, newest first (``session/list``)."""
    return anyio.run(_listed, state, cwd)


@dataclass
class SessionRouter:
    """The one client of a shared agent process: each session's callbacks go to the test client
    that opened it. Notifications that arrive before :meth:`SharedAgent.new_session` registered the
    session (its ``available_commands_update`` may overtake the answer) are kept and handed over."""

    clients: dict[str, RecordingClient] = field(default_factory=dict)
    early: dict[str, list[tuple[Any, dict[str, Any]]]] = field(default_factory=lambda: defaultdict(list))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        client = self.clients.get(session_id)
        if client is None:
            self.early[session_id].append((update, kwargs))
            return
        await client.session_update(session_id, update, **kwargs)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        return await self.clients[session_id].request_permission(session_id, tool_call, options, **kwargs)


@dataclass
class SharedAgent:
    """One agent shared by a module's tests — a process (``python -m acp_adapter`` over stdio,
    :func:`shared_agent_process`) or in this process (:func:`shared_agent_inprocess`): each test
    opens its own sessions with its own client (:meth:`new_session`); a process's stderr log is
    shared, so a test reads the part it caused (:meth:`log_mark`, :meth:`log_since`)."""

    conn: Any
    router: SessionRouter
    process: Any
    log: Path | None  # None for an agent in this process (no stderr log of its own)

    async def new_session(self, client: RecordingClient, cwd: Any, mcp_servers: Sequence[Any] = ()) -> Any:
        """``session/new`` in ``cwd`` (with ``mcp_servers``); the session's updates and questions go
        to ``client``."""
        response = await self.conn.new_session(cwd=str(cwd), mcp_servers=list(mcp_servers))
        sid = response.session_id
        self.router.clients[sid] = client
        for update, kwargs in self.router.early.pop(sid, []):
            await client.session_update(sid, update, **kwargs)
        return response

    async def close_session(self, session_id: str) -> None:
        """``session/close`` (its MCP servers stop), through the SDK's client connection and models."""
        from acp.meta import AGENT_METHODS
        from acp.schema import CloseSessionRequest, CloseSessionResponse
        from acp.utils import request_model_from_dict

        request = CloseSessionRequest(session_id=session_id)
        await request_model_from_dict(
            self.conn._conn, AGENT_METHODS["session_close"], request, CloseSessionResponse
        )
        self.router.clients.pop(session_id, None)

    def log_mark(self) -> int:
        """Where the agent's stderr log ends now (see :meth:`log_since`)."""
        assert self.log is not None, "an agent in this process has no stderr log of its own"
        return self.log.stat().st_size

    def log_since(self, mark: int) -> str:
        """What the agent logged after ``mark``: the part of the shared log one test caused."""
        assert self.log is not None, "an agent in this process has no stderr log of its own"
        with self.log.open("rb") as handle:
            handle.seek(mark)
            return handle.read().decode("utf-8", "replace")


@contextlib.asynccontextmanager
async def shared_agent_process(env: dict[str, str] | None = None) -> AsyncIterator[SharedAgent]:
    """Start the agent process a module's tests share (use it from a module-scoped fixture)."""
    router = SessionRouter()
    async with spawn_agent(router, env=env) as (conn, process, log):  # it routes as a RecordingClient
        yield SharedAgent(conn, router, process, log)


@contextlib.asynccontextmanager
async def shared_agent_inprocess(settings: Any = None, **overrides: Any) -> AsyncIterator[SharedAgent]:
    """One agent in this process (:func:`progress_agent` with ``settings`` or ``overrides``) that
    a module's tests share as they would :func:`shared_agent_process`, for tests where the agent's
    process proves nothing (its MCP decisions and cards are the same in process): each test's
    sessions still go to its own client. It has no stderr log (:meth:`SharedAgent.log_since`)."""
    router = SessionRouter()
    async with served_inprocess(router, progress_agent(settings, **overrides)) as conn:
        yield SharedAgent(conn, router, None, None)
