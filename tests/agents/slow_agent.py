"""Foreign SDK agents for ``with_progress``: silent before their first update, as a real one is while
its model thinks.

``SlowAgent(delay, script=…)`` waits ``delay`` seconds (or until its ``gate`` opens, for tests on a
manual clock) after the prompt, cancellable, then:

* ``answer``  — one message chunk, then the answer;
* ``tool``    — opens an ``execute`` card *at once*, waits, completes it, then a message;
* ``thought`` — streams a thought chunk at once, waits, then a message;
* ``raise``   — raises an error whose message holds a secret (the card's reason must not);
* ``think``   — opens a ``kind="think"`` card of its own at once, waits, closes it, then a message.

``pydantic_agent(delay)`` is a pydantic-acp adapter around a ``pydantic_ai.Agent`` whose model (a
pydantic-ai ``FunctionModel``) thinks ``delay`` seconds before it streams its answer.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import start_tool_call, text_block, update_agent_thought, update_tool_call
from acp.schema import PromptResponse

from tests.agents.sdk_agent import SdkAgent

#: what the ``raise`` script's error carries: the card's failure reason must show it redacted
SECRET = "sk-live-0123456789abcdefghijklmnop"


class SlowAgent(SdkAgent):
    agent_name = "slow"
    agent_title = "Slow test agent"

    def __init__(
        self, delay: float = 0.0, *, script: str = "answer", gate: asyncio.Event | None = None
    ) -> None:
        super().__init__()
        self.delay = delay
        self.script = script
        self.gate = gate
        self.prompts = 0
        self.cancels: list[str] = []

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancels.append(session_id)
        await super().cancel(session_id, **kwargs)

    async def _wait(self, session_id: str) -> bool:
        """Think (stay silent); True when cancelled meanwhile."""
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        waits = [asyncio.ensure_future(cancelled.wait())]
        waits.append(asyncio.ensure_future(self.gate.wait() if self.gate else asyncio.sleep(self.delay)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        return cancelled.is_set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        self.prompts += 1
        self.cancelled[session_id] = asyncio.Event()
        if self.script == "tool":
            await self._send(
                session_id,
                start_tool_call("tool-1", "Running the tests", kind="execute", status="in_progress"),
            )
        elif self.script == "thought":
            await self._send(session_id, update_agent_thought(text_block("Let me think about this")))
        elif self.script == "think":
            await self._send(
                session_id, start_tool_call("own-think", "Pondering", kind="think", status="in_progress")
            )
        if await self._wait(session_id):
            return PromptResponse(stop_reason="cancelled")
        if self.script == "raise":
            raise RuntimeError(f"the model backend failed: api_key={SECRET}")
        if self.script == "tool":
            await self._send(session_id, update_tool_call("tool-1", status="completed"))
        elif self.script == "think":
            await self._send(session_id, update_tool_call("own-think", status="completed"))
        await self._say(session_id, "answer after the wait")
        return PromptResponse(stop_reason="end_turn")


def pydantic_agent(delay: float) -> Any:
    """A pydantic-acp adapter (an ACP SDK agent factory) around a pydantic-ai agent whose model
    thinks ``delay`` seconds before it streams ``hello after thinking``."""
    from pydantic_acp import create_acp_agent
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    async def think(messages: list[Any], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(delay)
        return ModelResponse(parts=[TextPart("hello after thinking")])

    async def think_then_stream(messages: list[Any], info: AgentInfo) -> Any:
        await asyncio.sleep(delay)
        yield "hello "
        yield "after thinking"

    return create_acp_agent(
        Agent(FunctionModel(think, stream_function=think_then_stream), name="slow-pydantic")
    )
