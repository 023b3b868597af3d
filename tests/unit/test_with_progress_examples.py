"""The two ``with_progress`` examples of docs/frontends/relay.md, run as a person runs them
(``examples/``) over stdio with the SDK's client side; the page shows their code verbatim."""

from __future__ import annotations

import re

import pytest

from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, final_status, prompt_text, spawn_agent

pytestmark = pytest.mark.anyio

EXAMPLES = {
    "with_progress_sdk.py": None,
    "with_progress_pydantic.py": "pydantic_acp",
}


def _readme_blocks() -> list[str]:
    section = (
        (ROOT / "docs" / "frontends" / "relay.md").read_text().split("### The same spinner in process", 1)[1]
    )
    section = section.split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_readme_shows_the_examples_code_verbatim(example):
    source = (ROOT / "examples" / example).read_text()
    assert any(block in source for block in _readme_blocks()), (
        f"no block of the page is an excerpt of {example}"
    )


@pytest.mark.e2e
@pytest.mark.parametrize("example", sorted(EXAMPLES))
async def test_the_example_shows_a_card_while_its_model_thinks(example, tmp_path):
    if EXAMPLES[example]:
        pytest.importorskip(EXAMPLES[example], reason="the pydantic-acp extra is not installed")
    client = RecordingClient()
    # the card opens after with_progress's 0.5 s of silence; then 2.5 heartbeat intervals of thinking
    env = agent_env(EXAMPLE_THINK_SECONDS="0.75", ACP_PROGRESS_HEARTBEAT_INTERVAL="0.1")
    argv = [str(ROOT / "examples" / example)]
    async with spawn_agent(client, env=env, argv=argv) as (conn, _p, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "hello")
    assert response.stop_reason == "end_turn"
    assert client.answer() == "Done thinking."
    ((_card, ups),) = client.think_cards().items()
    assert ups[0].title == "Thinking..."
    assert any(u.status == "in_progress" for u in ups[1:]), "a heartbeat from the settings' interval"
    assert final_status(ups) == "completed"
    kinds = [getattr(r.update, "status", None) or r.update.session_update for r in client.updates]
    assert kinds.index("completed") < kinds.index("agent_message_chunk"), "closed before the answer"
