"""The session store: SQLite (and its in-memory twin) as the agent and the front-ends use it.

Real files, real second processes: two agents on one state directory, a corrupt database, a
database from a newer version, a secret that must not reach the file's bytes.
"""

from __future__ import annotations

import logging
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.store import (
    DATABASE_NAME,
    SCHEMA_VERSION,
    BackgroundWriter,
    MemoryStore,
    PermissionDecision,
    SessionRecord,
    SessionStore,
    SqliteStore,
    StoreError,
    default_state_dir,
    open_store,
)
from tests.helpers.acp_agent import ROOT

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _record(sid: str, cwd: str = "/w", updated: float = 100.0, title: str | None = None) -> SessionRecord:
    return SessionRecord(sid, cwd, title, created_at=updated, updated_at=updated)


def _chunk(text: str) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


STORE_KINDS = ["sqlite", "memory", "postgres"]


def make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """One store of ``kind``: the contract below holds for every back-end alike."""
    if kind == "sqlite":
        return SqliteStore(tmp_path / "state")
    if kind == "postgres":
        from acp_adapter.store.postgres import PostgresStore

        return PostgresStore(request.getfixturevalue("pg_url"))
    return MemoryStore()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    made = make_store(request.param, request, tmp_path)
    yield made
    made.close()


@pytest.mark.e2e
def test_a_session_keeps_its_events_in_order_and_its_history(store: SessionStore) -> None:
    store.upsert_session(_record("s1", title="fix the tests"))
    store.append_events("s1", [_chunk("one"), _chunk("two")], updated_at=101)
    store.append_events("s1", [_chunk("three")], updated_at=102)
    store.replace_history("s1", [{"role": "user", "content": "hi"}])
    loaded = store.load("s1")
    assert loaded is not None
    assert [e["content"]["text"] for e in loaded.events] == ["one", "two", "three"]  # type: ignore[index]
    assert loaded.history == [{"role": "user", "content": "hi"}]
    assert loaded.record.title == "fix the tests" and loaded.record.updated_at == 102
    assert store.load("nope") is None


@pytest.mark.e2e
def test_list_filters_by_cwd_and_pages_newest_first(store: SessionStore) -> None:
    for i in range(7):
        store.upsert_session(_record(f"s{i}", cwd="/a" if i % 2 else "/b", updated=100 + i))
    page = store.list_sessions(limit=3)
    seen = [r.session_id for r in page.sessions]
    while page.next_cursor is not None:
        page = store.list_sessions(cursor=page.next_cursor, limit=3)
        seen += [r.session_id for r in page.sessions]
    assert seen == [f"s{i}" for i in reversed(range(7))]
    assert [r.session_id for r in store.list_sessions(cwd="/a").sessions] == ["s5", "s3", "s1"]
    with pytest.raises(StoreError, match="invalid cursor"):
        store.list_sessions(cursor="not-a-cursor")


@pytest.mark.e2e
def test_delete_and_retention(store: SessionStore) -> None:
    store.upsert_session(_record("old", updated=10))
    store.upsert_session(_record("new", updated=1000))
    store.append_events("old", [_chunk("x")], updated_at=10)
    assert store.prune(older_than=500) == 1
    assert store.load("old") is None and store.load("new") is not None
    assert store.delete("new") and not store.delete("new")


@pytest.mark.e2e
def test_every_string_is_redacted_before_it_is_stored(store: SessionStore) -> None:
    store.upsert_session(_record("s", title=f"use {SECRET}"))
    store.append_events("s", [_chunk(f"the token is {SECRET}")], updated_at=1)
    store.replace_history("s", [{"role": "tool", "content": f"GITHUB_TOKEN={SECRET}"}])
    store.record_permission(
        PermissionDecision(1, "s", "t", f"Run curl -H 'Authorization: Bearer {SECRET}'", True, "auto", "acp")
    )
    store.put("bridge", "chat", {"note": SECRET})
    loaded = store.load("s")
    assert loaded is not None
    assert SECRET not in repr(loaded) and SECRET not in repr(store.permission_audit())
    assert SECRET not in repr(store.get("bridge", "chat"))


@pytest.mark.e2e
def test_a_secret_never_reaches_the_database_file(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.upsert_session(_record("s"))
    store.append_events("s", [_chunk(f"export GITHUB_TOKEN={SECRET}")], updated_at=1)
    store.close()
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.e2e
def test_permission_audit_newest_first(store: SessionStore) -> None:
    for i in range(3):
        store.record_permission(PermissionDecision(i, "s", f"t{i}", f"Run {i}", i != 1, "terminal", "watch"))
    audit = store.permission_audit(limit=2)
    assert [(d.tool_call_id, d.allowed) for d in audit] == [("t2", True), ("t1", False)]


@pytest.mark.e2e
def test_the_audit_keeps_the_rule_that_answered(store: SessionStore) -> None:
    """Every back-end keeps which session rule answered (``mode auto``, ``always allow …``)."""
    store.record_permission(
        PermissionDecision(1, "s", "t1", "Run ls", True, "rule", "acp", "always allow execute:ls")
    )
    store.record_permission(PermissionDecision(2, "s", "t2", "Run pwd", True, "person", "acp"))
    audit = store.permission_audit(limit=5)
    assert [(d.tool_call_id, d.rule) for d in audit] == [("t2", ""), ("t1", "always allow execute:ls")]


@pytest.mark.e2e
def test_key_value_state(store: SessionStore) -> None:
    store.put("telegram", "offset", 42)
    store.put("telegram", "chat:1", {"session": "s1"})
    store.put("agui", "thread", "s2")
    assert store.get("telegram", "offset") == 42
    assert store.items("telegram") == [("chat:1", {"session": "s1"}), ("offset", 42)]
    store.remove("telegram", "offset")
    assert store.get("telegram", "offset") is None


def test_files_are_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    SqliteStore(state).close()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for path in state.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.e2e
def test_a_corrupt_database_is_moved_aside_and_a_fresh_one_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / DATABASE_NAME).write_bytes(b"this is not a database" * 100)
    (tmp_path / DATABASE_NAME).chmod(0o600)  # private, as the store demands: only its content is bad
    with caplog.at_level(logging.ERROR, logger="acp_progress.store"):
        store = open_store(tmp_path)
    assert isinstance(store, SqliteStore)
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")
    assert any(str(aside[0]) in r.getMessage() for r in caplog.records)
    store.upsert_session(_record("s"))
    assert store.load("s") is not None


@pytest.mark.e2e
def test_a_database_from_a_newer_version_is_refused_with_a_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    SqliteStore(tmp_path).close()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with caplog.at_level(logging.ERROR, logger="acp_progress.store"):
        store = open_store(tmp_path)
    assert isinstance(store, MemoryStore)
    assert "written by a newer acp-progress" in caplog.text
    assert (tmp_path / DATABASE_NAME).exists()  # refused, not moved or overwritten


@pytest.mark.e2e
def test_an_unusable_directory_falls_back_to_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with caplog.at_level(logging.ERROR, logger="acp_progress.store"):
        store = open_store(blocker / "state")
    assert isinstance(store, MemoryStore) and "kept in memory only" in caplog.text


def test_state_off_is_memory_and_the_default_directory_follows_xdg(tmp_path: Path) -> None:
    assert isinstance(open_store(tmp_path, enabled=False), MemoryStore)
    assert default_state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "acp-progress"
    assert default_state_dir({"XDG_STATE_HOME": "relative"}) == Path.home() / ".local/state/acp-progress"


@pytest.mark.e2e
def test_the_background_writer_batches_in_order_and_flushes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    writer = BackgroundWriter(store)
    writer.submit(lambda: store.upsert_session(_record("s")))
    for i in range(300):
        writer.submit(lambda i=i: store.append_events("s", [_chunk(str(i))], updated_at=i))
    assert writer.flush()
    loaded = store.load("s")
    assert loaded is not None and [e["content"]["text"] for e in loaded.events] == [
        str(i) for i in range(300)
    ]  # type: ignore[index]
    writer.close()
    store.close()


@pytest.mark.e2e
def test_a_failing_write_loses_only_itself(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SqliteStore(tmp_path)
    writer = BackgroundWriter(store)

    def explode() -> None:
        raise RuntimeError("disk on fire")

    writer.submit(lambda: store.upsert_session(_record("s")))
    writer.submit(explode)
    writer.submit(lambda: store.append_events("s", [_chunk("kept")], updated_at=2))
    with caplog.at_level(logging.WARNING, logger="acp_progress.store"):
        assert writer.flush()
    loaded = store.load("s")
    assert loaded is not None and len(loaded.events) == 1
    assert "disk on fire" in caplog.text
    writer.close()


_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from acp_adapter.store import SqliteStore, SessionRecord
    store = SqliteStore(Path({state!r}))
    name = sys.argv[1]
    store.upsert_session(SessionRecord(name, "/w", None, time.time(), time.time()))
    for i in range(200):
        store.append_events(name, [{{"sessionUpdate": "agent_message_chunk",
                                     "content": {{"type": "text", "text": str(i)}}}}], time.time())
    store.close()
    """
)


@pytest.mark.e2e
def test_two_processes_write_one_state_directory_at_once(tmp_path: Path) -> None:
    script = _WRITER.format(root=str(ROOT), state=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    store = SqliteStore(tmp_path)
    for name in ("a", "b"):
        loaded = store.load(name)
        assert loaded is not None and [e["content"]["text"] for e in loaded.events] == [
            str(i) for i in range(200)
        ]  # type: ignore[index]
    assert {r.session_id for r in store.list_sessions().sessions} == {"a", "b"}
    assert store.database.read("PRAGMA integrity_check") == [("ok",)]
    store.close()


@pytest.mark.e2e
def test_a_session_written_by_one_process_is_read_by_another_while_open(tmp_path: Path) -> None:
    reader = SqliteStore(tmp_path)
    script = _WRITER.format(root=str(ROOT), state=str(tmp_path))
    assert subprocess.run([sys.executable, "-c", script, "other"], timeout=60).returncode == 0
    loaded = reader.load("other")
    assert loaded is not None and len(loaded.events) == 200
    reader.close()


#: Holds an exclusive lock on the database (a rollback-journal transaction, so even readers wait)
#: until its stdin closes; prints "locked" once it holds it.
HOLD_LOCK = textwrap.dedent(
    """
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode = DELETE")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("UPDATE sessions SET title = title")
    print("locked", flush=True)
    sys.stdin.read()
    if len(sys.argv) > 2:
        time.sleep(float(sys.argv[2]))
    db.execute("COMMIT")
    """
)


def _hold_lock(path: Path, hold_after_stdin: float | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-c", HOLD_LOCK, str(path)]
    if hold_after_stdin is not None:
        args.append(str(hold_after_stdin))
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.e2e
def test_a_locked_database_is_never_moved_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the lock past the busy timeout is not corruption: the agent falls
    back to memory with one error line, and the (healthy, in use) file stays where it is."""
    first = SqliteStore(tmp_path)
    first.upsert_session(_record("kept", title="still here"))
    first.close()
    holder = _hold_lock(tmp_path / DATABASE_NAME)
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            SqliteStore(tmp_path, busy_timeout=0.1)
        monkeypatch.setattr("acp_adapter.store.sqlite_database.BUSY_TIMEOUT_S", 0.1)
        with caplog.at_level(logging.INFO, logger="acp_progress"):
            store = open_store(tmp_path)
        assert isinstance(store, MemoryStore)
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1 and "\n" not in errors[0].getMessage()
        assert "locked" in errors[0].getMessage() and "memory" in errors[0].getMessage()
        assert not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name], "a busy database was moved aside"
    finally:
        holder.communicate("", timeout=10)
    again = SqliteStore(tmp_path)
    loaded = again.load("kept")
    assert loaded is not None and loaded.record.title == "still here"
    again.close()


@pytest.mark.e2e
def test_a_lock_released_within_the_busy_timeout_is_waited_for(tmp_path: Path) -> None:
    SqliteStore(tmp_path).close()
    holder = _hold_lock(tmp_path / DATABASE_NAME, hold_after_stdin=0.5)
    assert holder.stdin is not None
    holder.stdin.close()  # it lets go half a second from now
    try:
        store = SqliteStore(tmp_path, busy_timeout=8.0)
        store.upsert_session(_record("after"))
        assert store.load("after") is not None
        store.close()
    finally:
        holder.wait(10)
    assert not [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]


def test_only_corruption_codes_count_as_corrupt() -> None:
    from acp_adapter.store.sqlite import is_busy, is_corrupt

    def err(code: int, message: str) -> sqlite3.Error:
        exc = sqlite3.DatabaseError(message)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        return exc

    assert is_corrupt(err(sqlite3.SQLITE_CORRUPT, "database disk image is malformed"))
    assert is_corrupt(err(sqlite3.SQLITE_NOTADB, "file is not a database"))
    assert not is_corrupt(err(sqlite3.SQLITE_BUSY, "database is locked"))
    assert is_busy(err(sqlite3.SQLITE_BUSY, "database is locked"))
    assert is_busy(err(sqlite3.SQLITE_LOCKED | (1 << 8), "database table is locked"))
    assert not is_corrupt(err(sqlite3.SQLITE_CANTOPEN, "unable to open database file"))
    assert not is_corrupt(err(sqlite3.SQLITE_IOERR, "disk I/O error"))


@pytest.mark.e2e
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_turn_begun_and_never_ended_is_closed_once_as_interrupted(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """The prompt is on disk as soon as the turn begins; a recorder of a later process (here: one
    that never ran the turn) closes it with a note, in the conversation and the model history."""
    from acp import text_block

    from acp_adapter.store.recorder import INTERRUPTED_NOTE, OPEN_TURNS, ConversationRecorder

    store = make_store(kind, request, tmp_path)
    writer = BackgroundWriter(store)
    first = ConversationRecorder(store, writer)
    first.open_session("s", "/w")
    first.begin_turn("s", "/w", [text_block("what is 1+1")], "what is 1+1")
    first.end_turn("s", [{"role": "user", "content": "what is 1+1"}, {"role": "assistant", "content": "2"}])
    first.begin_turn("s", "/w", [text_block("wait 10 seconds")], "wait 10 seconds")
    writer.flush()
    assert store.get(OPEN_TURNS, "s") is not None
    assert first.close_interrupted("s") is False, "the recorder running that turn leaves it open"

    later = ConversationRecorder(store, writer)  # the next process: it never ran the turn
    assert later.close_interrupted("s") is True
    loaded = store.load("s")
    assert loaded is not None
    kinds = [e["sessionUpdate"] for e in loaded.events]
    assert kinds == ["user_message_chunk", "user_message_chunk", "agent_message_chunk"]
    assert loaded.events[1]["content"]["text"] == "wait 10 seconds"
    assert loaded.events[-1]["content"]["text"] == INTERRUPTED_NOTE
    assert [m["content"] for m in loaded.history] == ["what is 1+1", "2", "wait 10 seconds", INTERRUPTED_NOTE]
    assert store.get(OPEN_TURNS, "s") is None
    assert later.close_interrupted("s") is False  # once
    writer.close()
