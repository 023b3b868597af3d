"""The PostgreSQL store against a real server (tests/helpers/pg_server.py): what only a shared database
has — migrations raced by many processes, a server that restarts mid-run, one that is not there
at start, a password that must never show. The contract every store keeps is in test_store.py
(parametrized over sqlite, memory and postgres)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.store import BackgroundWriter, PermissionDecision, SessionRecord, StoreError
from acp_adapter.store.base import AuditError, StoreVersionError
from acp_adapter.store.postgres_url import DatabaseUrl, DatabaseUrlError
from tests.helpers.acp_agent import ROOT
from tests.helpers.shared_servers import cli_in_process

pytest.importorskip("psycopg")


def _chunk(text: str) -> dict[str, object]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", *args], env=full, capture_output=True, text=True, timeout=60
    )


def _cli_here(
    *args: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """``acp-progress ARGS`` in this process with ``env`` set, for a command line that stops before
    anything starts (its message is the point; its process is proved by :func:`_cli` once): its
    exit status, stdout and stderr."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    with cli_in_process() as main:
        code = main(list(args))
    shown = capsys.readouterr()
    return code, shown.out, shown.err


def test_the_url_never_shows_its_password() -> None:
    url = DatabaseUrl.parse("postgresql://acp:s3cr%40t-pw@db.example:6543/sessions?sslmode=require")
    assert (url.host, url.port, url.database, url.user, url.password) == (
        "db.example",
        6543,
        "sessions",
        "acp",
        "s3cr@t-pw",
    )
    assert url.where() == "db.example:6543"
    assert url.shown() == "postgresql://acp:[hidden]@db.example:6543/sessions?sslmode=require"
    for text in (repr(url), str(url), url.clean("FATAL: role acp with s3cr@t-pw failed")):
        assert "s3cr" not in text, text
    assert DatabaseUrl.parse("postgres://h/db").port == 5432
    with pytest.raises(DatabaseUrlError) as err:
        DatabaseUrl.parse("mysql://u:hunter2pw@h/db")
    assert "hunter2pw" not in str(err.value) and "[hidden]" in str(err.value)


@pytest.mark.parametrize(
    "url, secret",
    [
        ("postgresql://acp@db.example/acp?password=UrlParamPw77", "UrlParamPw77"),
        ("postgresql://acp@db.example/acp?sslmode=verify-full&sslpassword=KeyPass88", "KeyPass88"),
        ("postgresql://acp:UserInfoPw66@db.example/acp?password=SecondPw55", "SecondPw55"),
        ("postgresql://db.example/acp?application_name=a&api_token=TokenValue44#frag", "TokenValue44"),
        ("postgresql://db.example/acp?PASSWORD=UpperPw33", "UpperPw33"),
    ],
)
def test_every_credential_of_the_url_is_hidden(url: str, secret: str) -> None:
    """A password can ride in a URL parameter (libpq's ``password``, ``sslpassword``) as well as in
    the user part: every way of naming the database hides each of them."""
    parsed = DatabaseUrl.parse(url)
    for text in (parsed.shown(), repr(parsed), str(parsed), parsed.clean(f"FATAL: cannot use {url}")):
        assert secret not in text, text
        assert "[hidden]" in text or text == repr(parsed)
    assert "db.example" in parsed.shown()
    assert "sslmode=verify-full" in DatabaseUrl.parse(url).shown() or "sslmode" not in url


def test_a_password_parameter_is_the_password() -> None:
    url = DatabaseUrl.parse("postgresql://acp@db.example/acp?sslmode=require&password=p%40ss")
    assert url.password == "p@ss"
    assert url.shown() == "postgresql://acp@db.example/acp?sslmode=require&password=[hidden]"


def test_config_hides_a_password_given_as_a_url_parameter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://acp@127.0.0.1:1/acp?password=ParamSecret99&sslpassword=SslSecret98"
    monkeypatch.setenv("ACP_PROGRESS_DATABASE_URL", url)
    for args in (["config"], ["config", "--json"]):
        with cli_in_process() as main:
            capsys.readouterr()
            assert main(args) == 0
            shown = capsys.readouterr()
        assert "ParamSecret99" not in shown.out + shown.err and "SslSecret98" not in shown.out + shown.err
        assert "password=[hidden]" in shown.out


@pytest.mark.e2e
def test_unreachable_at_start_is_one_clear_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve`` as the process an editor starts (its exit status and stderr); ``sessions`` and
    ``audit`` take the same path in this process."""
    from tests.helpers.pg_server import free_port

    port = free_port()  # nothing listens there
    url = f"postgresql://acp:NeverShowMe42@127.0.0.1:{port}/acp"
    done = _cli("serve", env={"ACP_PROGRESS_DATABASE_URL": url})
    said = [(["serve"], done.returncode, done.stdout, done.stderr)]
    for command in (["sessions"], ["audit"]):
        code, out, err = _cli_here(
            *command, env={"ACP_PROGRESS_DATABASE_URL": url}, monkeypatch=monkeypatch, capsys=capsys
        )
        said.append((command, code, out, err))
    for command, code, out, err in said:
        assert code == 2, (command, out, err)
        assert f"127.0.0.1:{port}" in err and "cannot reach the session database" in err
        assert "Traceback" not in err and "NeverShowMe42" not in err + out
        assert len(err.strip().splitlines()) == 1, err


@pytest.mark.e2e
def test_a_wrong_password_is_named_without_the_password(
    pg_server: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_server.url(password="WrongPassword77")
    code, _out, err = _cli_here(
        "sessions", env={"ACP_PROGRESS_DATABASE_URL": url}, monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 2 and "password authentication failed" in err
    assert "WrongPassword77" not in err and "Traceback" not in err


@pytest.mark.e2e
def test_config_shows_where_sessions_go_and_hides_the_password(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    password = DatabaseUrl.parse(pg_url).password
    assert password
    human = _cli("config", env={"ACP_PROGRESS_DATABASE_URL": pg_url})  # the command a user runs
    assert human.returncode == 0, human.stderr
    assert password not in human.stdout + human.stderr
    assert "session store: PostgreSQL postgresql://acp:[hidden]@127.0.0.1:" in human.stdout
    monkeypatch.setenv("ACP_PROGRESS_DATABASE_URL", pg_url)
    with cli_in_process() as main:  # the same report as JSON: no second process needed for it
        capsys.readouterr()
        assert main(["config", "--json"]) == 0
        machine = capsys.readouterr()
    assert password not in machine.out + machine.err
    report = json.loads(machine.out)
    assert report["settings"]["store.url"]["value"] == DatabaseUrl.parse(pg_url).shown()
    assert report["database"] == DatabaseUrl.parse(pg_url).shown()


_OPEN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from acp_adapter.store.postgres import PostgresStore
    PostgresStore(sys.argv[1]).close()
    """
)


@pytest.mark.e2e
def test_ten_processes_starting_at_once_migrate_once(pg_url: str) -> None:
    script = _OPEN.format(root=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-c", script, pg_url], stderr=subprocess.PIPE, text=True)
        for _ in range(10)
    ]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, errors
    import psycopg

    from acp_adapter.store.postgres_schema import SCHEMA, SCHEMA_VERSION

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f"SELECT version FROM {SCHEMA}.schema_migrations ORDER BY version").fetchall()
    assert [v for (v,) in rows] == list(range(1, SCHEMA_VERSION + 1))


@pytest.mark.e2e
def test_a_database_from_a_newer_version_is_refused(pg_url: str) -> None:
    import psycopg

    from acp_adapter.store.postgres import PostgresStore
    from acp_adapter.store.postgres_schema import SCHEMA, SCHEMA_VERSION

    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {SCHEMA}.schema_migrations (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreVersionError, match="newer acp-progress"):
        PostgresStore(pg_url)


@pytest.mark.e2e
def test_a_trigger_planted_on_the_audit_is_refused_by_name(pg_url: str) -> None:
    import psycopg

    from acp_adapter.store.postgres import PostgresStore
    from acp_adapter.store.postgres_schema import SCHEMA

    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION public.hide() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$BEGIN DELETE FROM {SCHEMA}.permissions WHERE id = NEW.id; RETURN NULL; END$$"
        )
        conn.execute(
            f"CREATE TRIGGER silence AFTER INSERT ON {SCHEMA}.permissions "
            "FOR EACH ROW EXECUTE FUNCTION public.hide()"
        )
    with pytest.raises(StoreError, match="trigger 'silence' on permissions"):
        PostgresStore(pg_url)


@pytest.mark.e2e
def test_the_database_restarted_mid_run_loses_no_write_and_says_so(
    pg_server: Any, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from acp_adapter.store.postgres import PostgresStore

    # a batch counts the database as away after 0.2 s without a connection, not the default 1 s:
    # the writer keeps and retries it as it would after any wait
    store = PostgresStore(pg_url, batch_wait=0.2)
    writer = BackgroundWriter(store)
    writer.submit(lambda: store.upsert_session(SessionRecord("s", "/w", None, 1.0, 1.0)))
    for i in range(20):
        writer.submit(lambda i=i: store.append_events("s", [_chunk(str(i))], updated_at=2.0))
    assert writer.flush()
    with caplog.at_level(logging.WARNING, logger="acp_progress.store"):
        pg_server.stop("fast")
        try:
            for i in range(20, 40):  # the run goes on: the writer never blocks its callers
                writer.submit(lambda i=i: store.append_events("s", [_chunk(str(i))], updated_at=3.0))
            deadline = time.monotonic() + 15
            while "kept and retried" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            pg_server.start()
        assert writer.flush(timeout=30)
    loaded = store.load("s")
    assert loaded is not None
    assert [e["content"]["text"] for e in loaded.events] == [str(i) for i in range(40)]  # type: ignore[index]
    assert "kept and retried" in caplog.text and "is back" in caplog.text
    assert DatabaseUrl.parse(pg_url).password not in caplog.text  # type: ignore[operator]
    writer.close()
    store.close()


@pytest.mark.e2e
def test_a_writer_batch_waits_for_a_connection_as_long_as_the_store_is_given(pg_url: str) -> None:
    """``batch_wait`` bounds a batch's wait for a pooled connection (the default waits 1 s before
    the database counts as away)."""
    from acp_adapter.store.postgres import PostgresStore
    from acp_adapter.store.postgres_database import BATCH_CONNECTION_WAIT_S

    for given, expected in (({"batch_wait": 0.25}, 0.25), ({}, BATCH_CONNECTION_WAIT_S)):
        store = PostgresStore(pg_url, **given)
        waits = _batch_waits(store)
        try:
            with store.batch():
                store.put("bridge:wait", "offset", 1)
            assert waits == [expected] and store.get("bridge:wait", "offset") == 1
        finally:
            store.close()


def _batch_waits(store: Any) -> list[float]:
    """The connection waits ``store``'s database batches are opened with, from now on."""
    waits: list[float] = []
    plain_batch = store.database.batch

    def batch(connection_wait: float = -1.0, **rest: Any) -> Any:
        waits.append(connection_wait)
        return plain_batch(connection_wait=connection_wait, **rest)

    store.database.batch = batch
    return waits


@pytest.mark.e2e
def test_the_audit_fails_closed_and_bounded_while_the_database_is_down(pg_server: Any, pg_url: str) -> None:
    from acp_adapter.store.postgres import PostgresStore
    from acp_adapter.store.postgres_tables import AUDIT_WAIT_S

    audit_wait = 0.5  # the default 2 s, shortened: bounded by whatever wait the store is given
    store = PostgresStore(pg_url, audit_wait=audit_wait)
    decision = PermissionDecision(1.0, "s", "t1", "Run ls", True, "terminal", "watch")
    store.record_permission(decision)
    pg_server.stop("fast")
    try:
        began = time.monotonic()
        with pytest.raises(AuditError) as err:
            store.record_permission(decision)
        assert time.monotonic() - began < audit_wait + 6  # one connect timeout at most past the wait
        assert "127.0.0.1" in str(err.value)
        assert DatabaseUrl.parse(pg_url).password not in str(err.value)  # type: ignore[operator]
    finally:
        pg_server.start()
    store.audit.wait = AUDIT_WAIT_S  # the default wait again for the pool to reconnect after the outage
    store.record_permission(decision)  # back: the pool replaced its dead connections
    assert len(store.permission_audit()) == 2
    store.close()


@pytest.mark.e2e
def test_a_read_during_a_short_outage_waits_and_succeeds(pg_server: Any, pg_url: str) -> None:
    from acp_adapter.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    store.put("bridge:x", "offset", 41)
    pg_server.stop("fast")
    restart = threading.Timer(0.7, pg_server.start)
    restart.start()
    try:
        store.put("bridge:x", "offset", 42)  # retried until the server is back
        assert store.get("bridge:x", "offset") == 42
    finally:
        restart.join()
    store.close()


@pytest.mark.e2e
def test_two_stores_on_two_processes_see_each_other(pg_url: str, tmp_path: Path) -> None:
    """The point of the shared store: what one process (machine) writes, another reads at once."""
    from acp_adapter.store.postgres import PostgresStore

    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from acp_adapter.store.postgres import PostgresStore
        from acp_adapter.store import SessionRecord
        store = PostgresStore(sys.argv[1])
        store.upsert_session(SessionRecord("other", "/w", "from elsewhere", 5.0, 5.0))
        store.append_events("other", [{{"sessionUpdate": "agent_message_chunk",
                                        "content": {{"type": "text", "text": "hi"}}}}], 6.0)
        store.close()
        """
    )
    reader = PostgresStore(pg_url)
    assert subprocess.run([sys.executable, "-c", script, pg_url], timeout=60).returncode == 0
    loaded = reader.load("other")
    assert loaded is not None and loaded.record.title == "from elsewhere" and len(loaded.events) == 1
    assert reader.delete("other") and reader.load("other") is None
    reader.close()


def test_a_malformed_url_is_refused_at_start_without_echoing_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"ACP_PROGRESS_DATABASE_URL": "mysql://acp:Hunter2Secret@db/acp"}
    code, out, err = _cli_here("sessions", env=env, monkeypatch=monkeypatch, capsys=capsys)
    assert code == 2 and "postgresql://" in err
    assert "Hunter2Secret" not in err + out and "Traceback" not in err


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_agent_goes_on_across_a_database_restart_and_loses_no_turn(
    pg_server: Any, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """This project's agent (in this process: its store and its log are the point, not its
    process; the restarts run in a thread, so it goes on serving meanwhile): PostgreSQL restarts
    between (and under) its turns; every prompt is answered, the log says the writes waited for
    the database, and every turn is stored."""
    import anyio

    from tests.helpers.acp_agent import RecordingClient, fast_settings, prompt_text
    from tests.helpers.shared_agent import progress_agent, served_inprocess

    # the turn under the outage answers after a 0.5 s flush wait, not the 2 s default; the database
    # stays down until its writes were kept (they still wait for it and land after: what is asserted)
    store = {"url": pg_url, "flush_timeout": 0.5}
    settings = fast_settings(state_dir=str(tmp_path / "state"), store=store, embedded_delay=0.05)
    caplog.set_level(logging.INFO, logger="acp_progress")
    async with served_inprocess(RecordingClient(), progress_agent(settings)) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
        await anyio.to_thread.run_sync(pg_server.stop, "fast")
        try:
            # the turn runs while the database is down: its writes wait (the answer is bounded
            # by the agent's store flush timeout, not by the outage)
            assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
            deadline = time.monotonic() + 15  # down until its writes were kept (a log line: no event)
            while "kept and retried" not in caplog.text and time.monotonic() < deadline:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        finally:
            await anyio.to_thread.run_sync(pg_server.start)
        assert (await prompt_text(conn, sid, "what is 3+3")).stop_reason == "end_turn"
        listed = await conn.list_sessions(cwd=str(tmp_path))
        assert [s.session_id for s in listed.sessions] == [sid]
    log = caplog.text
    assert "kept and retried" in log and "is back" in log, log
    assert (DatabaseUrl.parse(pg_url).password or "") not in log
    from acp_adapter.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    stored = store.load(sid)
    store.close()
    assert stored is not None
    assert [m["content"] for m in stored.history if m["role"] == "user"] == [
        "what is 1+1",
        "what is 2+2",
        "what is 3+3",
    ]


def test_no_password_survives_shown_or_clean_property() -> None:
    """Hypothesis: whatever the password (percent-encoded in the URL as it must be), neither the
    shown URL nor a cleaned error text holding it raw contains it."""
    from urllib.parse import quote

    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    from acp_adapter.safety.redact import REDACTED

    # the redactor's own marker is shown anyway too: a password "[RED" is "found" in "[REDACTED]"
    frame = f"postgresql://acp:[hidden]@db.example:5432/acp FATAL: password authentication failed {REDACTED}"
    shown_anyway = repr(DatabaseUrl.parse("postgresql://acp:@db.example:5432/acp"))

    @settings(max_examples=200, deadline=None)
    @given(st.text(min_size=4, max_size=40).filter(lambda p: p.strip() == p and "\x00" not in p))
    def check(password: str) -> None:
        # a password that is a piece of the text shown anyway ("host", "5432") proves nothing
        assume(password not in frame and password not in shown_anyway)
        url = DatabaseUrl.parse(f"postgresql://acp:{quote(password, safe='')}@db.example:5432/acp")
        assert url.password == password
        assert password not in url.shown() and password not in repr(url)
        assert password not in url.clean(f"FATAL: password {password} was refused; {url.raw}")

    check()
