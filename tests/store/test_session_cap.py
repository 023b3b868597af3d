"""A stored session keeps at most ``max_session_bytes`` (every input is bounded: one AG-UI thread
fed big runs would otherwise grow without bound). Over the cap its oldest entries go first, a note
takes their place, the log says so."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.store import open_store
from acp_adapter.store.base import SessionRecord, drop_count
from acp_adapter.store.memory import MemoryStore
from acp_adapter.store.stored_entries import trimmed_note
from tests.helpers.acp_agent import RecordingClient, prompt_text
from tests.helpers.shared_agent import progress_agent, served_inprocess

CAP = 64 * 1024


@given(st.lists(st.integers(min_value=1, max_value=5000), max_size=60), st.integers(100, 20_000))
def test_drop_count_keeps_the_newest_that_fit_with_the_note(sizes: list[int], max_bytes: int) -> None:
    note = 80
    cut = drop_count(sizes, max_bytes, note)
    if sum(sizes) <= max_bytes:
        assert cut == 0
        return
    assert 0 < cut <= len(sizes)
    assert sum(sizes[cut:]) + note <= max_bytes  # what is kept fits beside the note
    assert cut == len(sizes) or sum(sizes[cut - 1 :]) + note > max_bytes  # and nothing more would


def _event(i: int, size: int) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"{i}:" + "x" * size}}


NOTE = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "(trimmed)"}}


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_store_drops_the_oldest_events_and_puts_the_note_first(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    store: Any = (
        MemoryStore() if kind == "memory" else open_store(tmp_path / "state", retention_days=0, url=url)
    )
    try:
        store.upsert_session(SessionRecord("s1", str(tmp_path), None, 1.0, 1.0))
        store.append_events("s1", [_event(i, 1000) for i in range(30)], 2.0)
        assert store.trim_events("s1", 100_000, NOTE)[0] == 0  # under the cap: nothing changes
        dropped, kept = store.trim_events("s1", 10_000, NOTE)
        events = store.load("s1").events
        assert dropped == 30 - (len(events) - 1) and dropped > 20
        assert events[0] == NOTE
        numbers = [e["content"]["text"].split(":")[0] for e in events[1:]]
        assert numbers == [str(i) for i in range(dropped, 30)]
        assert kept == sum(len(json.dumps(e, separators=(",", ":")).encode()) for e in events) <= 10_000
        # trimmed again later: the earlier note is the oldest entry and goes first, one note stays
        store.append_events("s1", [_event(i, 1000) for i in range(30, 35)], 3.0)
        store.trim_events("s1", 10_000, NOTE)
        events = store.load("s1").events
        assert events[0] == NOTE and NOTE not in events[1:]
        assert events[-1]["content"]["text"].startswith("34:")
    finally:
        store.close()


@pytest.mark.anyio
async def test_a_session_over_its_cap_loads_with_its_newest_turns_and_a_note(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """This project's agent (in this process: what it stores and logs is the point, not its
    process) with a 64 KiB cap and five 20 KB prompts: the database keeps the newest turns, a load
    replays the note first, then them; the log names the session and what was dropped."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    caplog.set_level(logging.INFO, logger="acp_progress")
    client = RecordingClient()
    agent = progress_agent(state_dir=str(state), max_session_bytes=CAP)
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        for turn in range(5):
            reply = await prompt_text(conn, sid, f"turn-{turn} " + "word " * 4000)
            assert reply.stop_reason == "end_turn"
        client.updates.clear()
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        replayed = [u.update for u in client.updates]
        log = caplog.text
    texts = [u.content.text for u in replayed if getattr(u, "session_update", "").endswith("message_chunk")]
    assert texts[0] == trimmed_note(CAP), texts[:2]
    prompts = [t.split()[0] for t in texts if t.startswith("turn-")]
    assert prompts and prompts[-1] == "turn-4" and "turn-0" not in prompts
    assert "dropped its" in log and sid in log
    store = open_store(state, retention_days=0)
    try:
        stored = store.load(sid)
    finally:
        store.close()
    assert stored is not None
    assert sum(len(json.dumps(e, separators=(",", ":")).encode()) for e in stored.events) <= CAP
