"""Images end to end: the OpenAI back-end advertises them and passes them to the model as image
parts, the embedded model acknowledges them, and an MCP tool's image result is image content on its
card (the MCP server a real process). What the agent advertises, sends the model and puts on its
cards is its own decision whoever its client is: it runs in this process (with the settings a
spawned agent would read from the same environment), driven by the SDK's client side."""

from __future__ import annotations

import base64

import pytest
from acp import text_block
from acp.schema import ContentToolCallContent, ImageContentBlock

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status
from tests.helpers.fake_openai import FakeOpenAI, text_reply, tool_reply
from tests.helpers.mcp_kit import kit
from tests.helpers.openai_agent import KEY, openai_agent, openai_env
from tests.helpers.shared_agent import served_inprocess
from tests.helpers.tool_cards import tool_cards

pytestmark = pytest.mark.anyio

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a" + "00" * 59)).decode()


async def test_the_openai_backend_advertises_images_and_the_model_gets_them(tmp_path):
    from acp_adapter.config import Settings
    from tests.helpers.shared_agent import progress_agent

    with FakeOpenAI(api_key=KEY) as server:
        server.script(text_reply("A black square."))
        client = RecordingClient()
        agent = progress_agent(Settings.from_env(openai_env(server)))  # the settings a spawned one reads
        async with served_inprocess(client, agent) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            init = await conn.initialize(protocol_version=1)
            image = ImageContentBlock(type="image", data=PNG, mime_type="image/png")
            response = await conn.prompt(session_id=sid, prompt=[text_block("what is this?"), image])
    assert init.agent_capabilities.prompt_capabilities.image is True
    assert response.stop_reason == "end_turn"
    user = [m for m in server.requests[0].body["messages"] if m["role"] == "user"][-1]
    assert user["content"][0]["type"] == "text" and user["content"][0]["text"].startswith("what is this?")
    assert user["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert client.answer(sid) == "A black square."


async def test_the_embedded_model_acknowledges_an_image_and_does_not_advertise_images(tmp_path):
    from acp_adapter.config import Settings
    from tests.helpers.shared_agent import progress_agent

    client = RecordingClient()
    agent = progress_agent(Settings.from_env(agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")))
    async with served_inprocess(client, agent) as conn:
        init = await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        image = ImageContentBlock(type="image", data=PNG, mime_type="image/png")
        await conn.prompt(session_id=sid, prompt=[image])
    assert init.agent_capabilities.prompt_capabilities.image is False
    answer = client.answer(sid)
    assert answer.startswith("I received an image: image/png (67 bytes).")
    assert "not supported" not in answer


async def test_an_mcp_tools_image_result_is_image_content_on_its_card(tmp_path):
    with FakeOpenAI(api_key=KEY) as server:
        server.script(tool_reply([("call_i1", "mcp__kit__picture", {})]), text_reply("Here it is."))
        client = RecordingClient()
        async with served_inprocess(client, openai_agent(server)) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[kit()])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("show me a picture")])
    (card,) = tool_cards(client, sid)
    assert final_status(card) == "completed"
    images = [
        c.content
        for c in card[-1].content
        if isinstance(c, ContentToolCallContent) and isinstance(c.content, ImageContentBlock)
    ]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert base64.b64decode(images[0].data).startswith(b"\x89PNG")
    assert "a tiny picture" in " ".join(getattr(c.content, "text", "") for c in card[-1].content)
