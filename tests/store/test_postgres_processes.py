"""Every process uses the PostgreSQL store, real processes throughout.

Two "machines" are two state directories that share nothing but the database URL: what
``watch`` does on one, ``sessions``, ``watch --continue`` and ``audit`` see on the other, and
neither writes a SQLite file. Each command line is a process of its own; ``watch`` and
``sessions`` drive their agent inside that process (:mod:`tests.helpers.cli_agent_inside`): a
second process per command would prove nothing more about the shared store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.store.postgres_url import DatabaseUrl
from tests.helpers.acp_agent import agent_env
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE

pytestmark = pytest.mark.e2e

pytest.importorskip("psycopg")


def _run(
    args: list[str], cwd: Path, state: Path, url: str | None, **env: str
) -> subprocess.CompletedProcess[str]:
    extra = {"ACP_PROGRESS_DATABASE_URL": url} if url else {}
    full_env = {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_STATE_DIR=str(state), **extra, **env),
    }
    # audit reads the store and drives no agent: the plain command line, without the agent's imports
    module = "acp_adapter.cli" if args[0] == "audit" else CLI_AGENT_INSIDE
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=90,
    )


def test_watch_sessions_continue_and_audit_share_one_database(tmp_path: Path, pg_url: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    first = _run(["watch", "--yes", "--summary", "off", "run `echo hello`"], work, machine_a, pg_url)
    assert first.returncode == 0, first.stderr

    listed = _run(["sessions", "--cwd", str(work)], work, machine_b, pg_url)
    assert listed.returncode == 0, listed.stderr
    _header, *rows = listed.stdout.splitlines()
    assert len(rows) == 1 and rows[0].endswith("run `echo hello`"), rows
    sid = rows[0].split()[0]

    cont = _run(["watch", "--summary", "off", "--continue", "what is 1+1"], work, machine_b, pg_url)
    assert cont.returncode == 0, cont.stderr
    assert f"── session {sid} ──" in cont.stdout and "1+1 = 2" in cont.stdout

    audit = _run(["audit", "--json"], work, machine_b, pg_url)
    assert audit.returncode == 0, audit.stderr
    rows_json = [json.loads(line) for line in audit.stdout.splitlines()]
    assert [(r["allowed"], r["sessionId"]) for r in rows_json] == [(True, sid)]

    password = DatabaseUrl.parse(pg_url).password or ""
    for done in (first, listed, cont, audit):
        assert password not in done.stdout + done.stderr
    for state in (machine_a, machine_b):
        assert not (state / "sessions.sqlite3").exists(), "a process wrote the SQLite file instead"


def test_the_settings_file_s_store_url_is_used(tmp_path: Path, pg_url: str, pg_server: Any) -> None:
    config = tmp_path / "config"
    config.mkdir(mode=0o700)
    (config / "config.toml").write_text(f'[store]\nurl = "{pg_url}"\n')
    (config / "config.toml").chmod(0o600)
    work = tmp_path / "work"
    work.mkdir()
    done = _run(
        ["watch", "--summary", "off", "what is 2+2"],
        work,
        tmp_path / "a",
        None,
        ACP_PROGRESS_CONFIG_DIR=str(config),
    )
    assert done.returncode == 0, done.stderr
    import psycopg

    with psycopg.connect(pg_url) as db:
        titles = [t for (t,) in db.execute("SELECT title FROM acp_progress.sessions").fetchall()]
    assert titles == ["what is 2+2"]
    assert not (tmp_path / "a" / "sessions.sqlite3").exists()
