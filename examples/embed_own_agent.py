"""Embedding acp-progress in an ACP agent you wrote yourself: one ``ProgressTurn`` per prompt.

Your agent loop stays synchronous and runs on a worker thread; the turn hands it every callback
(think card, thought text, answer text) over one ordered path, and ``async with`` ends the turn
whatever happens — the card opened before a crash still ends (``failed``), and the client gets
every update before the prompt response.

Run it as an ACP agent on stdio (point any ACP client at it), for example from any directory::

    acp-progress watch --agent "python /path/to/acp-progress/examples/embed_own_agent.py" "hello there"

It heartbeats as the package's own agent does: every ``ACP_PROGRESS_HEARTBEAT_INTERVAL`` seconds
(default 30, from the environment or the settings file), never with
``ACP_PROGRESS_HEARTBEAT_DISABLED=1``.

Prompts containing ``fail`` make the loop raise after opening the think card; ``slow`` makes the
model wait long enough to cancel.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, run_agent
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    TextContentBlock,
)

from acp_adapter import ProgressTurn
from acp_adapter.cancel import TurnCancelled
from acp_adapter.config import Settings

SETTINGS = Settings.from_env()  # environment over ~/.config/acp-progress/config.toml
HEARTBEAT = None if SETTINGS.heartbeat_disabled else SETTINGS.heartbeat_interval
WAITING = "Waiting for the model"


def my_agent_loop(turn: ProgressTurn, text: str) -> None:
    """Your agent loop (a worker thread): the three spinner hook sites, then thought and answer."""
    turn.progress("start", "llm_response", {})  # hook A: before the model call
    started = time.monotonic()
    beats = 0
    think_time = 5.0 if "slow" in text else 0.3
    while time.monotonic() - started < think_time:  # the model "thinks"
        if turn.cancel.wait(0.1):
            raise TurnCancelled(turn.cancel.reason)
        elapsed = time.monotonic() - started
        if HEARTBEAT is not None and elapsed >= (beats + 1) * HEARTBEAT:  # hook C: every interval
            beats += 1
            turn.progress("heartbeat", "llm_response", {"elapsed": elapsed, "status": WAITING})
    if "fail" in text:
        raise RuntimeError("the model crashed")  # the turn still ends: the open card fails
    turn.progress("complete", "llm_response", {})  # hook B: the first token arrived
    turn.thinking("The user wants an echo.")
    turn.message(f"You said: {text}")


class EchoAgent:
    """A minimal ACP agent (the SDK's ``Agent`` methods it needs)."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.turns: dict[str, ProgressTurn] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="echo-example", version="0.1.0"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"echo-{uuid.uuid4().hex[:8]}")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if (turn := self.turns.get(session_id)) is not None:
            turn.cancel.cancel("cancelled by the user")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        turn = self.turns[session_id] = ProgressTurn(self.conn, session_id)
        try:
            async with turn:
                await asyncio.to_thread(my_agent_loop, turn, text)
        except (RuntimeError, TurnCancelled):
            pass  # the turn already ended: every card is closed and delivered
        finally:
            self.turns.pop(session_id, None)
        assert turn.stop_reason is not None
        return PromptResponse(stop_reason=turn.stop_reason)


if __name__ == "__main__":
    # EchoAgent implements the Agent methods it supports without subclassing the SDK's Protocol
    asyncio.run(run_agent(EchoAgent()))  # type: ignore[arg-type]
