"""Bad input gets a clear error and loses nothing; the agent process keeps serving."""

from __future__ import annotations

import pytest
from acp import RequestError

from tests.helpers.acp_agent import RecordingClient, agent_env, prompt_text, spawn_agent

pytestmark = pytest.mark.anyio


async def test_garbage_unknown_methods_and_invalid_params(tmp_path):
    client = RecordingClient()
    async with spawn_agent(client, env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")) as (conn, process, log):
        raw = conn._conn  # the SDK's JSON-RPC connection, to send what a buggy client might
        process.stdin.write(b'this is not json\n{"jsonrpc": "2.0", "id": \n')
        await process.stdin.drain()

        with pytest.raises(RequestError) as unknown:
            await raw.send_request("session/teleport", {"sessionId": "x"})
        assert unknown.value.code == -32601 and "session/teleport" in str(unknown.value.data)

        with pytest.raises(RequestError) as invalid:
            await raw.send_request("session/prompt", {"sessionId": 5, "prompt": "not a list"})
        assert invalid.value.code == -32602

        with pytest.raises(RequestError) as missing:
            await raw.send_request("session/new", {"mcpServers": []})
        assert missing.value.code == -32602 and "cwd" in str(missing.value.data)

        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        response = await prompt_text(conn, session.session_id, "what is 1+2")
        assert response.stop_reason == "end_turn"
    assert "1+2 = 3" in client.answer(session.session_id)
    assert process.returncode is not None
    assert "Error parsing JSON-RPC message" in log.read_text()
