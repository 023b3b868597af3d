"""MCP tasks end to end: the agent calls the tools an MCP server runs as tasks as tasks
(tests/mcp_servers/tasks.py, built with the ``mcp`` SDK; server-everything's research task is in
tests/mcp/test_mcp_questions.py, beside its ambiguous twin that asks, both run at once): the
card shows the task's status as it changes, its progress, its result from ``tasks/result``; a
failed task fails the card; a forgotten one says so; ``session/cancel`` sends ``tasks/cancel`` and
the card ends within 2 s. The MCP servers are real processes. One agent in this process serves
the module's tests that need no store of their own (its process proves nothing there), and the
one-turn tests that need nothing of the task server but its tools share one session with it; the
tests where the agent dies mid-task (or the editor hangs up) use an agent process of their own and
the module's HTTP task server, which outlives it; the agent that loads the session after runs in
this process, on the same store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.schema import HttpMcpServer, ToolCallProgress, ToolCallStart

from acp_adapter.agent.session_tasks import FORGOTTEN, SessionTaskLog, stored_records
from acp_adapter.mcp.config import MCP_TASKS
from acp_adapter.mcp.task_calls import TaskRecord
from tests.helpers.acp_agent import (
    RecordingClient,
    agent_env,
    fast_settings,
    final_status,
    prompt_text,
    spawn_agent,
)
from tests.helpers.mcp_kit import http_tasks_server, tasks_server
from tests.helpers.shared_agent import SharedAgent, progress_agent, served_inprocess, shared_agent_inprocess
from tests.helpers.store_backend import Backend
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    # a task server with a task still running may outlive its closed stdin: a short stop grace
    async with shared_agent_inprocess(mcp={"stop_grace": 0.2}) as shared:
        yield shared


@pytest.fixture
def client() -> RecordingClient:
    return RecordingClient()


@pytest.fixture(scope="module")
def jobs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared task session's folder; the task server writes ``cancelled`` there on ``tasks/cancel``."""
    return tmp_path_factory.mktemp("jobs")


@pytest.fixture(scope="module")
async def jobs_session(agent: SharedAgent, jobs_dir: Path) -> str:
    """One session with the task server (stdio, polled every 100 ms) that the module's one-turn
    tests share, each with its own client (:func:`on_jobs`): every task is its own, and what a
    test asserts is its own turn's card, so one server start serves them all."""
    first = RecordingClient()
    server = tasks_server(poll_ms=100, cancelled=jobs_dir / "cancelled")
    return (await agent.new_session(first, jobs_dir, [server])).session_id


def on_jobs(agent: SharedAgent, sid: str, client: RecordingClient) -> str:
    """The shared task session's updates go to ``client`` from now on (this test's turns)."""
    agent.router.clients[sid] = client
    return sid


@pytest.fixture(scope="module")
def tasks_url() -> Iterator[str]:
    """The task server over streamable HTTP, shared by the module's tests where a task outlives
    its agent (each runs tasks of its own, held at a gate of its own)."""
    with http_tasks_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return Backend(request.param, tmp_path, url)


def status_lines(card: list[Any]) -> list[str]:
    return [p["message"] for p in progress_of(card) if str(p.get("message", "")).startswith("task ")]


async def until(check: Any, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("the condition never held")
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------- in one turn


async def test_a_task_s_status_steps_and_progress_show_on_its_card_and_its_result_ends_it(
    jobs_session: str, agent: SharedAgent, client: RecordingClient
) -> None:
    sid = on_jobs(agent, jobs_session, client)
    response = await prompt_text(agent.conn, sid, 'call steps {"steps": 20, "delay": 0.02}')
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert card[0].title.startswith("mcp__jobs__steps")
    lines = status_lines(card)
    steps = [line for line in lines if "step " in line and " of 20" in line]
    # every step's status reached the card (status notifications; the card coalesces nothing here)
    assert len(steps) >= 15, lines
    assert steps[-1] == "task working: step 20 of 20"
    # the task's progress notifications (after the tools/call answer) reach the card too; the
    # card keeps the latest of a burst, so not every one is seen
    values = [p for p in progress_of(card) if "value" in p]
    assert len(values) >= 2 and all(p["total"] == 20 for p in values)
    assert [p["value"] for p in values] == sorted(p["value"] for p in values)
    assert final_status(card) == "completed" and "all 20 steps done" in text_of(card[-1])


async def test_a_task_on_a_server_that_sends_no_status_is_polled_at_its_interval(
    jobs_session: str, agent: SharedAgent, client: RecordingClient
) -> None:
    sid = on_jobs(agent, jobs_session, client)
    ask = 'call steps {"steps": 6, "delay": 0.15, "quiet": true}'
    assert (await prompt_text(agent.conn, sid, ask)).stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    seen = [line for line in status_lines(card) if "step " in line]
    assert len(seen) >= 3, seen  # tasks/get every 100 ms caught most of the 150 ms steps
    assert final_status(card) == "completed" and "all 6 steps done" in text_of(card[-1])


async def test_a_failed_task_fails_its_card_with_the_reason(
    jobs_session: str, agent: SharedAgent, client: RecordingClient
) -> None:
    sid = on_jobs(agent, jobs_session, client)
    await prompt_text(agent.conn, sid, 'call breaks {"steps": 5, "delay": 0.02}')
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed"
    assert "the widget broke at step 2" in text_of(card[-1])


async def test_a_task_the_server_forgets_fails_saying_so(
    jobs_session: str, agent: SharedAgent, client: RecordingClient
) -> None:
    sid = on_jobs(agent, jobs_session, client)
    response = await prompt_text(agent.conn, sid, "call forgets {}")
    assert response.stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed"
    assert "no longer knows this task" in text_of(card[-1])


async def test_a_task_id_too_long_or_not_text_is_refused_and_kept_nowhere(
    jobs_session: str, agent: SharedAgent, client: RecordingClient
) -> None:
    sid = on_jobs(agent, jobs_session, client)
    assert (await prompt_text(agent.conn, sid, "call badid {}")).stop_reason == "end_turn"
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "failed" and "does not keep" in text_of(card[-1])
    assert "xxxxxxxxxx" not in repr(client.for_session(sid))


async def test_session_cancel_sends_tasks_cancel_and_the_card_ends_within_two_seconds(
    jobs_session: str, jobs_dir: Path, agent: SharedAgent, client: RecordingClient
) -> None:
    heard = jobs_dir / "cancelled"
    heard.unlink(missing_ok=True)  # what the server hears from this test's turn on
    sid = on_jobs(agent, jobs_session, client)
    running = asyncio.ensure_future(prompt_text(agent.conn, sid, 'call steps {"steps": 400, "delay": 0.05}'))

    def started() -> bool:
        cards = tool_cards(client, sid)
        return bool(cards) and any("step 3 of" in line for line in status_lines(cards[-1]))

    await until(started)
    asked = time.monotonic()
    await agent.conn.cancel(session_id=sid)
    response = await asyncio.wait_for(running, 10)
    assert response.stop_reason == "cancelled"
    card_id = tool_cards(client, sid)[-1][0].tool_call_id
    ended = [
        r.at
        for r in client.updates
        if isinstance(r.update, ToolCallProgress)
        and r.update.tool_call_id == card_id
        and r.update.status in ("failed", "completed")
    ]
    assert ended and ended[0] - asked < 2.0
    # the server heard tasks/cancel (within the same 2 s): its task is cancelled
    await until(heard.is_file, 2.0)
    assert time.monotonic() - asked < 3.0


# ---------------------------------------------------------------- a task outlives the agent


def _pickup_card(client: RecordingClient, sid: str) -> list[Any]:
    cards = [
        ups
        for cid, ups in client.cards(sid).items()
        if cid.startswith("mcp-task-") and isinstance(ups[0], ToolCallStart)
    ]
    assert cards, "no task card was shown again"
    return cards[-1]


def _recorded(open_store: Callable[[], Any], sid: str) -> bool:
    """Whether the session's task record is in the store yet (it is written off the loop)."""
    store = open_store()
    try:
        return bool(stored_records(store, sid))
    finally:
        store.close()


def _state_store(tmp_path: Path) -> Callable[[], Any]:
    """Opens the SQLite store in ``tmp_path/state`` (the agents' ``ACP_PROGRESS_STATE_DIR``)."""
    from acp_adapter.store import open_store

    return lambda: open_store(tmp_path / "state", retention_days=0)


async def _start_and_kill(
    env: dict[str, str], ws: Path, server: Any, ask: str, how: str, open_store: Callable[[], Any]
) -> tuple[str, RecordingClient]:
    """A session whose turn runs a task; once its record is in the store (``open_store`` opens
    it), the agent is killed (or the editor hangs up) mid-task."""
    client = RecordingClient()
    async with spawn_agent(client, env=env) as (conn, proc, _log):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[server])).session_id
        running = asyncio.ensure_future(prompt_text(conn, sid, ask))

        def stepping() -> bool:
            cards = tool_cards(client, sid)
            return bool(cards) and any("step 3 of" in line for line in status_lines(cards[-1]))

        await until(stepping)
        await until(lambda: _recorded(open_store, sid))
        if how == "kill":
            proc.send_signal(signal.SIGKILL)
            await asyncio.wait_for(proc.wait(), 10)
        # else: leaving the block closes the agent's stdin mid-turn (the editor hangs up)
    running.cancel()
    with contextlib.suppress(BaseException):
        await running
    return sid, client


def _held_steps(gate: Path) -> str:
    """A task of 40 steps held at its third until ``gate`` exists: it still runs whenever the next
    agent loads the session, however slow the machine, and ends soon after the test opens it."""
    args = {"steps": 40, "delay": 0.01, "hold_at": 3, "gate": str(gate)}
    return f"call steps {json.dumps(args)}"


async def _picked_up_and_released(client: RecordingClient, sid: str, gate: Path) -> None:
    """Wait for the task's card to be shown again with its current status, then let the task go on
    and wait for its card to end."""
    await until(lambda: _has_pickup(client, sid) and bool(status_lines(_pickup_card(client, sid))))
    gate.touch()
    await until(lambda: _pickup_ended(client, sid))


async def test_a_task_outlives_a_killed_agent_and_the_next_load_delivers_its_result(
    tmp_path: Path, backend: Backend, tasks_url: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = backend.env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    server = HttpMcpServer(name="jobs", url=tasks_url, headers=[], type="http")
    gate = tmp_path / "gate"
    sid, _ = await _start_and_kill(env, ws, server, _held_steps(gate), "kill", backend.open)
    store = backend.open()
    try:
        (left,) = stored_records(store, sid)
    finally:
        store.close()
    assert left.server == "jobs" and left.tool == "steps"

    client = RecordingClient()
    async with served_inprocess(client, progress_agent(backend.settings(embedded_delay=0.05))) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[server])
        await _picked_up_and_released(client, sid, gate)
        card = _pickup_card(client, sid)
        assert card[0].status == "in_progress" and "picked up again" in card[0].title
        assert any("step" in line for line in status_lines(card)), "its current status is shown"
        assert final_status(card) == "completed" and "all 40 steps done" in text_of(card[-1])
        # the conversation goes on, and the next load replays the finished card: nothing left to pick up
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"

    store = backend.open()
    try:
        assert stored_records(store, sid) == []
    finally:
        store.close()
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(backend.settings(embedded_delay=0.05))) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[server])
        await asyncio.sleep(0.5)
        replayed = [u for u in client.for_session(sid) if isinstance(u, ToolCallStart)]
        done = [u for u in replayed if u.tool_call_id.startswith("mcp-task-")]
        assert len(done) == 1 and done[0].status == "completed"
        assert not [u for u in client.for_session(sid) if isinstance(u, ToolCallProgress)]


def _state_settings(tmp_path: Path) -> Any:
    """The settings of the in-process agent that loads the session the killed one left in
    ``tmp_path/state`` (as its environment gave the killed one)."""
    return fast_settings(state_dir=str(tmp_path / "state"), embedded_delay=0.05)


def _has_pickup(client: RecordingClient, sid: str) -> bool:
    return any(cid.startswith("mcp-task-") for cid in client.cards(sid))


def _pickup_ended(client: RecordingClient, sid: str) -> bool:
    return _has_pickup(client, sid) and final_status(_pickup_card(client, sid)) != "in_progress"


async def test_a_task_outlives_an_editor_that_hung_up(tmp_path: Path, tasks_url: str) -> None:
    """The editor closes the connection mid-task: the turn ends, the task is not cancelled, and the
    next load of the session delivers its result."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"))
    server = HttpMcpServer(name="jobs", url=tasks_url, headers=[], type="http")
    gate = tmp_path / "gate"
    sid, _ = await _start_and_kill(env, ws, server, _held_steps(gate), "hang up", _state_store(tmp_path))
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(_state_settings(tmp_path))) as conn:
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[server])
        await _picked_up_and_released(client, sid, gate)
        card = _pickup_card(client, sid)
        assert final_status(card) == "completed" and "all 40 steps done" in text_of(card[-1])


async def test_a_task_its_server_no_longer_knows_is_said_plainly_on_load(tmp_path: Path) -> None:
    """A stdio server dies with the agent: a load without the server keeps the task on record and
    says so; a resume with it finds that the new server does not know the task, and says so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"))
    server = tasks_server()
    sid, _ = await _start_and_kill(
        env, ws, server, 'call steps {"steps": 200, "delay": 0.05}', "kill", _state_store(tmp_path)
    )
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(_state_settings(tmp_path))) as conn:
        # loaded without its server: the card says so, and the task stays on record
        await conn.load_session(cwd=str(ws), session_id=sid, mcp_servers=[])
        await until(lambda: _pickup_ended(client, sid))
        assert "was not passed this time" in text_of(_pickup_card(client, sid)[-1])
        await asyncio.sleep(0.3)
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(_state_settings(tmp_path))) as conn:
        # resumed with it: the new server does not know the task, and the card says so
        await conn.resume_session(cwd=str(ws), session_id=sid, mcp_servers=[server])
        await until(lambda: _pickup_ended(client, sid))
        card = _pickup_card(client, sid)
        assert FORGOTTEN in text_of(card[-1])


# ---------------------------------------------------------------- the records themselves


async def test_task_records_round_trip_in_both_stores_and_bad_rows_are_skipped(backend: Backend) -> None:
    from acp_adapter.store import BackgroundWriter

    store = backend.open()
    writer = BackgroundWriter(store)
    try:
        log = SessionTaskLog(store, writer, "s1")
        one = TaskRecord("t1", "jobs", "steps", "jobs: steps", 1.0)
        two = TaskRecord("t2", "jobs", "breaks", "jobs: breaks", 2.0)
        log.started(one)
        log.started(two)
        log.ended("t1")
        assert writer.flush(10)
        assert stored_records(store, "s1") == [two]
        store.put(MCP_TASKS, "s2", [{"task_id": "x"}, "junk", {**two.dump(), "at": "soon"}, two.dump()])
        assert stored_records(store, "s2") == [two]
        # a log that has not read the stored records yet writes nothing (it would drop them)
        late = SessionTaskLog(store, writer, "s1", loaded=False)
        late.started(one)
        assert writer.flush(10)
        assert stored_records(store, "s1") == [two]
        late.load(stored_records(store, "s1"))
        assert writer.flush(10)
        assert sorted(r.task_id for r in stored_records(store, "s1")) == ["t1", "t2"]
    finally:
        writer.close()
        store.close()
