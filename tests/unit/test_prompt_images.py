"""A prompt image's type is checked before it is spliced into the ``data:`` URL the model gets.

The attacks: a "type" that rewrites the URL (``image/png;base64,AAAA``: the model would see the
sender's bytes, not the image), types the back-end does not take (``text/html``,
``image/svg+xml``) and data that is not base64. Each is left out with a sentence to the person,
and the turn goes on with the text and the good images (the agent in this process with the
settings a spawned one reads, the fake OpenAI-compatible server recording what it was sent). The
OpenAI back-end advertises images and passes them to the model as image parts; the embedded model
acknowledges them and does not advertise them.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from acp import text_block
from acp.schema import ImageContentBlock
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.agent.attachments import MAX_IMAGES, sort_images
from acp_adapter.config import Settings
from acp_adapter.text import IMAGE_TYPES, prompt_to_text
from tests.helpers.acp_agent import RecordingClient, agent_env
from tests.helpers.fake_openai import FakeOpenAI, text_reply
from tests.helpers.openai_agent import KEY, openai_env
from tests.helpers.shared_agent import progress_agent, served_inprocess

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a" + "00" * 59)).decode()
HOSTILE_TYPES = ("image/png;base64,AAAA", "text/html", "image/svg+xml", "image/png; x=1", "image/", "")


def _image(mime: str, data: str = PNG) -> ImageContentBlock:
    return ImageContentBlock(type="image", data=data, mime_type=mime)


def test_only_the_types_the_back_end_takes_are_sent_and_each_other_is_told() -> None:
    blocks = [_image(m) for m in HOSTILE_TYPES] + [_image(" IMAGE/JPEG "), _image("image/png", "AA,A")]
    sorted_ = sort_images(blocks)
    assert [(i.mime_type, i.data) for i in sorted_.images] == [("image/jpeg", PNG)]
    assert len(sorted_.refused) == len(HOSTILE_TYPES) + 1
    assert "Image 1 was not sent to the model: its type 'image/png;base64,AAAA'" in sorted_.refused[0]
    assert "image/png, image/jpeg, image/gif, image/webp" in sorted_.refused[1]
    assert sorted_.refused[-1] == "Image 8 was not sent to the model: its data is not base64."
    text = prompt_to_text(blocks)
    assert "text/html" not in text and "base64,AAAA" not in text and "image/jpeg, 67 bytes" in text
    many = sort_images([_image("image/png")] * (MAX_IMAGES + 1))
    assert len(many.images) == MAX_IMAGES and "at most" in many.refused[0]


@given(st.text(max_size=40), st.text(alphabet="AB+/=,;:\"' \n", max_size=20))
def test_whatever_the_type_and_data_the_data_url_has_one_shape(mime: str, data: str) -> None:
    for image in sort_images([_image(mime, data or "AAAA")]).images:
        assert image.mime_type in IMAGE_TYPES
        url = f"data:{image.mime_type};base64,{image.data}"
        assert url.count(",") == 1 and url.count(";") == 1


def _openai_agent(server: FakeOpenAI) -> Any:
    """This project's agent on the OpenAI back-end at ``server``, with the settings a spawned one reads."""
    return progress_agent(Settings.from_env(openai_env(server)))


@pytest.mark.anyio
async def test_a_bad_image_type_is_told_and_the_turn_goes_on_with_the_good_image(tmp_path) -> None:
    with FakeOpenAI(api_key=KEY) as server:
        server.script(text_reply("One picture."))
        client = RecordingClient()
        agent = _openai_agent(server)
        async with served_inprocess(client, agent) as conn:
            sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            prompt = [
                text_block("what are these?"),
                _image("image/png;base64,AAAA"),
                _image("text/html", base64.b64encode(b"<script>alert(1)</script>").decode()),
                _image("image/png"),
            ]
            response = await conn.prompt(session_id=sid, prompt=prompt)
    assert response.stop_reason == "end_turn"
    user = [m for m in server.requests[0].body["messages"] if m["role"] == "user"][-1]
    urls = [part["image_url"]["url"] for part in user["content"] if part["type"] == "image_url"]
    assert urls == [f"data:image/png;base64,{PNG}"]
    answer = client.answer(sid)
    assert "Image 1 was not sent to the model" in answer and "Image 2 was not sent" in answer
    assert answer.rstrip().endswith("One picture.")


@pytest.mark.anyio
async def test_the_openai_backend_advertises_images_and_the_model_gets_them(tmp_path):
    with FakeOpenAI(api_key=KEY) as server:
        server.script(text_reply("A black square."))
        client = RecordingClient()
        agent = _openai_agent(server)
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


@pytest.mark.anyio
async def test_the_embedded_model_acknowledges_an_image_and_does_not_advertise_images(tmp_path):
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
