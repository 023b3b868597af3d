"""``session/fork``: a new session whose conversation is a copy of the source's.

A load of the fork replays the same conversation as a load of the source; from then on the two are
independent (a prompt to the fork is not in the source, deleting the source keeps the fork). Both
database back-ends hold the copy: SQLite and a real PostgreSQL server. In-process: what is checked
is what the store holds and what a load replays, the same in a spawned agent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError
from acp.meta import AGENT_METHODS
from acp.schema import DeleteSessionRequest, DeleteSessionResponse
from acp.utils import request_model_from_dict

from tests.helpers.acp_agent import RecordingClient, fast_settings, prompt_text
from tests.helpers.shared_agent import progress_agent, served_inprocess


def _settings(tmp_path: Path, url: str | None, **more: Any) -> Any:
    if url:
        more["store"] = {"url": url}
    return fast_settings(state_dir=str(tmp_path / "state"), **{"embedded_delay": 0.0, **more})


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_url") if request.param == "postgres" else None


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "notes.py").write_text("# TODO: write the docs\n")
    return ws


def _conversation(client: RecordingClient, session_id: str) -> list[dict[str, Any]]:
    """What a load replayed for ``session_id``, as the wire carries it."""
    return [
        u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in client.for_session(session_id)
    ]


async def _load(tmp_path: Path, url: str | None, ws: Path, session_id: str) -> list[dict[str, Any]]:
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(_settings(tmp_path, url))) as conn:
        await conn.load_session(cwd=str(ws), session_id=session_id, mcp_servers=[])
    return _conversation(client, session_id)


def _users(conversation: list[dict[str, Any]]) -> list[str]:
    return [u["content"]["text"] for u in conversation if u["sessionUpdate"] == "user_message_chunk"]


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_fork_replays_the_source_s_conversation_and_goes_on_alone(
    tmp_path: Path, store_url: str | None
) -> None:
    ws = _workspace(tmp_path)
    agent = progress_agent(_settings(tmp_path, store_url))
    async with served_inprocess(RecordingClient(), agent) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.fork is not None
        source = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, source, "search the workspace for TODO")).stop_reason == "end_turn"
        assert (await prompt_text(conn, source, "what is 2+2")).stop_reason == "end_turn"
        forked = await conn.fork_session(session_id=source, cwd=str(ws), mcp_servers=[])
        fork = forked.session_id
        assert fork != source and fork.startswith("sess_")
        assert forked.config_options, "the fork answers with its configuration, as session/new does"
        # the fork's model history is the source's: the model goes on from the same conversation
        history = [(m.role, m.content) for m in agent.sessions.get(fork).history]
        assert history == [(m.role, m.content) for m in agent.sessions.get(source).history]
        assert (await prompt_text(conn, fork, "what is 3+3")).stop_reason == "end_turn"
        listed = {s.session_id: s.title for s in (await conn.list_sessions(cwd=str(ws))).sessions}
        assert listed[fork] == listed[source] == "search the workspace for TODO"

    source_replay = await _load(tmp_path, store_url, ws, source)
    fork_replay = await _load(tmp_path, store_url, ws, fork)
    assert _users(source_replay) == ["search the workspace for TODO", "what is 2+2"]
    assert _users(fork_replay) == [*_users(source_replay), "what is 3+3"]
    # up to the fork, the same updates in the same order (cards in their final state included)
    copied = len(source_replay) - 1  # the source's replay ends with its session_info_update
    assert fork_replay[:copied] == source_replay[:copied]
    assert any(u["sessionUpdate"] == "tool_call" and u["kind"] == "search" for u in fork_replay)

    async with served_inprocess(RecordingClient(), progress_agent(_settings(tmp_path, store_url))) as conn:
        await request_model_from_dict(
            conn._conn,
            AGENT_METHODS["session_delete"],
            DeleteSessionRequest(session_id=source),
            DeleteSessionResponse,
        )  # the SDK's client side has no delete_session method: its request, its models
        with pytest.raises(RequestError):
            await conn.load_session(cwd=str(ws), session_id=source, mcp_servers=[])
    assert _users(await _load(tmp_path, store_url, ws, fork))[-1] == "what is 3+3"


@pytest.mark.anyio
async def test_a_fork_keeps_the_source_s_mode_and_may_go_on_in_another_workspace(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with served_inprocess(RecordingClient(), progress_agent(_settings(tmp_path, None))) as conn:
        source = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await conn.set_config_option(config_id="mode", session_id=source, value="read-only")
        assert (await prompt_text(conn, source, "what is 2+2")).stop_reason == "end_turn"
        forked = await conn.fork_session(session_id=source, cwd=str(elsewhere), mcp_servers=[])
        assert forked.modes is not None and forked.modes.current_mode_id == "read-only"
        # changing the fork's mode leaves the source's alone
        await conn.set_config_option(config_id="mode", session_id=forked.session_id, value="auto")
        resumed = await conn.resume_session(cwd=str(ws), session_id=source, mcp_servers=[])
        assert resumed.modes is not None and resumed.modes.current_mode_id == "read-only"
        assert [s.session_id for s in (await conn.list_sessions(cwd=str(elsewhere))).sessions] == [
            forked.session_id
        ]


@pytest.mark.anyio
async def test_fork_errors_say_what_is_wrong(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    slow = _settings(tmp_path, None, embedded_delay=2.0)
    agent = progress_agent(slow)
    async with served_inprocess(RecordingClient(), agent) as conn:
        with pytest.raises(RequestError) as err:
            await conn.fork_session(session_id="sess_nope", cwd=str(ws), mcp_servers=[])
        assert err.value.code == -32602 and "sess_nope" in str(err.value.data)
        source = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as err:
            await conn.fork_session(session_id=source, cwd="relative", mcp_servers=[])
        assert "absolute" in str(err.value.data)
        running = asyncio.ensure_future(prompt_text(conn, source, "what is 2+2"))
        for _ in range(1000):  # until the prompt runs (it thinks 2 s)
            live = agent.sessions.find(source)
            if live is not None and live.cancel is not None:
                break
            await asyncio.sleep(0.01)
        with pytest.raises(RequestError) as err:
            await conn.fork_session(session_id=source, cwd=str(ws), mcp_servers=[])
        assert "cancel it first" in str(err.value.data)
        await conn.cancel(session_id=source)
        assert (await running).stop_reason == "cancelled"
        # nothing half-made: only the source is stored
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [source]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    from acp_adapter.store import MemoryStore, SqliteStore, open_store

    if request.param == "memory":
        store: Any = MemoryStore()
    elif request.param == "sqlite":
        store = SqliteStore(tmp_path / "state")
    else:
        store = open_store(None, retention_days=0, url=request.getfixturevalue("pg_url"))
    yield store
    store.close()


@pytest.mark.e2e
def test_the_store_s_fork_is_a_whole_copy_independent_from_then_on(any_store: Any) -> None:
    from acp_adapter.store import SessionRecord

    store = any_store
    store.upsert_session(SessionRecord("sess_src", "/w", "A title", 1.0, 2.0))
    events = [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": f"p{i}"}}
        for i in range(3)
    ]
    store.append_events("sess_src", events, 3.0)
    store.replace_history("sess_src", [{"role": "user", "content": "p0"}])

    assert store.fork("sess_missing", "sess_x", "/w", 9.0) is None
    assert store.load("sess_x") is None, "nothing is written for an unknown source"

    forked = store.fork("sess_src", "sess_fork", "/other", 9.0)
    assert forked is not None and forked.events == []  # copied, never read
    assert (forked.record.session_id, forked.record.cwd, forked.record.title) == (
        "sess_fork",
        "/other",
        "A title",
    )
    assert forked.history == [{"role": "user", "content": "p0"}]
    copy = store.load("sess_fork")
    assert copy is not None and copy.events == store.load("sess_src").events

    store.append_events("sess_fork", [events[0]], 10.0)
    store.replace_history("sess_fork", [])
    source = store.load("sess_src")
    assert len(source.events) == 3 and source.history == [{"role": "user", "content": "p0"}]
    store.delete("sess_src")
    assert len(store.load("sess_fork").events) == 4
