"""History stays valid for OpenAI-compatible servers: every assistant
``tool_calls`` message is followed by a result for each call, no ``tool`` message is orphaned, and
card ids stay unique in a session when a server reuses tool-call ids."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from acp.schema import ToolCallStart

from acp_adapter.agent.heartbeat import HeartbeatScheduler
from acp_adapter.agent.session import Session
from acp_adapter.cancel import CancelToken
from acp_adapter.config import Settings
from acp_adapter.models import Message, TextDelta, ToolCall, ToolCallRequest, ToolSpec
from acp_adapter.server import ProgressAgent
from acp_adapter.tooling.builtin import default_toolbox
from run_agent import AIAgent
from tests.helpers.acp_agent import RecordingClient, final_status, inprocess_agent, prompt_text


def assert_pairs(messages: Sequence[Message]) -> None:
    """The rule OpenAI-compatible servers enforce (they answer 400 otherwise)."""
    pending: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in pending, f"orphan tool result {message.tool_call_id}"
            pending.discard(message.tool_call_id)
            continue
        assert not pending, f"tool calls without results: {pending}"
        if message.role == "assistant":
            pending = {call.id for call in message.tool_calls}
    assert not pending, f"tool calls without results: {pending}"


class ReusingModel:
    """Asks for ``wait`` with the id ``call_1`` every turn (some servers do), then answers."""

    name = "reusing"

    def __init__(self, seconds: float = 0.0) -> None:
        self.seconds = seconds
        self.seen: list[list[Message]] = []

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[Any]:
        self.seen.append(list(messages))
        if messages[-1].role == "tool":
            yield TextDelta("done")
            return
        yield ToolCallRequest(ToolCall("call_1", "wait", {"seconds": self.seconds}))


def test_cancel_while_the_tool_runs_closes_the_pair():
    cancel = CancelToken()
    agent = AIAgent(
        ReusingModel(seconds=20),
        toolbox=default_toolbox("."),
        settings=Settings(heartbeat_disabled=True),
        scheduler=HeartbeatScheduler(),
        cancel=cancel,
    )
    threading.Timer(0.3, cancel.cancel).start()
    result = agent.run_conversation("wait please")
    assert result.stop_reason == "cancelled"
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "tool"]
    assert_pairs(result.messages)
    assert "cancelled" in result.messages[-1].content


def test_cancel_answers_the_calls_that_never_ran():
    class TwoCalls:
        name = "two"

        def stream(self, messages: Any, tools: Any, cancel: CancelToken) -> Iterator[Any]:
            yield ToolCallRequest(ToolCall("a", "wait", {"seconds": 20}))
            yield ToolCallRequest(ToolCall("b", "wait", {"seconds": 20}))

    cancel = CancelToken()
    agent = AIAgent(
        TwoCalls(),
        toolbox=default_toolbox("."),
        settings=Settings(heartbeat_disabled=True),
        scheduler=HeartbeatScheduler(),
        cancel=cancel,
    )
    threading.Timer(0.3, cancel.cancel).start()  # during the first tool: the second never runs
    result = agent.run_conversation("go")
    assert result.stop_reason == "cancelled"
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["a", "b"]
    assert_pairs(result.messages)


def test_trimming_keeps_whole_turns():
    for extra in range(4):  # the last turn has more tool rounds: the 200-message cut moves
        history: list[Message] = []
        for turn in range(60):
            rounds = 1 + (extra if turn == 59 else 0)
            history.append(Message("user", f"q{turn}"))
            for r in range(rounds):
                call = ToolCall(f"c{turn}-{r}", "wait", {})
                history += [
                    Message("assistant", "", tool_calls=(call,)),
                    Message("tool", "ok", tool_call_id=call.id, name="wait"),
                ]
            history.append(Message("assistant", f"a{turn}"))
        session = Session("s", ".", stream=None)  # type: ignore[arg-type]  # finish_turn needs none
        session.finish_turn(history)
        kept = session.history
        assert kept[0].role == "user"
        assert len(kept) <= 200
        assert_pairs(kept)
        assert kept[-1] == history[-1]


@pytest.mark.anyio
async def test_a_session_keeps_working_after_a_cancelled_tool_and_card_ids_stay_unique(tmp_path):
    model = ReusingModel(seconds=0.0)
    agent = ProgressAgent(turn_runner=AIAgent, settings=Settings(heartbeat_disabled=True), model=model)
    client = RecordingClient()
    async with inprocess_agent(client, agent) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        for _ in range(3):
            response = await prompt_text(conn, session.session_id, "wait")
            assert response.stop_reason == "end_turn"
    tool_cards = {
        cid: ups
        for cid, ups in client.cards(session.session_id).items()
        if isinstance(ups[0], ToolCallStart) and ups[0].kind != "think"
    }
    assert list(tool_cards) == ["call_1", "call_1#2", "call_1#3"]
    for updates in tool_cards.values():
        assert sum(isinstance(u, ToolCallStart) for u in updates) == 1
        assert final_status(updates) == "completed"
        assert updates[-1] is updates[[u.status for u in updates].index("completed")]
    for messages in model.seen:
        assert_pairs(messages[1:])  # after the system prompt
