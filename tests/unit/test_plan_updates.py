"""Plans: the embedded model's steps as ACP ``plan`` updates moved along by
the tool calls, the OpenAI back-end's plan tool as ``plan`` updates (never a card), and the last
plan of a turn replayed by ``session/load``. The plans are the agent's answers whoever its client
is, so no test needs an agent process: the embedded model's tests share one agent served in this
process (each its own session and client, :mod:`tests.helpers.shared_agent`); what the OpenAI plan
tool becomes, what a load replays and what the model reads back for a bad plan are tested with the
agent, pointed at their own scripted server, in this process too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from acp.schema import AgentMessageChunk, AgentPlanUpdate, ToolCallStart

from acp_adapter.config import Settings
from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.fake_openai import FakeOpenAI, text_reply, tool_reply
from tests.helpers.openai_agent import KEY, openai_agent, openai_env
from tests.helpers.shared_agent import SharedAgent, progress_agent, served_inprocess, shared_agent_inprocess

pytestmark = pytest.mark.anyio

ENV = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")


@pytest.fixture(scope="module")
async def agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    """The agent served in this process, shared by the embedded model's tests."""
    async with shared_agent_inprocess(Settings.from_env(ENV)) as shared:
        yield shared


def plans(updates: list[Any]) -> list[list[tuple[str, str]]]:
    return [[(e.content, e.status) for e in u.entries] for u in updates if isinstance(u, AgentPlanUpdate)]


async def test_a_two_step_prompt_is_a_plan_moved_along_by_its_tool_calls(tmp_path, agent):
    (tmp_path / "a.py").write_text("# TODO: one\n")
    client = RecordingClient()
    sid = (await agent.new_session(client, tmp_path)).session_id
    response = await prompt_text(agent.conn, sid, "search for TODO and then wait 0.3 seconds")
    assert response.stop_reason == "end_turn"
    updates = client.for_session(sid)
    seen = plans(updates)
    steps = ["Search for TODO", "Wait 0.3 seconds"]
    assert seen == [
        [(steps[0], "pending"), (steps[1], "pending")],
        [(steps[0], "in_progress"), (steps[1], "pending")],
        [(steps[0], "completed"), (steps[1], "pending")],
        [(steps[0], "completed"), (steps[1], "in_progress")],
        [(steps[0], "completed"), (steps[1], "completed")],
    ]
    # the final plan is out before the answer, and each step moved when its card did
    last_plan = max(i for i, u in enumerate(updates) if isinstance(u, AgentPlanUpdate))
    first_text = min(i for i, u in enumerate(updates) if isinstance(u, AgentMessageChunk))
    assert last_plan < first_text
    starts = [i for i, u in enumerate(updates) if isinstance(u, ToolCallStart) and u.kind != "think"]
    plan_at = [i for i, u in enumerate(updates) if isinstance(u, AgentPlanUpdate)]
    assert plan_at[1] < starts[0] < plan_at[2] < plan_at[3] < starts[1] < plan_at[4]


async def test_a_failed_step_says_so_and_a_numbered_list_is_a_plan(tmp_path, agent):
    client = RecordingClient()
    sid = (await agent.new_session(client, tmp_path)).session_id
    await prompt_text(agent.conn, sid, "Please:\n1. read missing.md\n2. list files\n")
    await prompt_text(agent.conn, sid, "read missing.md")  # one step: no plan
    final = plans(client.for_session(sid))[-1]
    assert final == [
        ("Read missing.md — failed: no such file: missing.md", "completed"),
        ("List files", "completed"),
    ]
    assert len(plans(client.for_session(sid))) == 5


async def test_the_openai_plan_tool_is_a_plan_not_a_card_and_a_load_replays_the_last_plan(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    plan = [
        {"content": "Read a.txt", "status": "in_progress", "priority": "high"},
        {"step": "Summarise it", "status": "pending"},
    ]
    done = [
        {"content": "Read a.txt", "status": "completed", "priority": "high"},
        {"content": "Summarise it", "status": "completed"},
    ]
    with FakeOpenAI(api_key=KEY) as server:
        server.script(
            tool_reply(
                [("call_p1", "update_plan", {"plan": plan}), ("call_r1", "read_file", {"path": "a.txt"})]
            ),
            tool_reply([("call_p2", "update_plan", {"plan": done})]),
            text_reply("It holds x."),
        )
        client = RecordingClient()
        writer = progress_agent(Settings.from_env(openai_env(server)))  # the settings a spawned one reads
        async with served_inprocess(client, writer) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await prompt_text(conn, sid, "read a.txt and summarise it")
            assert response.stop_reason == "end_turn"
            seen = plans(client.for_session(sid))
            assert seen == [
                [("Read a.txt", "in_progress"), ("Summarise it", "pending")],
                [("Read a.txt", "completed"), ("Summarise it", "completed")],
            ]
            first = next(u for u in client.for_session(sid) if isinstance(u, AgentPlanUpdate))
            assert first.entries[0].priority == "high" and first.entries[1].priority == "medium"
            cards = [c for c in client.cards(sid).values() if c[0].kind != "think"]
            assert [c[0].title for c in cards] == ["Reading a.txt"], "the plan tool is not a card"
            assert final_status(cards[0]) == "completed"
            # the model got its plan tool answered, with the history pairs intact
            tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
            assert [m["tool_call_id"] for m in tool_messages] == ["call_p1", "call_r1"]
            assert tool_messages[0]["content"] == "Plan updated."
            names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
            assert "update_plan" in names

            replayed = RecordingClient()
        # the next agent reads the store (what any process would read)
        reader = progress_agent(Settings.from_env(openai_env(server)))
        async with served_inprocess(replayed, reader) as conn2:
            await conn2.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert plans(replayed.for_session(sid)) == [
            [("Read a.txt", "completed"), ("Summarise it", "completed")]
        ]


async def test_a_bad_plan_is_an_error_the_model_reads(tmp_path):
    with FakeOpenAI(api_key=KEY) as server:
        server.script(
            tool_reply([("call_p1", "update_plan", {"plan": [{"content": "x", "status": "done"}]})]),
            text_reply("ok"),
        )
        client = RecordingClient()
        async with served_inprocess(client, openai_agent(server)) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            response = await prompt_text(conn, sid, "plan")
    assert response.stop_reason == "end_turn"
    assert plans(client.for_session(sid)) == []
    (tool_message,) = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "status must be pending, in_progress or completed" in tool_message["content"]
