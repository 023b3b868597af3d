"""``GET /threads/{id}`` right after a run ended shows that run's turn (the page reloaded at once).

The agent writes a turn through its store's writer thread and waits for it — bounded by
``[store] flush_timeout`` — before it answers the prompt; a cancelled turn (the page's Stop: the
client disconnects) is answered without that wait. So a history read at once after
``RUN_FINISHED`` missed the turn whenever the store took longer than the bound (here: another
connection holds the events table of a real PostgreSQL for a while), and a read at once after a
Stop missed the stopped turn. The endpoint now lets a run being cancelled on the thread end and
has its agent flush its pending writes before it reads. At the HTTP level; the endpoint
``acp-progress agui`` builds and this project's agent are served in this process (what the history
holds right after a run is the point, not their processes)."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp import RequestError

from acp_adapter.client.driver import AgentDriver
from acp_adapter.store.sqlite import DATABASE_NAME
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.agui_http import Served, run, run_input
from tests.helpers.agui_inprocess import endpoint_in_process, state_directory, use_in_process_agui_agents
from tests.helpers.agui_process import of_type, sse_events
from tests.helpers.shared_servers import in_process_link_class

pytestmark = pytest.mark.e2e


def _stored_turns(server: Served, thread_id: str) -> tuple[list[str], list[str]]:
    body = httpx.get(f"{server.url}/threads/{thread_id}", timeout=30).json()
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    answers = [m.get("content") or "" for m in body["messages"] if m["role"] == "assistant"]
    return users, answers


def _run(server: Served, thread_id: str, run_id: str, prompt: str) -> list[dict[str, Any]]:
    return run(server.url, run_input(thread_id, prompt, run_id=run_id), timeout=20)


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    """One endpoint on a SQLite state directory for the tests below (each on a thread of its own)."""
    workspace = tmp_path_factory.mktemp("history-race")
    with pytest.MonkeyPatch.context() as patched:
        use_in_process_agui_agents(patched)
        with endpoint_in_process(workspace) as served:
            yield served, state_directory(workspace)


def test_each_finished_run_is_in_the_history_read_at_once_after_it(
    sqlite_server: tuple[Served, Path],
) -> None:
    server, _state = sqlite_server
    for i in range(6):
        events = _run(server, "t-finished", f"r{i}", f"what is {i}+1")
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
        users, answers = _stored_turns(server, "t-finished")
        assert users[-1] == f"what is {i}+1" and f"{i}+1 = {i + 1}" in answers[-1], (i, users, answers)


def test_a_stopped_run_is_in_the_history_read_at_once_after_the_stop(
    sqlite_server: tuple[Served, Path],
) -> None:
    server, state = sqlite_server
    _run(server, "t-stopped", "r0", "what is 1+1")
    body = {
        "threadId": "t-stopped",
        "runId": "r1",
        "messages": [{"id": "m-r1", "role": "user", "content": "wait 5 seconds"}],
    }
    holder = sqlite3.connect(state / DATABASE_NAME, isolation_level=None, check_same_thread=False)
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    try:
        with httpx.stream("POST", server.url + "/", json=body, timeout=20) as response:
            for event in sse_events(response.iter_lines()):
                if event["type"] == "TOOL_CALL_START" and event.get("toolCallName") == "wait":
                    # another process writes to the database for a moment (less than the busy
                    # timeout: the agent's writes wait, none is dropped; WAL readers go on)
                    holder.execute("BEGIN IMMEDIATE")
                    release.start()
                    break  # the page's Stop: the stream is closed mid-run
        users, answers = _stored_turns(server, "t-stopped")
    finally:
        if release.ident is not None:
            release.join()
        holder.close()  # (a transaction still open is rolled back)
    assert users == ["what is 1+1", "wait 5 seconds"], users
    assert answers[-1].endswith("(cancelled)"), answers


def test_a_run_whose_store_was_slow_is_in_the_history_read_at_once_after_run_finished(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    psycopg = pytest.importorskip("psycopg")
    # the agent waits 0.2 s for its writes before it answers (the default 2 s is not the point here)
    env = {"ACP_PROGRESS_DATABASE_URL": pg_url, "ACP_PROGRESS_STORE_FLUSH_TIMEOUT": "0.2"}
    use_in_process_agui_agents(monkeypatch)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with endpoint_in_process(workspace, env=env) as server:
        _run(server, "t", "r0", "what is 1+1")
        # another connection holds the events table for longer than the agent waits for its writes
        # before it answers, and a moment beyond RUN_FINISHED; plain reads go on meanwhile
        holder: Any = psycopg.connect(pg_url, autocommit=False)
        holder.execute("LOCK TABLE acp_progress.events IN EXCLUSIVE MODE")
        release = threading.Timer(0.5, holder.commit)  # half a second past RUN_FINISHED
        try:
            events = _run(server, "t", "r1", "what is 2+2")
            release.start()
            assert of_type(events, "RUN_FINISHED"), events[-1]
            users, answers = _stored_turns(server, "t")
        finally:
            if release.ident is not None:
                release.join()
            else:  # the run failed before the timer started: let the table go
                holder.commit()
            holder.close()
        assert users == ["what is 1+1", "what is 2+2"], users
        assert "2+2 = 4" in answers[-1], answers


# ---------------------------------------------------------------- the flush request itself


@pytest.mark.anyio
async def test_this_agent_flushes_its_store_when_asked_a_foreign_one_is_not_asked(
    tmp_path: Path,
) -> None:
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"))
    driver = AgentDriver([sys.executable, "-m", "acp_adapter"], env=env, cwd=str(tmp_path))
    driver.link.__class__ = in_process_link_class()  # this agent in this process: the request is the point
    async with driver as ours:
        assert ours.sessions.flushes_store
        assert await ours.flush_store(5.0) is True
        with pytest.raises(RequestError):  # any other extension method is unknown
            await ours.connection.ext_method("acpProgress/nope", {})
    from tests.agents.everything_agent import EverythingAgent

    foreign = [sys.executable, str(ROOT / "tests" / "agents" / "everything_agent.py")]
    other = AgentDriver(foreign, env=agent_env(), cwd=str(tmp_path))
    # in this process too: what it says in initialize is the point, not its process
    other.link.__class__ = in_process_link_class(lambda: EverythingAgent(False, 0.0))
    async with other as theirs:
        assert not theirs.sessions.flushes_store  # it never said so in initialize: never sent the request
        assert await theirs.flush_store(5.0) is False
