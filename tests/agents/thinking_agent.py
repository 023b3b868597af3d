"""A foreign ACP agent for the relay's spinner rules: it may show think cards of its own, and it loads
sessions slowly.

``python tests/agents/thinking_agent.py [--meta] [SECONDS]``: ``--meta`` says in ``initialize``
``_meta.acpProgress.thinkCards: true``. A prompt whose text starts with ``think`` opens a
``kind="think"`` card, stays quiet for SECONDS (default 0.6), completes the card and answers;
any other prompt stays quiet for SECONDS, then answers. ``session/load`` stays quiet for SECONDS,
then replays one message chunk; ``session/list`` lists the sessions it opened.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
)


class ThinkingAgent:
    def __init__(self, meta: bool, seconds: float) -> None:
        self.meta = meta
        self.seconds = seconds
        self.conn: Any = None
        self.sessions: list[str] = []
        self.cards = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, session_capabilities=SessionCapabilities(list=SessionListCapabilities())
            ),
            agent_info=Implementation(name="thinking", title="Thinking test agent", version="1.0"),
            field_meta={"acpProgress": {"thinkCards": True}} if self.meta else None,
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"thinking-{len(self.sessions) + 1}"
        self.sessions.append(session_id)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if session_id not in self.sessions:
            raise RequestError.invalid_params({"sessionId": session_id})
        await asyncio.sleep(self.seconds)  # a slow store: the relay must not take this for thinking
        await self.conn.session_update(session_id, update_agent_message(text_block("replayed answer")))
        return LoadSessionResponse()

    async def list_sessions(self, cwd: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        return ListSessionsResponse(
            sessions=[SessionInfo(session_id=s, cwd=cwd or "/") for s in self.sessions]
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        if text.startswith("think"):
            self.cards += 1
            card = f"own-think-{self.cards}"
            await self.conn.session_update(
                session_id, start_tool_call(card, "Thinking...", kind="think", status="in_progress")
            )
            await asyncio.sleep(self.seconds)
            await self.conn.session_update(session_id, update_tool_call(card, status="completed"))
        else:
            await asyncio.sleep(self.seconds)
        await self.conn.session_update(session_id, update_agent_message(text_block(f"answer to {text}")))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    args = sys.argv[1:]
    meta = "--meta" in args
    rest = [a for a in args if a != "--meta"]
    asyncio.run(run_agent(ThinkingAgent(meta, float(rest[0]) if rest else 0.6)))  # type: ignore[arg-type]
