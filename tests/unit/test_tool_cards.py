"""Real tools as ACP tool cards: titles, kinds, progress, failures and a cancel mid-tool. The
tools here (a search, file reads, a long wait) start no process, and the cards are decided by the
agent whoever its client is: the tests share one agent served in this process
(:mod:`tests.helpers.shared_agent`, the fast settings: the embedded model thinks 0.05 s, as nothing
here depends on how long), each with its own session and client. The cards of tools that run
commands are in tests/e2e/test_e2e_tools.py."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest
from acp.schema import ToolCallProgress

from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import text_of, tool_cards

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess() as shared:
        yield shared


def _workspace(tmp_path, files: int = 300):
    for i in range(files):
        sub = tmp_path / f"pkg{i % 10}"
        sub.mkdir(exist_ok=True)
        body = "def f():\n    return 1\n"
        if i % 50 == 0:
            body += f"# TODO: handle case {i}\n"
        (sub / f"mod{i}.py").write_text(body)
    return tmp_path


async def test_search_card_has_title_progress_and_matches_and_the_answer_cites_them(tmp_path, agent):
    ws = _workspace(tmp_path)
    client = RecordingClient()
    session = await agent.new_session(client, ws)
    response = await prompt_text(agent.conn, session.session_id, "search for TODO")
    assert response.stop_reason == "end_turn"
    (card,) = tool_cards(client, session.session_id)
    start = card[0]
    assert start.kind == "search" and start.status == "in_progress"
    assert start.title == "Searching for TODO"
    assert start.raw_input == {"query": "TODO"}
    progress = [u for u in card[1:] if (u.field_meta or {}).get("acpProgress", {}).get("phase") == "progress"]
    assert len(progress) >= 2 and all(u.status is None for u in progress)
    values = [u.field_meta["acpProgress"]["progress"] for u in progress]
    assert all(v["total"] == 300 for v in values)
    assert values[-1]["value"] == 300 and values[0]["value"] < 300
    assert "Scanned 300/300 files" in text_of(progress[-1])
    assert final_status(card) == "completed"
    assert "6 matches in 6 files" in text_of(card[-1])
    answer = client.answer(session.session_id)
    assert "found 6 matches in 6 files" in answer and "pkg0/mod0.py:3" in answer

    # no orphan: every think card closed, and the first one closed before the tool card opened
    updates = client.for_session(session.session_id)
    thinks = client.think_cards(session.session_id)
    assert len(thinks) == 2 and all(final_status(c) == "completed" for c in thinks.values())
    first_think_done = updates.index(next(iter(thinks.values()))[-1])
    assert first_think_done < updates.index(start)


async def test_failing_tools_fail_their_card_and_the_turn_still_answers(tmp_path, agent):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("nope")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside / "secret.txt", ws / "link.txt")
    client = RecordingClient()
    conn = agent.conn
    session = await agent.new_session(client, ws)
    missing = await prompt_text(conn, session.session_id, "read missing.md")
    escape = await prompt_text(conn, session.session_id, "read ../outside/secret.txt")
    link = await prompt_text(conn, session.session_id, "read link.txt")
    assert missing.stop_reason == escape.stop_reason == link.stop_reason == "end_turn"
    cards = tool_cards(client, session.session_id)
    assert [final_status(c) for c in cards] == ["failed", "failed", "failed"]
    reasons = [text_of(c[-1]) for c in cards]
    assert "no such file: missing.md" in reasons[0]
    assert "outside the workspace" in reasons[1] and "outside the workspace" in reasons[2]
    assert all("\n" not in r for r in reasons)
    answer = client.answer(session.session_id)
    assert answer.count("The `read_file` call failed") == 3
    assert all(final_status(c) == "completed" for c in client.think_cards(session.session_id).values())


async def test_cancel_during_a_long_tool_closes_its_card_and_drops_later_progress(tmp_path, agent):
    client = RecordingClient()
    progressed = asyncio.Event()

    def on_update(r):
        if isinstance(r.update, ToolCallProgress) and (r.update.field_meta or {}).get("acpProgress", {}).get(
            "progress"
        ):
            progressed.set()

    client.on_update = on_update
    conn = agent.conn
    session = await agent.new_session(client, tmp_path)
    # 12 steps of 0.5 s: the turn is still in its tool long after the cancel
    task = asyncio.create_task(prompt_text(conn, session.session_id, "wait 6 seconds"))
    await asyncio.wait_for(progressed.wait(), 10)
    await conn.cancel(session_id=session.session_id)
    response = await asyncio.wait_for(task, 5)
    count = len(client.updates)
    await asyncio.sleep(0.6)  # more than a step: the tool would have reported another by now
    assert len(client.updates) == count
    assert response.stop_reason == "cancelled"
    (card,) = tool_cards(client, session.session_id)
    assert card[0].title.startswith("Working on")
    assert final_status(card) == "failed" and "Cancelled" in text_of(card[-1])
    after_terminal = card[card.index(card[-1]) + 1 :]
    assert after_terminal == []
