"""Real tools that run processes, as ACP tool cards end to end: a command's permission asked on
its own card (a denial fails it), and secrets from a prompt, a file and a command's output that
never reach the client. The commands run in processes of their own (hence ``e2e``); the cards are
decided by the agent whoever its client is, so the tests share one agent served in this process
(:mod:`tests.helpers.shared_agent`, the fast settings): each opens its own session. The tool cards
of tools that start no process are tested in tests/unit/test_tool_cards.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from acp.schema import AgentThoughtChunk

from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import text_of, tool_cards

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess() as shared:
        yield shared


async def test_permission_is_asked_on_the_same_card_and_a_denial_fails_it(tmp_path, agent):
    (tmp_path / "hello.txt").write_text("hi\n")
    for decision, expected in (("reject", "failed"), ("allow", "completed")):
        client = RecordingClient(permission=decision)
        session = await agent.new_session(client, tmp_path)
        response = await prompt_text(agent.conn, session.session_id, "run ls -la")
        assert response.stop_reason == "end_turn"
        (card,) = tool_cards(client, session.session_id)
        assert card[0].kind == "execute" and card[0].title == "Running ls -la"
        (asked,) = client.permission_requests
        assert asked.tool_call_id == card[0].tool_call_id
        assert client.statuses_seen_at_permission == [["in_progress", "pending"]], (
            "the permission request overtook the card it asks about"
        )
        assert final_status(card) == expected
        if decision == "reject":
            assert "Permission denied by the user" in text_of(card[-1])
            assert "failed: Permission denied" in client.answer(session.session_id)
        else:
            assert "hello.txt" in text_of(card[-1])
            assert "I ran `ls -la`" in client.answer(session.session_id)


SECRETS = {
    "prompt": "ghp_PromptSecret0123456789abcdefghijklmn",
    "file": "sk-proj-FileSecretABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
    "command": "xoxb-123456789012-123456789012-CommandSecretAbCdEf",
    "header": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2VjcmV0MTIzNDU2",
}


async def test_secrets_never_reach_the_client(tmp_path, agent):
    (tmp_path / "config.env").write_text(
        f"OPENAI_API_KEY={SECRETS['file']}\nAuthorization: Bearer {SECRETS['header']}\nDEBUG=1\n"
    )
    (tmp_path / "leak.sh").write_text(f"echo 'token={SECRETS['command']}'\necho done\n")
    client = RecordingClient(permission="allow")
    conn = agent.conn
    sid = (await agent.new_session(client, tmp_path)).session_id
    await prompt_text(conn, sid, f"Tell me about my GitHub token {SECRETS['prompt']} please")
    await prompt_text(conn, sid, "read config.env")
    await prompt_text(conn, sid, "run sh leak.sh")
    await prompt_text(conn, sid, f"search for {SECRETS['prompt']}")
    wire = "\n".join(r.update.model_dump_json() for r in client.updates)
    wire += "\n".join(t.model_dump_json() for t in client.permission_requests)
    for where, secret in SECRETS.items():
        assert secret not in wire, f"the {where} secret reached the client"
        assert secret[8:24] not in wire, f"a fragment of the {where} secret reached the client"
    assert "[REDACTED]" in wire
    # the agent still did its work: it read the file and ran the command
    assert "DEBUG=1" in wire and "done" in wire
    assert not any(isinstance(r.update, AgentThoughtChunk) for r in client.updates)
