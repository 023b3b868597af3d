"""The relay follows the shared watcher's "never two spinners" rules for an agent's own progress:
no think card while the agent's own tool card of the turn is running, none in a session where it
streams its thoughts (the relay and ``with_progress`` share one implementation of these rules)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.relay_clock import answer, prompt, relay_on_a_manual_clock

pytestmark = pytest.mark.anyio


def update(body: dict[str, Any], session_id: str = "s1") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}}


def tool(status: str, start: bool = False) -> dict[str, Any]:
    body = {"sessionUpdate": "tool_call_update", "toolCallId": "run-1", "status": status}
    if start:
        body.update(sessionUpdate="tool_call", title="Running the tests", kind="execute")
    return update(body)


async def test_no_card_while_the_agents_own_card_runs_and_one_after_it_ends():
    async with relay_on_a_manual_clock(think_after=0.3, heartbeat=None) as wire:
        await wire.from_editor(prompt(1))
        await wire.from_agent(tool("in_progress", start=True))
        await wire.clock.advance(5)  # its card spins through a long silence: ours would be a second one
        assert wire.shown() == ["execute:start"]
        await wire.from_agent(tool("completed"))
        await wire.clock.advance(0.3)  # silent again with nothing of its own live: now the model thinks
        assert wire.shown() == ["execute:start", "card:completed", "think:start"]
        await wire.from_agent(answer(1))
    assert wire.shown() == ["execute:start", "card:completed", "think:start", "card:completed", "answer"]


async def test_no_card_in_a_session_where_the_agent_streams_its_thoughts():
    thought = {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}
    async with relay_on_a_manual_clock(think_after=0.3, heartbeat=None) as wire:
        await wire.from_editor(prompt(1))
        await wire.from_agent(update(thought))
        await wire.clock.advance(5)
        await wire.from_agent(answer(1))
        await wire.from_editor(prompt(2))
        await wire.clock.advance(5)
        assert "think:start" not in wire.shown()
        await wire.from_editor(prompt(3, session_id="s2"))  # another session still gets its card
        await wire.clock.advance(0.3)
        assert wire.shown()[-1] == "think:start"
        await wire.from_agent(answer(2))
        await wire.from_agent(answer(3))
