"""Images end to end: an MCP tool's image result is image content on its card (the MCP server a
real process). What the agent puts on its cards is its own decision whoever its client is: it runs
in this process (with the settings a spawned agent would read from the same environment), driven
by the SDK's client side. What the agent advertises and sends the model for a prompt's image is in
tests/unit/test_prompt_images.py."""

from __future__ import annotations

import base64

import pytest
from acp import text_block
from acp.schema import ContentToolCallContent, ImageContentBlock

from tests.helpers.acp_agent import RecordingClient, final_status
from tests.helpers.fake_openai import FakeOpenAI, text_reply, tool_reply
from tests.helpers.mcp_kit import kit
from tests.helpers.openai_agent import KEY, openai_agent
from tests.helpers.shared_agent import served_inprocess
from tests.helpers.tool_cards import tool_cards

pytestmark = pytest.mark.anyio


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
