"""This project's agent served in the benchmark's own process, for benchmarks that time one path.

A benchmark that times the client side of one path (an MCP progress value, a task's status
change) runs the agent and an ACP client in one process over the SDK's in-memory transport, so a
single clock stamps both ends and no process start or pipe adds noise. The agent is the real
``ProgressAgent`` with the real turn loop and the embedded model with its delays off, so only the
path under test takes time; the session store is in memory, so no disk write does either.
"""

from __future__ import annotations

from typing import Any

from acp import PROTOCOL_VERSION
from acp._transport import memory_transport_pair
from acp.core import AgentSideConnection, ClientSideConnection
from acp.schema import AllowedOutcome, RequestPermissionResponse

import acp_adapter.server as server_module
from acp_adapter.config import Settings
from acp_adapter.models.embedded import EmbeddedModel
from acp_adapter.store import MemoryStore


async def serve_in_memory(client: Any) -> tuple[server_module.ProgressAgent, ClientSideConnection]:
    """The agent (settings from the environment) and ``client``'s initialized connection to it."""
    from run_agent import AIAgent  # the loop module sits at the project root, on sys.path

    model = EmbeddedModel(think_delay=0.0, chunk_delay=0.0)
    settings = Settings.from_env()
    agent = server_module.ProgressAgent(settings, turn_runner=AIAgent, model=model, store=MemoryStore())
    agent_end, client_end = memory_transport_pair()
    AgentSideConnection(agent, agent_end)  # type: ignore[arg-type]
    conn = ClientSideConnection(client, client_end)  # type: ignore[arg-type]
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    return agent, conn


async def allow_once(options: list[Any], **kwargs: Any) -> RequestPermissionResponse:
    """A client's answer to every permission question: allow this once (the benchmarks time
    progress, not the question)."""
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))
