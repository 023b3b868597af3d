"""``acp-progress sessions``: a header and a workspace column, every page to the end, and
``sessions delete ID``. The command line runs in the test process (what it prints is the point:
:func:`tests.helpers.cli_inside.run_cli_inside`); the agent it is compared with is reached through
the process ``--agent`` spawns."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.store import SessionRecord, SqliteStore
from tests.helpers.acp_agent import ROOT, fast_settings
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.piped_agent import piped_agent_thread
from tests.helpers.shared_agent import progress_agent


def cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "PYTHONPATH": str(ROOT),
        "ACP_PROGRESS_CONFIG_DIR": os.environ["ACP_PROGRESS_CONFIG_DIR"],
        "ACP_PROGRESS_STATE_DIR": str(state),
        "ACP_PROGRESS_SESSION_RETENTION_DAYS": "0",
    }
    return run_cli_inside(["sessions", *args], cwd=os.getcwd(), env=env)


def seed(state: Path, count: int, cwd: str = "/work/project") -> list[str]:
    state.mkdir(mode=0o700, exist_ok=True)
    store = SqliteStore(state)
    now = time.time()
    ids = [f"sess_{i:06d}" for i in range(count)]
    with store.batch():
        for i, session_id in enumerate(ids):
            store.upsert_session(SessionRecord(session_id, cwd, f"title {i}", now - i, now - i))
    store.close()
    return ids


def test_sessions_has_a_header_and_a_workspace_column(tmp_path: Path) -> None:
    seed(tmp_path / "st", 2, cwd="/work/alpha")
    done = cli(tmp_path / "st")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["SESSION", "UPDATED", "WORKSPACE", "TITLE"]
    assert lines[1].split()[0] == "sess_000000" and "/work/alpha" in lines[1] and lines[1].endswith("title 0")
    assert len(lines) == 3


def test_sessions_pages_to_the_end(tmp_path: Path) -> None:
    """Every page to the end, not a silent stop after 100 pages of 50 (5,000 sessions)."""
    ids = seed(tmp_path / "st", 5_120)
    done = cli(tmp_path / "st", "--json")
    assert done.returncode == 0, done.stderr
    listed = [json.loads(line)["sessionId"] for line in done.stdout.splitlines()]
    assert len(listed) == 5_120 and set(listed) == set(ids)


def test_sessions_delete_removes_for_good_and_an_absent_id_is_no_error(tmp_path: Path) -> None:
    ids = seed(tmp_path / "st", 3)
    done = cli(tmp_path / "st", "delete", ids[0], ids[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"deleted {ids[0]}", f"deleted {ids[2]}"]
    left = cli(tmp_path / "st", "--json")
    assert [json.loads(line)["sessionId"] for line in left.stdout.splitlines()] == [ids[1]]
    # the agent answers a delete of an id it never had with success (as ACP asks), so the
    # command checks the agent's list first: a mistyped id is named, not reported deleted
    missing = cli(tmp_path / "st", "delete", "sess_nope")
    assert missing.returncode == 1 and "no session sess_nope" in missing.stderr, missing.stderr
    assert "deleted" not in missing.stdout and "Traceback" not in missing.stderr
    bare = cli(tmp_path / "st", "delete")
    assert bare.returncode == 2 and "name the session IDs" in bare.stderr


def test_audit_json_gives_iso_8601_times() -> None:
    """ISO 8601, as ``sessions --json`` gives, not epoch seconds."""
    from acp_adapter.store.base import PermissionDecision
    from acp_adapter.store.report import audit_json_lines

    fields = PermissionDecision.__dataclass_fields__
    values = {name: "x" for name in fields}
    values.update(at=1_764_748_800.0, allowed=True)
    row = json.loads(audit_json_lines([PermissionDecision(**values)])[0])
    assert row["at"] == "2025-12-03T08:00:00Z"


@pytest.mark.e2e  # the agent it compares with is reached through a process --agent spawns
def test_the_store_read_lists_what_the_agent_lists(tmp_path: Path) -> None:
    """``sessions`` reads this project's store in-process (so it starts fast); the
    rows must be exactly what the agent's ``session/list`` gives, in both forms, to the command
    that spawned it (the agent, on the same store, served in this process as ``serve`` serves it,
    behind the pipe process ``--agent`` starts: its own process proves nothing here)."""
    seed(tmp_path / "st", 3, cwd="/work/alpha")
    store = SqliteStore(tmp_path / "st")
    store.upsert_session(SessionRecord("sess_untitled", "/work/beta", None, time.time() - 9, time.time() - 9))
    store.close()

    def agent_on_the_store() -> Any:
        return progress_agent(fast_settings(state_dir=str(tmp_path / "st"), session_retention_days=0))

    with piped_agent_thread(agent_on_the_store) as argv:
        agent = shlex.join(argv)
        for extra in ((), ("--json",), ("--cwd", "/work/alpha")):
            if extra[:1] == ("--cwd",):
                (tmp_path / "alpha").mkdir(exist_ok=True)
                extra = ("--cwd", str(tmp_path / "alpha"))
            direct = cli(tmp_path / "st", *extra)
            spawned = cli(tmp_path / "st", *extra, "--agent", agent)
            assert direct.returncode == spawned.returncode == 0, (direct.stderr, spawned.stderr)
            assert direct.stdout == spawned.stdout
            assert direct.stdout or extra[:1] == ("--cwd",)


def test_a_stored_row_is_shaped_as_session_info() -> None:
    from acp.schema import SessionInfo

    from acp_adapter.cli.sessions import StoredRow, session_json

    for title in ("a title", None):
        row = StoredRow("sess_1", "/w", title, "2026-12-03T08:00:00Z")
        info = SessionInfo(session_id="sess_1", cwd="/w", title=title, updated_at="2026-12-03T08:00:00Z")
        assert session_json(row) == session_json(info)
