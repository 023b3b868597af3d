"""The relay's think-after timer on a manual clock: exact timing, no real waits.

The relay runs in-process between byte streams the test feeds and reads (the editor's side and the
agent's pipes), with a :class:`~acp_adapter.clock.ManualClock`; ``tests/frontends/test_relay.py`` keeps the
real-time end-to-end runs through ``acp-progress relay`` and real agent processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from acp_adapter.clock import ManualClock
from acp_adapter.frontends.relay import Relay, RelayOptions

pytestmark = pytest.mark.anyio


@dataclass
class Sink:
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
    relay: Relay
    clock: ManualClock
    editor_in: asyncio.StreamReader
    agent_in: asyncio.StreamReader
    to_editor: Sink
    to_agent: Sink

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
    clock = ManualClock()
    editor_in, agent_in = asyncio.StreamReader(), asyncio.StreamReader()
    to_editor, to_agent = Sink(), Sink()
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
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "think hard"}]},
    }


def chunk(text: str, session_id: str = "s1") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        },
    }


def answer(request_id: int, stop_reason: str = "end_turn") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": stop_reason}}


async def test_the_card_opens_at_think_after_beats_every_interval_and_closes_before_the_first_update():
    async with relay_on_a_manual_clock(think_after=0.3, heartbeat=0.1) as wire:
        await wire.from_editor(prompt(1))
        await wire.clock.advance(0.299)
        assert wire.shown() == [], "nothing before think-after"
        await wire.clock.advance(0.001)
        assert wire.shown() == ["think:start"]
        await wire.clock.advance(0.5)
        assert wire.shown() == ["think:start"] + ["card:in_progress"] * 5
        beats = [m["params"]["update"] for m in wire.to_editor.messages()[1:]]
        # the elapsed time counts from when the agent went quiet (the prompt), not from the card
        assert "0.8s" in json.dumps(beats[-1])
        await wire.from_agent(chunk("hello"))
        await wire.from_agent(answer(1))
        await wire.clock.advance(10)
    assert wire.shown()[-3:] == ["card:completed", "msg", "answer"]
    assert wire.shown().count("card:in_progress") == 5, "no heartbeat after the card closed"
    assert [m.get("method") for m in wire.to_agent.messages()] == ["session/prompt"]


async def test_each_silent_gap_gets_its_own_card_and_a_talking_agent_none():
    async with relay_on_a_manual_clock(think_after=0.3, heartbeat=None) as wire:
        await wire.from_editor(prompt(1))
        for _ in range(5):  # speaking every 0.2 s: never silent for think-after
            await wire.clock.advance(0.2)
            await wire.from_agent(chunk("."))
        assert "think:start" not in wire.shown()
        await wire.clock.advance(0.3)
        await wire.from_agent(chunk("after a gap"))
        await wire.clock.advance(0.3)
        await wire.from_agent(chunk("after another"))
        await wire.from_agent(answer(1))
    assert [x for x in wire.shown() if x != "msg"] == [
        "think:start",
        "card:completed",
        "think:start",
        "card:completed",
        "answer",
    ]


async def test_cancel_mid_silence_fails_the_card_forwards_the_cancel_and_nothing_follows():
    async with relay_on_a_manual_clock(think_after=0.3, heartbeat=0.1) as wire:
        await wire.from_editor(prompt(1))
        await wire.clock.advance(0.35)
        await wire.from_editor({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
        assert wire.shown() == ["think:start", "card:failed"]
        await wire.clock.advance(5)  # many heartbeat intervals: nothing after the end
        assert wire.shown() == ["think:start", "card:failed"]
        await wire.from_agent(answer(1, "cancelled"))
    assert [m.get("method") for m in wire.to_agent.messages()] == ["session/prompt", "session/cancel"]
    assert wire.shown() == ["think:start", "card:failed", "answer"]
    assert wire.clock.pending == 0
