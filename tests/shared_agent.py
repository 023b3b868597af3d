"""This project's agent in the test process, for the set-up and read-back steps of front-end tests.

A front-end test that needs "two stored sessions in this state directory" before it runs
``watch --continue``, or that checks afterwards which session is the newest, used to start a CLI
process (which starts an agent process) for each such step: two Python processes importing the ACP
SDK, over a second of CPU, for a step that proves nothing about the front-end. The agent writes the
same store whoever its client is, so these helpers run a :class:`ProgressAgent` over the SDK's
in-memory transports on the same state directory instead; the step the test is about still runs as
a real process.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from .conftest import RecordingClient, fast_settings, prompt_text


@contextlib.asynccontextmanager
async def served_inprocess(client: Any, agent: Any) -> AsyncIterator[Any]:
    """``agent`` (a ProgressAgent) served to ``client`` over the SDK's in-memory transports with the
    connection ``serve`` builds (:func:`~acp_adapter.agent.routes.agent_connection`: the
    ``session/delete``, ``session/resume`` and ``session/close`` routes included), initialised as
    :func:`tests.conftest.spawn_agent` does (client ``pytest``): the agent a spawned process would
    be, minus the process."""
    import asyncio

    from acp import PROTOCOL_VERSION
    from acp._transport import memory_transport_pair
    from acp.core import ClientSideConnection
    from acp.schema import ClientCapabilities, Implementation

    from acp_adapter.agent.routes import agent_connection

    agent_end, client_end = memory_transport_pair()
    agent_conn = agent_connection(agent, agent_end)
    listening = asyncio.ensure_future(agent_conn.listen())
    client_conn = ClientSideConnection(client, client_end)
    try:
        await client_conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="pytest", version="0"),
        )
        yield client_conn
    finally:
        await client_conn.close()
        await agent_conn.close()
        listening.cancel()
        with contextlib.suppress(BaseException):
            await listening
        agent.shutdown()


def progress_agent(settings: Any) -> Any:
    """This project's agent (the loop ``serve`` gives it) with ``settings``."""
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    return ProgressAgent(turn_runner=AIAgent, settings=settings)


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
