"""MCP tools reach the OpenAI-compatible back-end as functions with their JSON schemas, and a model
call of one runs it as a card (the fake chat-completions server of tests/helpers/fake_openai.py). The agent
runs in this process (its MCP server is a process of its own)."""

from __future__ import annotations

import pytest

from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.fake_openai import FakeOpenAI, text_reply, tool_reply
from tests.helpers.mcp_kit import kit
from tests.helpers.openai_agent import KEY, openai_agent
from tests.helpers.shared_agent import served_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_openai_model_gets_mcp_tools_with_schemas_and_calls_one(tmp_path):
    with FakeOpenAI(api_key=KEY) as server:
        args = {"steps": 2, "delay": 0.05, "label": "cats"}
        server.script(tool_reply([("call_m1", "mcp__kit__slow_count", args)]), text_reply("Counted."))
        client = RecordingClient()
        async with served_inprocess(client, openai_agent(server)) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit()])).session_id
            response = await prompt_text(conn, sid, "count cats")
        assert response.stop_reason == "end_turn"
        functions = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
        assert "read_file" in functions and "mcp__kit__peek" in functions
        schema = functions["mcp__kit__slow_count"]["parameters"]
        assert schema["type"] == "object" and schema["properties"]["steps"]["type"] == "integer"
        assert functions["mcp__kit__peek"]["description"].startswith("[MCP kit] Echo the text back")
        assert all(len(name) <= 64 for name in functions)
        card = tool_cards(client, sid)[-1]
        assert card[0].title == "Counting cats"
        assert progress_of(card)[-1]["value"] == 2
        assert final_status(card) == "completed" and "counted 2 cats" in text_of(card[-1])
        # the tool result went back to the model
        tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
        assert "counted 2 cats" in tool_messages[-1]["content"]
