"""AG-UI replicas on one PostgreSQL store, real processes throughout: a thread
continues across replicas, runs on one replica at a time (409 elsewhere), and a replica killed
with SIGKILL mid-run leaves the thread to the other within 15 s, its turn recorded as interrupted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.agui_process import AguiProcess, of_type, sse_events

pytestmark = pytest.mark.e2e

pytest.importorskip("psycopg")

HEALTH_CHECK_SECONDS = 0.1
HEALTH_TIMEOUT_SECONDS = 0.5


def _replica(workspace: Path, url: str) -> AguiProcess:
    return AguiProcess(
        workspace,
        "--instance",
        "shared",
        env={
            "ACP_PROGRESS_DATABASE_URL": url,
            # the model thinks 0.01 s a call: a run's length is not what these tests time
            "ACP_PROGRESS_EMBEDDED_DELAY": "0.01",
            # /health's database check: a short interval, so the outage test waits less than 5 s per change
            "ACP_PROGRESS_AGUI_HEALTH_INTERVAL": str(HEALTH_CHECK_SECONDS),
            # and a check of a stopped database gives up after 0.5 s, not 2 s
            "ACP_PROGRESS_AGUI_HEALTH_TIMEOUT": str(HEALTH_TIMEOUT_SECONDS),
        },
    )


def _post(replica: AguiProcess, thread: str, run: str, prompt: str, timeout: float = 30.0) -> httpx.Response:
    body = {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"m-{run}", "role": "user", "content": prompt}],
    }
    return httpx.post(replica.url + "/", json=body, timeout=timeout)


def _stored(url: str, thread: str) -> Any:
    from acp_adapter.frontends.agui.thread_store import NAMESPACE
    from acp_adapter.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        [(_namespace, value)] = [
            (ns, v)
            for (ns,) in _namespaces(url)
            if ns.startswith(NAMESPACE)
            for k, v in store.items(ns)
            if k == thread
        ]
        return store.load(value["sessionId"])
    finally:
        store.close()


def _namespaces(url: str) -> list[tuple[str]]:
    import psycopg

    with psycopg.connect(url) as db:
        return db.execute("SELECT DISTINCT namespace FROM acp_progress.kv").fetchall()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: its children, theirs …)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        kids = [child for child, parent in parents.items() if parent == current]
        found += kids
        frontier += kids
    return found


def _users(stored: Any) -> list[str]:
    return [m["content"] for m in stored.history if m["role"] == "user"]


@pytest.fixture(scope="module")
def replica_db(pg_server: Any) -> Any:
    """One database for the module's replicas (each test uses thread ids of its own)."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url)


@pytest.fixture(scope="module")
def replica_pair(tmp_path_factory: pytest.TempPathFactory, replica_db: str) -> Any:
    """Two replicas shared by the module's tests: starting them (two endpoints, two agents) is
    most of what a test here costs. A test that kills one gets it replaced for the next (the
    module's one such test comes last, so none is)."""
    workspace = tmp_path_factory.mktemp("replicas")
    made: list[AguiProcess] = []
    try:
        yield workspace, made
    finally:
        for replica in made:
            if replica.process.poll() is None:
                replica.stop(signal.SIGTERM, within=30)


@pytest.fixture
def replicas(replica_pair: Any, replica_db: str) -> list[AguiProcess]:
    workspace, made = replica_pair
    if not made:
        made += [_replica(workspace, replica_db), _replica(workspace, replica_db)]
    for i, replica in enumerate(made):
        if replica.process.poll() is not None:  # killed by an earlier test
            made[i] = _replica(workspace, replica_db)
    for replica in made:
        replica.wait_healthy(within=90)  # two agents starting on a loaded machine
    return made


def test_a_thread_continues_across_replicas_in_both_directions(
    replicas: list[AguiProcess], replica_db: str, pg_server: Any
) -> None:
    pg_url = replica_db
    a, b = replicas
    for replica, run, prompt in (
        (a, "r1", "what is 2+2"),
        (b, "r2", "what is 3+3"),
        (a, "r3", "what is 4+4"),
    ):
        response = _post(replica, "T", run, prompt)
        assert response.status_code == 200, response.text
        events = list(sse_events(iter(response.text.splitlines())))
        assert of_type(events, "RUN_FINISHED"), events
    stored = _stored(pg_url, "T")
    # the model history each replica went on with held every turn, whichever replica ran it
    assert _users(stored) == ["what is 2+2", "what is 3+3", "what is 4+4"]
    assert httpx.get(a.url + "/health").json()["database"] == "reachable"
    pg_server.stop("fast")  # /health says so at its next check, and again when it is back
    try:
        _wait_health(a, "unreachable")
    finally:
        pg_server.start()
    _wait_health(a, "reachable")


def _wait_health(replica: AguiProcess, state: str, within: float = 15.0) -> None:
    deadline = time.monotonic() + within
    while (seen := httpx.get(replica.url + "/health").json().get("database")) != state:
        assert time.monotonic() < deadline, f"/health says the database is {seen}, not {state}"
        time.sleep(0.05)


@pytest.mark.anyio
async def test_the_database_is_checked_at_the_interval_the_settings_give(pg_url: str) -> None:
    """``health_interval`` paces the checks behind ``/health`` (the default waits 5 s between two)."""
    import anyio

    from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks
    from acp_adapter.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    locks = ReplicaThreadLocks(pg_url, store, "s", health_interval=0.01)
    checks: list[bool] = []
    plain_check = locks.check

    three_in = threading.Event()

    def counted_check() -> bool:
        checks.append(plain_check())
        if len(checks) >= 3:
            three_in.set()
        return checks[-1]

    locks.check = counted_check  # type: ignore[method-assign]
    try:
        async with anyio.create_task_group() as watching:
            watching.start_soon(locks.watch)
            # up to 1.5 s (the default interval checks once in that time), over once three are in
            await anyio.to_thread.run_sync(three_in.wait, 1.5)
            watching.cancel_scope.cancel()
        assert len(checks) >= 3 and all(checks), checks
        assert locks.database_ok is True
    finally:
        locks.close()
        store.close()


def test_a_check_waits_for_the_database_as_long_as_the_settings_give(pg_url: str) -> None:
    """``health_timeout`` bounds one check (the default waits 2 s for a database that is gone)."""
    from acp_adapter.config import AguiSettings
    from acp_adapter.frontends.agui.replicas import HEALTH_TIMEOUT, ReplicaThreadLocks

    class Store:
        def __init__(self) -> None:
            self.waits: list[float] = []

        def ping(self, timeout: float = HEALTH_TIMEOUT) -> bool:
            self.waits.append(timeout)
            return True

    store = Store()
    assert AguiSettings(health_timeout=0.25).health_timeout == 0.25
    locks = ReplicaThreadLocks(pg_url, store, "s", health_timeout=0.25)
    try:
        assert locks.check() is True and store.waits == [0.25]
    finally:
        locks.close()
    default = ReplicaThreadLocks(pg_url, store, "s")
    try:
        assert default.check() is True and store.waits == [0.25, HEALTH_TIMEOUT]
    finally:
        default.close()


def test_claims_say_who_holds_a_thread_and_whose_copy_is_stale(pg_url: str) -> None:
    """In-process, two replicas' lock halves on one store: a held thread is refused elsewhere,
    and a replica learns when another ran the thread since it last did."""
    from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks
    from acp_adapter.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    a, b = ReplicaThreadLocks(pg_url, store, "s"), ReplicaThreadLocks(pg_url, store, "s")
    other_scope = ReplicaThreadLocks(pg_url, store, "elsewhere")
    try:
        assert a.claim("T") is False  # never run: nothing stale
        assert b.claim("T") is None  # A runs it
        assert other_scope.claim("T") is False  # another endpoint's thread T is another thread
        other_scope.release("T")
        a.release("T")
        assert b.claim("T") is True  # A ran it last: B's copy (if any) is stale
        b.release("T")
        assert b.claim("T") is False  # B ran it last itself
        b.release("T")
        store.put(a.namespace, "old", {"replica": "gone", "at": 1.0})
        assert a.prune(30) == 1 and store.get(a.namespace, "old") is None
        assert store.get(a.namespace, "T") is not None
    finally:
        for locks in (a, b, other_scope):
            locks.close()
        store.close()


@pytest.mark.anyio
async def test_the_thread_lock_goes_before_the_run_s_last_event(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However slow the database is to take the lock back, the run's RUN_FINISHED is written only
    after it did: the other replica can claim the thread the moment the event is read. (The agent
    answers in this process: the order of the lock and the event is the point, not its process.)"""
    import json
    import sys

    from acp_adapter.frontends.agui.endpoint import AguiOptions
    from acp_adapter.frontends.agui.policy import default_policy
    from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks
    from acp_adapter.frontends.agui.request import parse_run_request
    from acp_adapter.frontends.agui.service import AguiService
    from acp_adapter.store.postgres import PostgresStore
    from tests.agents.agui_everything_agent import EverythingAgent
    from tests.helpers.acp_agent import ROOT
    from tests.helpers.agui_inprocess import use_in_process_test_agent

    class SlowDatabase(ReplicaThreadLocks):
        def release(self, thread_id: str, flush: Any = None) -> None:
            time.sleep(0.3)
            super().release(thread_id, flush)

    store = PostgresStore(pg_url)
    agent = [sys.executable, str(ROOT / "tests" / "agents" / "agui_everything_agent.py")]
    use_in_process_test_agent(monkeypatch, agent, EverythingAgent)
    service = AguiService(
        AguiOptions(agent_command=agent, cwd=str(tmp_path), policy=default_policy, tool_progress=False)
    )
    service.thread_locks = SlowDatabase(pg_url, store, "s")
    other_replica = ReplicaThreadLocks(pg_url, store, "s")
    try:
        await service.start()
        body = {"threadId": "T", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
        active = await service.open_run(parse_run_request(json.dumps(body).encode(), False))
        async for event in active.context.emitter.events():
            if event.type in ("RUN_FINISHED", "RUN_ERROR"):
                claimed = other_replica.claim("T")
                assert claimed is not None, "the thread was still held when its run said it finished"
                other_replica.release("T")
    finally:
        await service.close()
        other_replica.close()
        store.close()


def test_a_thread_is_free_at_every_replica_when_its_run_says_it_finished(
    replicas: list[AguiProcess],
) -> None:
    """A client that reads RUN_FINISHED for thread T at one replica and at that moment posts T's
    next run to the other never gets 409: the lock went before the run's last event was sent."""
    a, b = replicas
    refused: list[str] = []
    for turn in range(12):
        here, there = (a, b) if turn % 2 == 0 else (b, a)
        body = {
            "threadId": "ping-pong",
            "runId": f"pp-{turn}",
            "messages": [{"id": f"m-pp-{turn}", "role": "user", "content": f"what is {turn}+1"}],
        }
        with httpx.stream("POST", here.url + "/", json=body, timeout=30) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if '"RUN_FINISHED"' in line or '"RUN_ERROR"' in line:
                    break  # the next run goes out now, before this stream is even closed
        following = {
            "threadId": "ping-pong",
            "runId": f"pp-{turn}-next",
            "messages": [{"id": f"m-pp-{turn}-n", "role": "user", "content": "what is 1+1"}],
        }
        answer = httpx.post(there.url + "/", json=following, timeout=30)
        if answer.status_code != 200:
            refused.append(f"turn {turn}: {answer.status_code} {answer.text}")
    assert refused == []


def test_a_busy_thread_is_409_at_the_other_replica_and_a_killed_replica_s_thread_moves(
    replicas: list[AguiProcess], replica_db: str
) -> None:
    pg_url = replica_db
    from acp_adapter.store.recorder import INTERRUPTED_NOTE

    a, b = replicas
    assert _post(a, "busy-T", "r1", "what is 2+2").status_code == 200
    started = threading.Event()

    def long_run() -> None:
        body = {
            "threadId": "busy-T",
            "runId": "r2",
            "messages": [{"id": "m-r2", "role": "user", "content": "wait 10 seconds"}],
        }
        try:
            with httpx.stream("POST", a.url + "/", json=body, timeout=30) as response:
                for line in response.iter_lines():
                    if '"TOOL_CALL_START"' in line:
                        started.set()
        except httpx.HTTPError:
            pass  # the replica was killed under it

    runner = threading.Thread(target=long_run, daemon=True)
    runner.start()
    assert started.wait(20), a.text()

    busy = _post(b, "busy-T", "r3", "what is 3+3")
    assert busy.status_code == 409, busy.text
    assert "another replica" in busy.json()["detail"]
    assert _post(b, "other", "r4", "what is 1+1").status_code == 200  # other threads run meanwhile

    # the replica's machine goes down: the endpoint and its agent die at once (SIGKILL, no goodbye)
    doomed = [a.process.pid, *_descendants(a.process.pid)]
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    a.process.wait(10)
    while True:
        response = _post(b, "busy-T", f"r5-{time.monotonic_ns()}", "what is 3+3")
        if response.status_code == 200:
            break
        assert response.status_code == 409, response.text
        assert time.monotonic() - killed < 15, "the thread never ran elsewhere"
        time.sleep(0.2)
    assert time.monotonic() - killed < 15
    events = list(sse_events(iter(response.text.splitlines())))
    assert of_type(events, "RUN_FINISHED") and "3+3 = 6" in "".join(
        e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT")
    )
    runner.join(5)
    stored = _stored(pg_url, "busy-T")
    assert _users(stored) == ["what is 2+2", "wait 10 seconds", "what is 3+3"], (stored.events, b.text())
    texts = [e["content"]["text"] for e in stored.events if e.get("sessionUpdate") == "agent_message_chunk"]
    assert texts.count(INTERRUPTED_NOTE) == 1, texts
