"""Durable sessions on the agent side: session/list and session/load across processes.

A conversation in one agent process; the process ends (or is killed); a new process lists it,
loads it (the replay is checked update by update: every card in its final state, no spinner, no
heartbeat, no progress snapshot) and goes on with the history.

A real agent process is started where the process is the point: a SIGKILL with no shutdown (what
was on disk before the kill is all there is), and two processes on one store. What a later agent
reads from the store is the same whether it runs in this process or another, so the agents that
only read back, and the tests where no process ends abnormally, run in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from acp_adapter.server import ProgressAgent
from acp_adapter.store import DATABASE_NAME
from run_agent import AIAgent
from tests.helpers.acp_agent import (
    RecordingClient,
    fast_settings,
    inprocess_agent,
    prompt_text,
    spawn_agent,
)
from tests.helpers.session_requests import delete_session
from tests.helpers.shared_agent import served_inprocess
from tests.helpers.shared_servers import cli_in_process
from tests.helpers.store_backend import Backend

SECRET = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return Backend(request.param, tmp_path, url)


def _kinds(updates: list[Any]) -> list[str]:
    return [u.session_update for u in updates]


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.py").write_text("# TODO: write the docs\nprint('hi')\n")
    (ws / "secrets.txt").write_text(f"GITHUB_TOKEN={SECRET}\n")
    return ws


@pytest.mark.e2e
@pytest.mark.anyio
async def test_list_then_load_replays_the_final_state_and_the_conversation_goes_on(
    tmp_path: Path, backend: Backend
) -> None:
    ws = _workspace(tmp_path)
    # thinking 0.1 s against a heartbeat every 0.025 s: the four heartbeats a phase the default test
    # settings give (0.2 s against 0.05 s), so "no heartbeat replayed" still has some to leave out
    quick = {"embedded_delay": 0.1, "heartbeat_interval": 0.025}
    first = ProgressAgent(turn_runner=AIAgent, settings=backend.settings(**quick))
    live = RecordingClient()
    async with inprocess_agent(live, first) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "search the workspace for TODO")).stop_reason == "end_turn"
        assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
    beats = [u for card in live.think_cards(sid).values() for u in card[1:] if u.status == "in_progress"]
    assert beats, "no heartbeat was sent live: that none is replayed would prove nothing"
    # the first prompt named the session, and the client was told live, once
    infos = [u for u in live.for_session(sid) if isinstance(u, SessionInfoUpdate)]
    assert [i.title for i in infos] == ["search the workspace for TODO"]
    assert infos[0].updated_at and infos[0].updated_at.endswith("Z")

    client = RecordingClient()
    second = ProgressAgent(turn_runner=AIAgent, settings=backend.settings(**quick))
    async with inprocess_agent(client, second) as conn:
        listed = await conn.list_sessions(cwd=str(ws))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].title == "search the workspace for TODO"
        assert listed.sessions[0].updated_at and listed.sessions[0].updated_at.endswith("Z")
        assert (await conn.list_sessions(cwd=str(tmp_path))).sessions == []

        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        # the commands the agent answers come with every load (not part of the conversation)
        assert [type(r.update) for r in client.commands] == [AvailableCommandsUpdate]
        replay = [r.update for r in client.updates]
        kinds = _kinds(replay)
        assert kinds.count("user_message_chunk") == 2
        users = [u.content.text for u in replay if isinstance(u, UserMessageChunk)]
        assert users == ["search the workspace for TODO", "what is 2+2"]
        tools = [u for u in replay if isinstance(u, ToolCallStart)]
        assert len(tools) == 1 and tools[0].status == "completed" and tools[0].kind == "search"
        assert not any(isinstance(u, ToolCallProgress) for u in replay), "progress/heartbeats replayed"
        assert not any(t.kind == "think" for t in tools), "a spinner card was replayed"
        answers = [u for u in replay if isinstance(u, AgentMessageChunk)]
        assert len(answers) == 2, "answer text is coalesced: one entry per answer"
        assert "TODO" in answers[0].content.text
        assert (
            isinstance(replay[-1], SessionInfoUpdate) and replay[-1].title == "search the workspace for TODO"
        )

        before = len(client.updates)
        assert (await prompt_text(conn, sid, "what is 3+3")).stop_reason == "end_turn"
        assert len(client.updates) > before
        users_seen = [m.content for m in second.sessions.get(sid).history if m.role == "user"]
        assert users_seen == ["search the workspace for TODO", "what is 2+2", "what is 3+3"]


@pytest.mark.anyio
async def test_load_and_list_errors_name_what_is_wrong(tmp_path: Path) -> None:
    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=str(tmp_path / "state")))
    async with inprocess_agent(RecordingClient(), agent) as conn:
        with pytest.raises(RequestError) as err:
            await conn.load_session(cwd=str(tmp_path), session_id="sess_nope", mcp_servers=[])
        assert err.value.code == -32602 and "sess_nope" in str(err.value.data)
        with pytest.raises(RequestError) as err:
            await conn.load_session(cwd="relative", session_id="sess_nope", mcp_servers=[])
        assert "absolute" in str(err.value.data)
        with pytest.raises(RequestError) as err:
            await conn.list_sessions(cursor="garbage")
        assert err.value.code == -32602 and "cursor" in str(err.value.data)


@pytest.mark.anyio
async def test_list_pages_with_a_cursor(tmp_path: Path) -> None:
    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=str(tmp_path / "state")))
    async with inprocess_agent(RecordingClient(), agent) as conn:
        made = {(await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id for _ in range(55)}
        page = await conn.list_sessions()
        seen = [s.session_id for s in page.sessions]
        assert len(seen) == 50 and page.next_cursor
        page = await conn.list_sessions(cursor=page.next_cursor)
        seen += [s.session_id for s in page.sessions]
        assert page.next_cursor is None and set(seen) == made and len(seen) == 55


@pytest.mark.anyio
async def test_initialize_advertises_load_and_list(tmp_path: Path) -> None:
    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=str(tmp_path)))
    async with inprocess_agent(RecordingClient(), agent) as conn:
        from acp import PROTOCOL_VERSION

        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.load_session is True
        assert init.agent_capabilities.session_capabilities.list is not None


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_killed_agent_s_conversation_is_listed_loaded_and_secret_free_on_disk(
    tmp_path: Path, backend: Backend
) -> None:
    ws = _workspace(tmp_path)
    state = backend.state
    env = backend.env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")  # thinking is not the point here
    async with spawn_agent(RecordingClient(), env=env) as (conn, proc, _log):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        first = await prompt_text(conn, sid, "read secrets.txt")
        assert first.stop_reason == "end_turn"
        proc.send_signal(signal.SIGKILL)  # no shutdown, no goodbye: the turn must already be on disk
        await asyncio.wait_for(proc.wait(), 10)

    if backend.url is None:
        for path in state.iterdir():
            assert SECRET.encode() not in path.read_bytes(), f"the secret reached {path.name}"
        assert (state / DATABASE_NAME).exists()
    else:
        import psycopg

        with psycopg.connect(backend.url) as db:  # every row of every table, as text
            dump = db.execute(
                "SELECT string_agg(t::text, ' ') FROM (SELECT * FROM acp_progress.events) t"
            ).fetchone()[0] + repr(db.execute("TABLE acp_progress.sessions").fetchall())
        assert "GITHUB_TOKEN" in dump and SECRET not in dump

    client = RecordingClient()  # the next agent reads what the killed one left on disk
    async with inprocess_agent(
        client, ProgressAgent(turn_runner=AIAgent, settings=backend.settings())
    ) as conn:
        listed = await conn.list_sessions(cwd=str(ws))
        assert [s.session_id for s in listed.sessions] == [sid]
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        replay = client.for_session(sid)
        tools = [u for u in replay if isinstance(u, ToolCallStart)]
        assert [t.status for t in tools] == ["completed"]
        assert "GITHUB_TOKEN" in repr(tools[0].content)  # the result was kept, its secret was not
        assert SECRET not in repr(replay)
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"


@pytest.mark.e2e
@pytest.mark.anyio
async def test_two_agent_processes_on_one_store(tmp_path: Path, backend: Backend) -> None:
    """Two editor windows (or two machines on one PostgreSQL): a session prompted in one is
    listed and loaded by the other. One agent is a spawned process, the other runs in this one:
    two processes, each with its own connection to the store."""
    ws = _workspace(tmp_path)
    env = backend.env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")  # thinking is not the point here
    one, two = RecordingClient(), RecordingClient()
    here = ProgressAgent(turn_runner=AIAgent, settings=backend.settings())
    async with spawn_agent(one, env=env) as (a, _pa, _la), served_inprocess(two, here) as b:
        sa = (await a.new_session(cwd=str(ws), mcp_servers=[])).session_id
        sb = (await b.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await asyncio.gather(prompt_text(a, sa, "what is 1+1"), prompt_text(b, sb, "what is 2+2"))
        listed_in_b = {s.session_id for s in (await b.list_sessions(cwd=str(ws))).sessions}
        assert {sa, sb} <= listed_in_b
        await b.load_session(cwd=str(ws), session_id=sa, mcp_servers=[])
        users = [u.content.text for u in two.for_session(sa) if isinstance(u, UserMessageChunk)]
        assert users == ["what is 1+1"]


@pytest.mark.anyio
async def test_with_state_off_nothing_is_written(tmp_path: Path) -> None:
    state = tmp_path / "state"
    settings = fast_settings(state_dir=str(state), state=False)
    async with inprocess_agent(
        RecordingClient(), ProgressAgent(turn_runner=AIAgent, settings=settings)
    ) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "what is 1+1")
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [sid]  # this process only
    assert not state.exists()


COUNT_AUDIT = (
    "python3 -c 'import sqlite3,sys; db = sqlite3.connect(sys.argv[1]); "
    'print("audited:", db.execute("select count(*) from permissions").fetchone()[0])'
    "' {db}"
)


def _cli(*args: str) -> tuple[int, str, str]:
    """``acp-progress ARGS`` in this process (what it prints is the point, not its process), with
    the environment the test set; its exit code, stdout and stderr."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with cli_in_process() as main, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.e2e
@pytest.mark.anyio
async def test_permission_decisions_are_audited_before_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(``e2e``: the allowed command runs as a process, the point of "audited before it runs".)"""
    import json

    import anyio

    state = tmp_path / "state"
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(state))  # for the audit command below
    client = RecordingClient(permission="allow")
    thinks = fast_settings(state_dir=str(state), embedded_delay=0.05)  # thinking is not the point here
    agent = ProgressAgent(turn_runner=AIAgent, settings=thinks)
    async with served_inprocess(client, agent) as conn:  # its initialize names the surface: pytest
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        command = COUNT_AUDIT.format(db=state / DATABASE_NAME)
        assert (await prompt_text(conn, sid, f"run `{command}`")).stop_reason == "end_turn"
        outputs = [
            repr(u.content) for u in client.for_session(sid) if isinstance(u, ToolCallProgress) and u.content
        ]
        assert any("audited: 1" in o for o in outputs), "the command ran before its permission was audited"
        client.permission = "reject"
        await prompt_text(conn, sid, "run `echo denied`")

    code, stdout, stderr = await anyio.to_thread.run_sync(lambda: _cli("audit", "--json"))
    assert code == 0, stderr
    rows = [json.loads(line) for line in stdout.splitlines()]
    # a client that names neither who nor where: "client", on the surface its initialize named
    assert [(r["allowed"], r["decidedBy"], r["surface"]) for r in rows] == [
        (False, "client", "pytest"),
        (True, "client", "pytest"),
    ]
    assert "echo denied" in rows[0]["title"] and rows[0]["sessionId"] == sid
    text = (await anyio.to_thread.run_sync(lambda: _cli("audit")))[1]
    assert "denied" in text and "allowed" in text


@pytest.mark.e2e
@pytest.mark.anyio
async def test_session_delete_is_advertised_and_removes_a_session_for_good(
    tmp_path: Path, backend: Backend
) -> None:
    ws = _workspace(tmp_path)
    agent = ProgressAgent(turn_runner=AIAgent, settings=backend.settings(embedded_delay=0.05))
    async with served_inprocess(RecordingClient(), agent) as conn:  # serve's routes: delete too
        from acp import PROTOCOL_VERSION

        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.delete is not None
        keep = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        gone = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await prompt_text(conn, keep, "what is 1+1")
        await prompt_text(conn, gone, "what is 2+2")
        assert await delete_session(conn, gone) is not None
        assert [s.session_id for s in (await conn.list_sessions(cwd=str(ws))).sessions] == [keep]
        with pytest.raises(RequestError) as err:  # gone from memory too: no prompt, no load
            await prompt_text(conn, gone, "still there?")
        assert err.value.code == -32602 and gone in str(err.value.data)
        # deleting is idempotent (the protocol's SHOULD): a deleted or never-made id answers {}
        assert await delete_session(conn, gone) is not None
        assert await delete_session(conn, "sess_never") is not None

    agent = ProgressAgent(turn_runner=AIAgent, settings=backend.settings())
    async with served_inprocess(RecordingClient(), agent) as conn:  # and from the disk
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [keep]
        with pytest.raises(RequestError) as err:
            await conn.load_session(cwd=str(ws), session_id=gone, mcp_servers=[])
        assert gone in str(err.value.data)
        await delete_session(conn, keep)  # a stored session this process never opened
        assert (await conn.list_sessions()).sessions == []


@pytest.mark.anyio
async def test_an_agent_started_on_a_corrupt_database_moves_it_aside_and_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    ws = _workspace(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    garbage = b"\x00\xffnot a database at all\n" * 500
    (state / DATABASE_NAME).write_bytes(garbage)
    (state / DATABASE_NAME).chmod(0o600)  # private, as the store demands: only its content is bad
    caplog.set_level(logging.INFO, logger="acp_progress")

    def logged_errors() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]

    client = RecordingClient()
    agent = ProgressAgent(
        turn_runner=AIAgent, settings=fast_settings(state_dir=str(state), embedded_delay=0.05)
    )
    async with inprocess_agent(client, agent) as conn:
        aside = [p for p in state.iterdir() if ".corrupt-" in p.name]
        assert len(aside) == 1 and aside[0].read_bytes() == garbage, "the unreadable file was not kept"
        errors = logged_errors()
        assert len(errors) == 1, errors
        assert str(aside[0]) in errors[0] and "fresh" in errors[0]
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
        assert [s.session_id for s in (await conn.list_sessions(cwd=str(ws))).sessions] == [sid]

    client = RecordingClient()
    caplog.clear()
    agent = ProgressAgent(
        turn_runner=AIAgent, settings=fast_settings(state_dir=str(state), embedded_delay=0.05)
    )
    async with inprocess_agent(client, agent) as conn:  # the fresh database is the store now
        assert [s.session_id for s in (await conn.list_sessions(cwd=str(ws))).sessions] == [sid]
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        users = [u.content.text for u in client.for_session(sid) if isinstance(u, UserMessageChunk)]
        assert users == ["what is 2+2"]
        assert logged_errors() == []
    assert len([p for p in state.iterdir() if ".corrupt-" in p.name]) == 1


@pytest.mark.anyio
async def test_retention_days_remove_old_sessions_when_an_agent_starts_and_0_keeps_them(
    tmp_path: Path,
) -> None:
    import sqlite3
    import time

    state = tmp_path / "state"

    def agent(**settings: Any) -> ProgressAgent:  # each one opens the store (and prunes it) anew
        # thinking is not the point here
        thinks = fast_settings(state_dir=str(state), embedded_delay=0.05, **settings)
        return ProgressAgent(turn_runner=AIAgent, settings=thinks)

    async with inprocess_agent(RecordingClient(), agent()) as conn:
        old = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, old, "what is 1+1")
        fresh = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, fresh, "what is 2+2")
    db = sqlite3.connect(state / DATABASE_NAME)
    with db:
        db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time() - 3 * 86_400, old))
    db.close()

    async with inprocess_agent(RecordingClient(), agent(session_retention_days=0)) as conn:
        assert {s.session_id for s in (await conn.list_sessions()).sessions} == {old, fresh}

    async with inprocess_agent(RecordingClient(), agent(session_retention_days=1)) as conn:
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [fresh]
        with pytest.raises(RequestError) as err:
            await conn.load_session(cwd=str(tmp_path), session_id=old, mcp_servers=[])
        assert old in str(err.value.data)


@pytest.mark.e2e
@pytest.mark.anyio
async def test_a_turn_killed_mid_way_is_loaded_closed_as_interrupted(
    tmp_path: Path, backend: Backend
) -> None:
    """SIGKILL while a long tool runs: the prompt was written when the turn began, so the next
    process replays it, closed by an "(interrupted)" note, with no card left in progress; and
    the conversation goes on."""
    from acp_adapter.store.recorder import INTERRUPTED_NOTE

    ws = _workspace(tmp_path)
    env = backend.env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")  # thinking is not the point here
    client = RecordingClient()
    async with spawn_agent(client, env=env) as (conn, proc, _log):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
        running = asyncio.ensure_future(prompt_text(conn, sid, "wait 10 seconds"))
        for _ in range(200):  # until the wait tool's card is out: the turn is well under way
            if any(isinstance(u, ToolCallStart) and u.kind != "think" for u in client.for_session(sid)[-20:]):
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the wait tool never started")
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 10)
        running.cancel()
        with contextlib.suppress(BaseException):
            await running

    client = RecordingClient()  # the next agents read what the killed one left on disk
    async with inprocess_agent(
        client, ProgressAgent(turn_runner=AIAgent, settings=backend.settings())
    ) as conn:
        listed = await conn.list_sessions(cwd=str(ws))
        assert [s.session_id for s in listed.sessions] == [sid]
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        replay = client.for_session(sid)
        users = [u.content.text for u in replay if isinstance(u, UserMessageChunk)]
        assert users == ["what is 1+1", "wait 10 seconds"]
        texts = [u.content.text for u in replay if isinstance(u, AgentMessageChunk)]
        assert texts[-1] == INTERRUPTED_NOTE, texts
        kinds = _kinds(replay)
        assert kinds.index("agent_message_chunk", kinds.index("user_message_chunk", 1)) > kinds.index(
            "user_message_chunk", 1
        ), "the note closes the interrupted turn, after its prompt"
        statuses = [u.status for u in replay if isinstance(u, ToolCallStart | ToolCallProgress)]
        assert "in_progress" not in statuses and "pending" not in statuses
        assert (await prompt_text(conn, sid, "what is 3+3")).stop_reason == "end_turn"

    client = RecordingClient()
    agent = ProgressAgent(turn_runner=AIAgent, settings=backend.settings())
    async with inprocess_agent(client, agent) as conn:  # closed once, for good
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        replay = client.for_session(sid)
        texts = [u.content.text for u in replay if isinstance(u, AgentMessageChunk)]
        assert texts.count(INTERRUPTED_NOTE) == 1
        users = [u.content.text for u in replay if isinstance(u, UserMessageChunk)]
        assert users == ["what is 1+1", "wait 10 seconds", "what is 3+3"]
    # the model history the conversation goes on with knows what was asked and that it broke off
    store = backend.open()
    try:
        stored = store.load(sid)
    finally:
        store.close()
    assert stored is not None
    said = [(m["role"], m["content"]) for m in stored.history if m["role"] in ("user", "assistant")]
    asked = [content for role, content in said if role == "user"]
    assert asked == ["what is 1+1", "wait 10 seconds", "what is 3+3"]
    assert ("assistant", INTERRUPTED_NOTE) in said


@pytest.mark.anyio
async def test_a_cancelled_turn_replays_as_its_own_turn_marked_cancelled(tmp_path: Path) -> None:
    """A turn cancelled while the model thought stores more than its prompt: otherwise the replay
    sends two user_message_chunks in a row and every client joins them (`› wait 10 secondshello`)."""
    ws = _workspace(tmp_path)
    state = str(tmp_path / "state")
    first = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=state, embedded_delay=5.0))
    live = RecordingClient()
    async with inprocess_agent(live, first) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        thinking = asyncio.Event()
        live.on_update = lambda _r: thinking.set()
        turn = asyncio.ensure_future(prompt_text(conn, sid, "wait 10 seconds"))
        await asyncio.wait_for(thinking.wait(), 10)  # the think card is out: the model is thinking
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 10)).stop_reason == "cancelled"

    client = RecordingClient()
    second = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=state))
    async with inprocess_agent(client, second) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        assert (await prompt_text(conn, sid, "hello")).stop_reason == "end_turn"
        mark = len(client.updates)
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
    replay = [r.update for r in client.updates[mark:]]
    kinds = _kinds(replay)
    for a, b in itertools.pairwise(kinds):
        assert not (a == b == "user_message_chunk"), kinds
    texts = [u.content.text for u in replay if isinstance(u, UserMessageChunk | AgentMessageChunk)]
    assert texts[:3] == ["wait 10 seconds", "(cancelled)", "hello"], texts


@pytest.mark.anyio
async def test_a_session_loads_only_in_its_own_workspace(tmp_path: Path) -> None:
    """session/load with another workspace's cwd does not move the session there."""
    ws = _workspace(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    settings = fast_settings(state_dir=str(tmp_path / "state"), embedded_delay=0.05)
    agent = ProgressAgent(turn_runner=AIAgent, settings=settings)
    async with inprocess_agent(RecordingClient(), agent) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "read secrets.txt")).stop_reason == "end_turn"
        for method in (conn.load_session, agent.resume_session):  # resume: called as the SDK would
            with pytest.raises(RequestError) as info:
                await method(cwd=str(other), session_id=sid, mcp_servers=[])
            assert f"belongs to workspace {ws}" in str(info.value.data)
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        listed = await conn.list_sessions()
        assert [s.cwd for s in listed.sessions] == [str(ws)]


@pytest.mark.anyio
async def test_a_tampered_row_is_skipped_and_the_session_still_loads(tmp_path: Path) -> None:
    """One altered event row does not make the session un-loadable for good (-32603, a traceback)."""
    import sqlite3

    ws = _workspace(tmp_path)
    state = tmp_path / "state"
    first = ProgressAgent(
        turn_runner=AIAgent, settings=fast_settings(state_dir=str(state), embedded_delay=0.05)
    )
    async with inprocess_agent(RecordingClient(), first) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
        assert (await prompt_text(conn, sid, "hello")).stop_reason == "end_turn"
    db = sqlite3.connect(state / DATABASE_NAME)
    seqs = [seq for (seq,) in db.execute("SELECT seq FROM events WHERE session_id = ? ORDER BY seq", (sid,))]
    db.execute("UPDATE events SET body = '{not json' WHERE seq = ?", (seqs[0],))
    db.execute("UPDATE events SET body = '[1, 2]' WHERE seq = ?", (seqs[1],))
    db.commit()
    db.close()
    client = RecordingClient()
    second = ProgressAgent(
        turn_runner=AIAgent, settings=fast_settings(state_dir=str(state), embedded_delay=0.05)
    )
    async with inprocess_agent(client, second) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        users = [u.content.text for u in client.for_session(sid) if isinstance(u, UserMessageChunk)]
        assert users == ["hello"]  # the first turn's two damaged rows are skipped, the rest replays
        assert (await prompt_text(conn, sid, "again")).stop_reason == "end_turn"


@pytest.mark.anyio
async def test_a_huge_prompt_is_kept_once_and_capped(tmp_path: Path) -> None:
    """Each stored text is at most 1 MiB: one 15 MB AG-UI run would otherwise store 75 MB (the
    prompt in the conversation, the history, the open-turn marker and the answer that quoted it)."""
    from acp_adapter.store.turn_entries import STORED_TEXT_CAP

    ws = _workspace(tmp_path)
    state = tmp_path / "state"
    agent = ProgressAgent(turn_runner=AIAgent, settings=fast_settings(state_dir=str(state)))
    # about 6 MiB of prompt, opened by a backquote: the embedded model looks for steps outside
    # quotes only, so reading it is quick; the store keeps the same 6 MiB as of any other text
    huge = "`" + "word " * (3 * STORED_TEXT_CAP // 5 * 2)
    async with inprocess_agent(RecordingClient(), agent) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, huge)).stop_reason == "end_turn"
        assert (await prompt_text(conn, sid, "hello")).stop_reason == "end_turn"
    db_bytes = sum(f.stat().st_size for f in state.iterdir() if f.name.startswith(DATABASE_NAME))
    assert db_bytes < 4 * STORED_TEXT_CAP, db_bytes  # was about 5 copies of the prompt
    from acp_adapter.store import open_store

    store = open_store(state, retention_days=0)
    try:
        stored = store.load(sid)
    finally:
        store.close()
    assert stored is not None
    user = [e for e in stored.events if e.get("sessionUpdate") == "user_message_chunk"]
    assert (
        len(user[0]["content"]["text"]) <= STORED_TEXT_CAP + 100
        and "more characters not kept" in user[0]["content"]["text"]
    )
    assert all(len(str(m.get("content", ""))) <= STORED_TEXT_CAP + 100 for m in stored.history)
    # the second turn stored the history again: the cut prompt kept its own note, not a new one
    first = next(m for m in stored.history if m.get("role") == "user")
    assert first["content"] == user[0]["content"]["text"]


@pytest.mark.anyio
async def test_a_slow_store_delays_an_answer_by_at_most_the_flush_timeout_and_the_turn_still_lands(
    tmp_path: Path,
) -> None:
    """Another process holds the database's write lock for longer than ``[store] flush_timeout``:
    the answer comes once that wait is over (not when the lock goes), and the turn is written
    when the lock goes."""
    import sqlite3
    import threading
    import time

    ws = _workspace(tmp_path)
    state = tmp_path / "state"
    settings = fast_settings(state_dir=str(state), embedded_delay=0.0, store={"flush_timeout": 0.1})
    agent = ProgressAgent(turn_runner=AIAgent, settings=settings)
    async with inprocess_agent(RecordingClient(), agent) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
        holder = sqlite3.connect(state / DATABASE_NAME, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")  # held for less than the busy timeout: the write waits
        committed = threading.Lock()

        def commit() -> None:
            if committed.acquire(blocking=False):  # once: at 1.5 s, or as soon as the answer came
                holder.execute("COMMIT")

        release = threading.Timer(1.5, commit)
        release.start()
        try:
            started = time.monotonic()
            assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
            took = time.monotonic() - started
            answered_while_locked = not committed.locked()  # the lock had not gone yet
        finally:
            release.cancel()
            release.join()
            commit()
            holder.close()
        assert took < 1.2, f"the answer waited {took:.2f} s for the locked store, not the 0.1 s set"
        assert answered_while_locked, "the answer came only once the lock went"
    from acp_adapter.store import open_store

    store = open_store(state, retention_days=0)  # the agent's shutdown wrote what was queued
    try:
        stored = store.load(sid)
    finally:
        store.close()
    assert stored is not None
    asked = [m["content"] for m in stored.history if m["role"] == "user"]
    assert asked == ["what is 1+1", "what is 2+2"]
