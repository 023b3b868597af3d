"""Stdout is the protocol: in ACP mode nothing but JSON-RPC reaches the real stdout."""

from __future__ import annotations

import logging

import pytest

from tests.helpers.acp_agent import ROOT, RecordingClient, prompt_text, spawn_agent

pytestmark = pytest.mark.anyio


async def test_print_logging_and_child_processes_cannot_corrupt_the_protocol(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    client = RecordingClient()
    argv = [str(ROOT / "tests" / "agents" / "noisy_agent.py")]
    async with spawn_agent(client, argv=argv) as (conn, _proc, log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        first = await prompt_text(conn, session.session_id, "hello")
        second = await prompt_text(conn, session.session_id, "what is 2+2")
    assert first.stop_reason == second.stop_reason == "end_turn"
    parse_errors = [r for r in caplog.records if "parsing JSON-RPC" in r.getMessage()]
    assert parse_errors == [], "non-JSON bytes reached the protocol stream"
    answer = client.answer(session.session_id)
    assert "Hello" in answer and "2+2 = 4" in answer
    noise = log.read_text(errors="replace")
    for marker in (
        "NOISE print()",
        "NOISE sys.stdout.write",
        "NOISE sys.__stdout__.write",
        "NOISE logging",
        "NOISE raw os.write(1)",
        "NOISE child shell on fd 1",
        "NOISE python child print",
        "NOISE child read stdin",
        "NOISE a warning",
    ):
        assert marker in noise, f"{marker!r} should have gone to stderr"
