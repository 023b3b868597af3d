"""The relay in this process between byte streams the test feeds and reads (the editor's side and the
agent's pipes), on a :class:`~acp_adapter.clock.ManualClock`: exact timing, no real waits; and the
JSON-RPC messages of a turn as the editor and the agent send them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from acp_adapter.clock import ManualClock
from acp_adapter.frontends.relay import Relay, RelayOptions


@dataclass
class StreamSink:
    """A StreamWriter stand-in that keeps what was written, one JSON message a line."""

    data: bytearray = field(default_factory=bytearray)

    def write(self, chunk: bytes) -> None:
        self.data.extend(chunk)

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return False

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.data).splitlines() if line.strip()]


@dataclass
class Wire:
    """The relay between the two byte streams the test feeds, on its manual clock."""

    relay: Relay
    clock: ManualClock
    editor_in: asyncio.StreamReader
    agent_in: asyncio.StreamReader
    to_editor: StreamSink
    to_agent: StreamSink

    async def from_editor(self, message: dict[str, Any]) -> None:
        self.editor_in.feed_data(json.dumps(message).encode() + b"\n")
        await self.clock.settle()

    async def from_agent(self, message: dict[str, Any]) -> None:
        self.agent_in.feed_data(json.dumps(message).encode() + b"\n")
        await self.clock.settle()

    def shown(self) -> list[str]:
        """The editor's stream, compact: 'think:start', 'card:in_progress', 'msg', 'answer' …"""
        out = []
        for message in self.to_editor.messages():
            update = (message.get("params") or {}).get("update") or {}
            kind = update.get("sessionUpdate")
            if kind == "tool_call":
                out.append(f"{update['kind']}:start")
            elif kind == "tool_call_update":
                out.append(f"card:{update['status']}")
            elif kind == "agent_message_chunk":
                out.append("msg")
            elif "result" in message or "error" in message:
                out.append("answer")
        return out


@asynccontextmanager
async def relay_on_a_manual_clock(**options: Any) -> AsyncIterator[Wire]:
    """The relay with ``options`` running on a manual clock between fed streams, ended on leaving."""
    clock = ManualClock()
    editor_in, agent_in = asyncio.StreamReader(), asyncio.StreamReader()
    to_editor, to_agent = StreamSink(), StreamSink()
    relay = Relay(
        editor_in,
        to_editor,  # type: ignore[arg-type]
        agent_in,
        to_agent,  # type: ignore[arg-type]
        RelayOptions(**options),
        clock=clock,
    )
    tasks = [asyncio.ensure_future(relay.editor_to_agent()), asyncio.ensure_future(relay.agent_to_editor())]
    try:
        yield Wire(relay, clock, editor_in, agent_in, to_editor, to_agent)
    finally:
        editor_in.feed_eof()
        agent_in.feed_eof()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)


def prompt(request_id: int, session_id: str = "s1") -> dict[str, Any]:
    """The editor's ``session/prompt`` request."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "think hard"}]},
    }


def answer(request_id: int, stop_reason: str = "end_turn") -> dict[str, Any]:
    """The agent's answer to prompt ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": stop_reason}}
