"""The recording ACP client and the agent starters the tests share (spawned over real pipes
or connected in process), with the checkout's ROOT and the test process's TEMP_ROOT."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

ROOT = Path(__file__).resolve().parents[2]


if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


#: One private temporary directory per test process (each xdist worker has its own), removed when
#: the process exits: a test run leaves nothing behind in the temp dir.
TEMP_ROOT = Path(tempfile.mkdtemp(prefix="acp-progress-test-"))


atexit.register(shutil.rmtree, TEMP_ROOT, True)


@dataclass
class Received:
    at: float
    session_id: str
    update: Any


@dataclass
class RecordingClient:
    """An editor stand-in: records every session update with its arrival time."""

    permission: str = "allow"  # "allow", "reject" or "cancel"
    updates: list[Received] = field(default_factory=list)
    permission_requests: list[Any] = field(default_factory=list)
    #: for each permission request, the statuses the client had seen for that card at that moment
    statuses_seen_at_permission: list[list[str | None]] = field(default_factory=list)
    on_update: Callable[[Received], None] | None = None
    #: ``available_commands_update`` notifications, kept apart: the agent sends one after every
    #: session/new, load and resume, and the conversation's updates are what most tests look at
    commands: list[Received] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        item = Received(time.monotonic(), session_id, update)
        if getattr(update, "session_update", None) == "available_commands_update":
            self.commands.append(item)
            return
        self.updates.append(item)
        if self.on_update is not None:
            self.on_update(item)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(tool_call)
        self.statuses_seen_at_permission.append(
            [u.status for u in self.cards().get(tool_call.tool_call_id, [])]
        )
        if self.permission == "cancel":
            from acp.schema import DeniedOutcome

            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        wanted = "allow" if self.permission == "allow" else "reject"
        option = next(o for o in options if o.kind.startswith(wanted))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    # -------------------------------------------------------------- views used by assertions

    def for_session(self, session_id: str) -> list[Any]:
        return [r.update for r in self.updates if r.session_id == session_id]

    def cards(self, session_id: str | None = None) -> dict[str, list[Any]]:
        """tool_call_id → its updates, in arrival order."""
        out: dict[str, list[Any]] = {}
        for r in self.updates:
            if session_id is not None and r.session_id != session_id:
                continue
            if isinstance(r.update, ToolCallStart | ToolCallProgress):
                out.setdefault(r.update.tool_call_id, []).append(r.update)
        return out

    def think_cards(self, session_id: str | None = None) -> dict[str, list[Any]]:
        return {
            cid: ups
            for cid, ups in self.cards(session_id).items()
            if isinstance(ups[0], ToolCallStart) and ups[0].kind == "think"
        }

    def answer(self, session_id: str | None = None) -> str:
        return "".join(
            r.update.content.text
            for r in self.updates
            if (session_id is None or r.session_id == session_id)
            and getattr(r.update, "session_update", "") == "agent_message_chunk"
        )


def final_status(updates: list[Any]) -> str | None:
    status = None
    for u in updates:
        if u.status:
            status = u.status
    return status


def agent_env(**overrides: str) -> dict[str, str]:
    env = {
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "ACP_PROGRESS_EMBEDDED_DELAY": "0.3",
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.05",
        "ACP_PROGRESS_LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
        "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"],
        "ACP_PROGRESS_CONFIG_DIR": os.environ["ACP_PROGRESS_CONFIG_DIR"],
    }
    env.update(overrides)
    return env


@contextlib.asynccontextmanager
async def spawn_agent(
    client: RecordingClient,
    *,
    env: dict[str, str] | None = None,
    argv: list[str] | None = None,
) -> AsyncIterator[tuple[Any, Any, Path]]:
    """Spawn ``python -m acp_adapter`` and yield (connection, process, stderr_log_path), initialised."""
    log = Path(tempfile.mkstemp(prefix="acp-agent-", suffix=".log", dir=TEMP_ROOT)[1])
    with log.open("wb") as stderr:
        async with spawn_agent_process(
            client,
            sys.executable,
            *(argv or ["-m", "acp_adapter"]),
            env=env or agent_env(),
            cwd=str(ROOT),
            transport_kwargs={"stderr": stderr},
        ) as (conn, process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="pytest", version="0"),
            )
            yield conn, process, log


async def prompt_text(conn: Any, session_id: str, text: str) -> Any:
    return await conn.prompt(session_id=session_id, prompt=[text_block(text)])


@contextlib.asynccontextmanager
async def sdk_served(agent: Any, client: Any) -> AsyncIterator[Any]:
    """``agent`` (any ACP agent) served by the SDK's own agent side (as ``acp.run_agent`` does) to
    ``client`` over the SDK's in-memory transports, initialised."""
    from acp._transport import memory_transport_pair
    from acp.core import AgentSideConnection, ClientSideConnection

    agent_end, client_end = memory_transport_pair()
    agent_conn = AgentSideConnection(agent, agent_end)
    client_conn = ClientSideConnection(client, client_end)
    try:
        await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield client_conn
    finally:
        await client_conn.close()
        await agent_conn.close()


@contextlib.asynccontextmanager
async def inprocess_agent(client: RecordingClient, agent: Any) -> AsyncIterator[Any]:
    """Connect ``agent`` (a ProgressAgent) and ``client`` (:func:`sdk_served`); the agent is shut
    down after."""
    try:
        async with sdk_served(agent, client) as conn:
            yield conn
    finally:
        agent.shutdown()


def fast_settings(**changes: Any) -> Any:
    from acp_adapter.config import Settings

    base = {"heartbeat_interval": 0.05, "embedded_delay": 0.2, "embedded_chunk_delay": 0.0}
    base.update(changes)
    return Settings(**base)  # type: ignore[arg-type]
