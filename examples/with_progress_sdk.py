"""An agent written on the ACP Python SDK whose model thinks before it answers: one line,
``with_progress(...)``, gives it a Thinking... card with heartbeats while it is silent.

    acp-progress watch --agent "python examples/with_progress_sdk.py" "hello"

``EXAMPLE_THINK_SECONDS`` (default 5) is how long its "model" thinks.
"""

import asyncio
import os
from typing import Any

from acp import run_agent, text_block, update_agent_message
from acp.schema import InitializeResponse, NewSessionResponse, PromptResponse

from acp_adapter import with_progress

THINK_SECONDS = float(os.environ.get("EXAMPLE_THINK_SECONDS", "5"))


class SlowAgent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="one")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        await asyncio.sleep(THINK_SECONDS)  # the model thinks; the person sees the card meanwhile
        await self.conn.session_update(session_id, update_agent_message(text_block("Done thinking.")))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(with_progress(SlowAgent())))
