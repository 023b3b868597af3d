"""A small *other* ACP agent (not this project's): one tool card per prompt, then echoes its history.

Its cards carry no ``_meta.acpProgress`` tool id, so the bridge must fall back to the ACP title
and a safe scalar preview; its tool output holds a secret that must never reach a chat; and its
answer lists every prompt text it received, which lets a test prove the bridge fed nothing but
the person's messages into the session.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message,
    update_tool_call,
)

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


class EchoAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.history: dict[str, list[str]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        sid = f"echo-{len(self.history) + 1}"
        self.history[sid] = []
        return NewSessionResponse(session_id=sid)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        history = self.history[session_id]
        history.append(text)
        call_id = f"lookup-{len(history)}"
        start = start_tool_call(
            call_id, "Lookup", kind="fetch", status="pending", raw_input={"api_key": SECRET, "topic": text}
        )
        await self.conn.session_update(session_id, start)
        await asyncio.sleep(0.05)
        output = f"found it; auth token={SECRET}"
        done = update_tool_call(call_id, status="completed", content=[tool_content(text_block(output))])
        await self.conn.session_update(session_id, done)
        answer = f"history={len(history)} prompts={history!r} secret={SECRET}"
        await self.conn.session_update(session_id, update_agent_message(text_block(answer)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))  # type: ignore[arg-type]
