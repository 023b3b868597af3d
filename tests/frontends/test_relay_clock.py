"""The relay's think-after timer on a manual clock: exact timing, no real waits.

The relay runs in-process between byte streams the test feeds and reads (the editor's side and the
agent's pipes), with a :class:`~acp_adapter.clock.ManualClock`; ``tests/frontends/test_relay.py`` keeps the
real-time end-to-end runs through ``acp-progress relay`` and real agent processes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.relay_clock import answer, prompt, relay_on_a_manual_clock

pytestmark = pytest.mark.anyio


def chunk(text: str, session_id: str = "s1") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        },
    }


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
