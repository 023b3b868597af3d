"""The audit fails closed: an allowed call runs only once its audit row is on
disk; a full disk, a lock another process holds, a trigger that raises or deletes the row — the
call is refused with the reason on its card, and the turn goes on. The schema is checked at open.

Unit tests on the store, then agents: a real agent process whose database another process holds
with ``BEGIN EXCLUSIVE``; an agent in this process (the same ProgressAgent over the SDK's in-memory
transports: the audit's decision does not depend on the agent's process) whose database carries a
planted trigger, and one on a full disk.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_adapter.store import (
    DATABASE_NAME,
    AuditError,
    MemoryStore,
    PermissionDecision,
    SqliteStore,
    StoreSchemaError,
    open_store,
)
from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.shared_agent import progress_agent, served_inprocess


def _decision(n: int = 1) -> PermissionDecision:
    return PermissionDecision(time.time(), "s1", f"call-{n}", "Running touch x", True, "terminal", "watch")


def _fresh_store(directory: Path) -> None:
    SqliteStore(directory).close()


def _plant(directory: Path, sql: str) -> None:
    db = sqlite3.connect(directory / DATABASE_NAME, isolation_level=None)
    try:
        db.execute(sql)
    finally:
        db.close()


# ---------------------------------------------------------------------- the store, in process


def test_a_written_row_is_read_back(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.record_permission(_decision())
    assert [d.tool_call_id for d in store.permission_audit()] == ["call-1"]
    store.close()


@pytest.mark.parametrize(
    ("trigger", "why"),
    [
        ("BEGIN DELETE FROM permissions WHERE id = new.id; END", "removed"),
        ("BEGIN UPDATE permissions SET title = 'harmless' WHERE id = new.id; END", "changed"),
        ("BEGIN SELECT RAISE(ABORT, 'no audit today'); END", "no audit today"),
    ],
)
def test_a_trigger_planted_after_open_refuses_the_audit(tmp_path: Path, trigger: str, why: str) -> None:
    store = SqliteStore(tmp_path)
    _plant(tmp_path, f"CREATE TRIGGER hush AFTER INSERT ON permissions {trigger}")
    with pytest.raises(AuditError, match=why):
        store.record_permission(_decision())
    store.close()


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            "CREATE TRIGGER hush AFTER INSERT ON permissions BEGIN DELETE FROM permissions; END",
            "trigger 'hush'",
        ),
        ("CREATE VIEW peek AS SELECT * FROM sessions", "view 'peek'"),
        ("CREATE TABLE extra (x)", "table 'extra'"),
    ],
)
def test_a_planted_object_is_refused_at_open_by_name(tmp_path: Path, sql: str, named: str) -> None:
    _fresh_store(tmp_path)
    _plant(tmp_path, sql)
    with pytest.raises(StoreSchemaError, match=named):
        SqliteStore(tmp_path)
    fallback = open_store(tmp_path)  # the agent keeps working; the audit does not pretend
    assert isinstance(fallback, MemoryStore)
    with pytest.raises(AuditError, match=named):
        fallback.record_permission(_decision())


def test_a_changed_table_is_refused_at_open(tmp_path: Path) -> None:
    _fresh_store(tmp_path)
    _plant(tmp_path, "ALTER TABLE permissions ADD COLUMN note TEXT DEFAULT 'x'")
    with pytest.raises(StoreSchemaError, match=r"table 'permissions' \(changed\)"):
        SqliteStore(tmp_path)


def test_statistics_tables_are_fine(tmp_path: Path) -> None:
    _fresh_store(tmp_path)
    _plant(tmp_path, "ANALYZE")
    SqliteStore(tmp_path).close()


def test_a_full_database_refuses_the_audit(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    pages = store.database._db.execute("PRAGMA page_count").fetchone()[0]
    store.database._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL, as on a full disk
    with pytest.raises(AuditError, match="full"):
        for n in range(200):  # the first page's free space may hold a few rows
            store.record_permission(_decision(n))
    store.close()


@contextlib.contextmanager
def _held(database: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``BEGIN EXCLUSIVE`` on ``database`` until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            f"db = sqlite3.connect({str(database)!r}, isolation_level=None)\n"
            "db.execute('BEGIN EXCLUSIVE')\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)


@pytest.mark.e2e
def test_a_lock_held_by_another_process_refuses_the_audit_within_the_busy_timeout(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path, busy_timeout=0.5)
    with _held(tmp_path / DATABASE_NAME):
        started = time.monotonic()
        with pytest.raises(AuditError, match="locked by another process"):
            store.record_permission(_decision())
        took = time.monotonic() - started
        assert 0.4 < took < 1.5
        # reads go on meanwhile (WAL readers never wait for a writer)
        assert store.list_sessions().sessions == []
    store.record_permission(_decision(2))  # the lock is gone: the audit works again
    assert [d.tool_call_id for d in store.permission_audit()] == ["call-2"]
    store.close()


@pytest.mark.e2e
def test_a_database_locked_at_open_still_opens_and_the_audit_refuses(tmp_path: Path) -> None:
    _fresh_store(tmp_path)
    with _held(tmp_path / DATABASE_NAME):
        started = time.monotonic()
        store = open_store(tmp_path)  # pruning too: housekeeping waits 0.2 s at most
        assert time.monotonic() - started < 1.0
        assert isinstance(store, SqliteStore)
        store.database.busy_timeout = 0.3
        with pytest.raises(AuditError):
            store.record_permission(_decision())
        store.close()


# ---------------------------------------------------------------------- real agent processes


def _run_card(client: RecordingClient, sid: str) -> tuple[str | None, str]:
    """The ``touch`` card's final status and everything it said."""
    cards = [ups for ups in client.cards(sid).values() if "touch" in repr(ups[0].title)]
    assert len(cards) == 1, client.cards(sid)
    (ups,) = cards
    return final_status(ups), repr([u.content for u in ups])


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_agent_refuses_an_allowed_command_while_another_process_holds_the_database(
    tmp_path: Path,
) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    ws.mkdir()
    _fresh_store(state)
    client = RecordingClient()
    # the holder is the other process (the point); the agent is served in this one, on a store
    # whose busy timeout is 0.5 s instead of the 2 s default (what is waited for is the same)
    store = SqliteStore(state, busy_timeout=0.5)
    async with served_inprocess(client, progress_agent(state_dir=str(state), store=store)) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        with _held(state / DATABASE_NAME):
            result = await prompt_text(conn, sid, f"run `touch {ws / 'ran'}`")
            assert result.stop_reason == "end_turn"  # the turn goes on
            started = time.monotonic()
            listed = await conn.list_sessions(cwd=str(ws))  # answers under the lock
            listing_took = time.monotonic() - started
        status, said = _run_card(client, sid)
        assert status == "failed"
        assert "Refused, nothing ran: the audit could not record" in said
        assert not (ws / "ran").exists()
        assert listing_took < 2.5 and listed is not None
        # from the question to the refusal: the busy timeout and a little, never 30 s
        card = next(cid for cid, ups in client.cards(sid).items() if "touch" in repr(ups[0].title))
        times = {
            u.update.status: u.at for u in client.updates if getattr(u.update, "tool_call_id", None) == card
        }
        assert times["failed"] - times["pending"] < 4.5, times


@pytest.mark.anyio
async def test_an_agent_refuses_to_audit_into_a_database_with_a_planted_trigger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state, ws = tmp_path / "state", tmp_path / "ws"
    ws.mkdir()
    _fresh_store(state)
    _plant(state, "CREATE TRIGGER hush AFTER INSERT ON permissions BEGIN DELETE FROM permissions; END")
    client = RecordingClient()
    caplog.set_level("WARNING", logger="acp_progress")
    async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, f"run `touch {ws / 'ran'}`")).stop_reason == "end_turn"
        status, said = _run_card(client, sid)
    assert status == "failed" and "trigger 'hush'" in said
    assert not (ws / "ran").exists()
    assert "trigger 'hush'" in caplog.text  # the agent's log says why too


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_agent_on_a_full_disk_refuses_the_allowed_command(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(  # noqa: ASYNC221 - a one-off set-up before the agent starts
        ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(disk)], check=False
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        state, ws = disk / "state", tmp_path / "ws"
        ws.mkdir()
        _fresh_store(state)
        filler = disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb", buffering=0) as out:
            while True:  # until the disk is full
                out.write(b"\0" * 4096)
        client = RecordingClient()
        async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
            sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
            assert (await prompt_text(conn, sid, f"run `touch {ws / 'ran'}`")).stop_reason == "end_turn"
            status, said = _run_card(client, sid)
        assert status == "failed" and "the audit could not record" in said
        assert not (ws / "ran").exists()
    finally:
        subprocess.run(["umount", str(disk)], check=False)  # noqa: ASYNC221
