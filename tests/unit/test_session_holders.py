"""A session open in one process cannot be deleted from another (the store knows which process holds
it, and the delete says so), and a writer that finds its session gone says so loudly and stores it
again instead of dropping the turn."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from acp import RequestError

from acp_adapter.store import MemoryStore, SessionGone, SessionRecord
from acp_adapter.store.recorder import ConversationRecorder
from acp_adapter.store.session_holds import SESSION_HOLDERS, held_elsewhere
from acp_adapter.store.sqlite import SqliteStore
from acp_adapter.store.writer import BackgroundWriter
from tests.helpers.acp_agent import RecordingClient, agent_env, prompt_text, spawn_agent
from tests.helpers.session_requests import close_session, delete_session
from tests.helpers.shared_agent import agent_on


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.e2e
def test_a_marker_of_a_running_process_on_this_machine_holds_the_session() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        marker = {"pid": sleeper.pid, "host": socket.gethostname(), "at": 0.0}
        assert held_elsewhere(marker, now=1e9, fresh_within=3600) == marker  # age does not matter here
    finally:
        sleeper.kill()
        sleeper.wait()
    assert held_elsewhere(marker, now=1e9, fresh_within=3600) is None, "its process is gone"
    ours = {"pid": os.getpid(), "host": socket.gethostname(), "at": 0.0}
    assert held_elsewhere(ours, now=0.0, fresh_within=3600) is None, "this process is not another"


def test_a_marker_from_another_machine_holds_while_it_is_fresh() -> None:
    marker = {"pid": 1, "host": "elsewhere.example", "at": 1000.0}
    assert held_elsewhere(marker, now=1000.0 + 3599, fresh_within=3600) == marker
    assert held_elsewhere(marker, now=1000.0 + 3601, fresh_within=3600) is None
    for junk in (None, "x", {"pid": "1"}, {"host": 5}, []):
        assert held_elsewhere(junk, now=0.0, fresh_within=3600) is None


@pytest.mark.parametrize("make_store", ["memory", "sqlite"])
def test_every_store_refuses_events_for_a_session_it_does_not_have(make_store: str, tmp_path: Path) -> None:
    store = MemoryStore() if make_store == "memory" else SqliteStore(tmp_path)
    with pytest.raises(SessionGone):
        store.append_events("nope", [{"sessionUpdate": "agent_message_chunk"}], 1.0)
    store.upsert_session(SessionRecord("s1", "/w", None, 1.0, 1.0))
    store.append_events("s1", [{"sessionUpdate": "agent_message_chunk"}], 2.0)
    assert len(store.load("s1").events) == 1  # type: ignore[union-attr]
    store.close()


def test_a_turn_whose_session_was_deleted_is_kept_and_the_log_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="acp_progress.store")
    store = SqliteStore(tmp_path)
    writer = BackgroundWriter(store)
    recorder = ConversationRecorder(store, writer)
    recorder.open_session("s1", "/work", "first")
    recorder.begin_turn("s1", "/work", [{"type": "text", "text": "hello"}], "hello")
    assert writer.flush()
    assert store.get(SESSION_HOLDERS, "s1")["pid"] == os.getpid()
    store.delete("s1")  # another process deleted it meanwhile
    recorder.end_turn("s1", [{"role": "user", "content": "hello"}], "end_turn")
    assert writer.flush()
    stored = store.load("s1")
    assert stored is not None and stored.record.cwd == "/work", "the session is stored again"
    assert stored.history == [{"role": "user", "content": "hello"}]
    assert any(
        "was deleted from the session store while it was open" in r.getMessage() for r in caplog.records
    )
    recorder.forget("s1")
    assert writer.flush()
    assert store.get(SESSION_HOLDERS, "s1") is None, "letting go removes our marker"
    writer.close()
    store.close()


def test_letting_go_never_removes_another_process_marker(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    writer = BackgroundWriter(store)
    recorder = ConversationRecorder(store, writer)
    recorder.open_session("s1", "/work")
    assert writer.flush()
    theirs = {"pid": os.getpid() + 1, "host": socket.gethostname(), "at": time.time()}
    store.put(SESSION_HOLDERS, "s1", theirs)  # another process loaded the session after us
    recorder.let_go_of_all()
    assert writer.flush()
    assert store.get(SESSION_HOLDERS, "s1") == theirs
    writer.close()
    store.close()


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_delete_of_a_session_held_by_a_running_process_is_refused_naming_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with agent_on(state) as (conn, _client):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
        # the marker now names a live process that is not this one (another editor's agent)
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # noqa: ASYNC220
        try:
            store = SqliteStore(state)
            store.put(
                SESSION_HOLDERS, sid, {"pid": sleeper.pid, "host": socket.gethostname(), "at": time.time()}
            )
            store.close()
            with pytest.raises(RequestError) as refused:
                await delete_session(conn, sid)
            assert f"open in another acp-progress process {sleeper.pid}" in str(refused.value.data)
            listed = await conn.list_sessions(cwd=str(tmp_path))
            assert [s.session_id for s in listed.sessions] == [sid], "nothing was deleted"
        finally:
            sleeper.kill()
            sleeper.wait()
        await delete_session(conn, sid)  # its holder is gone: the delete goes through
        assert (await conn.list_sessions(cwd=str(tmp_path))).sessions == []


@pytest.mark.e2e
@pytest.mark.anyio
async def test_two_agent_processes_one_holds_the_other_cannot_delete_until_it_lets_go(tmp_path: Path) -> None:
    """The attack as it happened: an editor's agent has a session open; `acp-progress` in another
    terminal (another agent process on the same store) deletes it, and the editor's later turns
    were silently not stored."""
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    async with spawn_agent(RecordingClient(), env=env) as (holder, holder_proc, _log):
        sid = (await holder.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(holder, sid, "what is 1+1")).stop_reason == "end_turn"
        async with spawn_agent(RecordingClient(), env=env) as (other, _proc, _log2):
            with pytest.raises(RequestError) as refused:
                await delete_session(other, sid)
            assert f"process {holder_proc.pid}" in str(refused.value.data)
        assert (await prompt_text(holder, sid, "what is 2+2")).stop_reason == "end_turn"
        await close_session(holder, sid)  # let go: now it may be deleted
        async with spawn_agent(RecordingClient(), env=env) as (other, _proc, _log2):
            await delete_session(other, sid)
            assert (await other.list_sessions(cwd=str(tmp_path))).sessions == []
