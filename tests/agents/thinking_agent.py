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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import (
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
)

from tests.agents.sdk_agent import SdkAgent


class ThinkingAgent(SdkAgent):
    agent_name = "thinking"
    agent_title = "Thinking test agent"

    def __init__(self, meta: bool, seconds: float) -> None:
        super().__init__()
        self.meta = meta
        self.seconds = seconds
        self.opened: list[str] = []
        self.cards = 0

    def capabilities(self) -> AgentCapabilities:
        return AgentCapabilities(
            load_session=True, session_capabilities=SessionCapabilities(list=SessionListCapabilities())
        )

    def initialize_meta(self) -> dict[str, Any] | None:
        return {"acpProgress": {"thinkCards": True}} if self.meta else None

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        response = await super().new_session(cwd, **kwargs)
        self.opened.append(response.session_id)
        return response

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if session_id not in self.opened:
            raise RequestError.invalid_params({"sessionId": session_id})
        await asyncio.sleep(self.seconds)  # a slow store: the relay must not take this for thinking
        await self.conn.session_update(session_id, update_agent_message(text_block("replayed answer")))
        return LoadSessionResponse()

    async def list_sessions(self, cwd: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=[SessionInfo(session_id=s, cwd=cwd or "/") for s in self.opened])

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
