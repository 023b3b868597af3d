"""What every SDK-side test agent repeats, written once: keep the connection, answer ``initialize``
with a name and a title, number the sessions it opens, note ``session/cancel``, and send updates.

Why a module of its own: the test agents differ in what a prompt does; the handshake around it was
the same twenty lines in each. An agent is run as a script (``python tests/agents/X.py``, where only
its own folder is on the path) as well as imported from the tests (``tests.agents.X``), so the
agents import this module as ``tests.agents.sdk_agent`` after putting the repository on the path.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acp import PROTOCOL_VERSION, text_block, update_agent_message
from acp.schema import AgentCapabilities, Implementation, InitializeResponse, NewSessionResponse


class SdkAgent:
    """The ACP agent methods the test agents share; a subclass names itself and answers prompts."""

    #: ``agentInfo.name`` in ``initialize``, and the prefix of the session ids it hands out
    agent_name = "test"
    #: ``agentInfo.title`` in ``initialize``
    agent_title = "Test agent"

    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = 0
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def capabilities(self) -> AgentCapabilities:
        """What ``initialize`` says the agent can do (no ``session/load`` unless a subclass says so)."""
        return AgentCapabilities(load_session=False)

    def initialize_meta(self) -> dict[str, Any] | None:
        """``_meta`` of the ``initialize`` answer (none unless a subclass says so)."""
        return None

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=self.capabilities(),
            agent_info=Implementation(name=self.agent_name, title=self.agent_title, version="1.0"),
            field_meta=self.initialize_meta(),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.sessions += 1
        return NewSessionResponse(session_id=f"{self.agent_name}-{self.sessions}")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id, update)

    async def _say(self, session_id: str, text: str) -> None:
        await self._send(session_id, update_agent_message(text_block(text)))
