"""Private state, checked: the session store uses a state directory, database,
``-wal``, ``-shm`` and ``-journal`` only when they are the user's own and private; it creates them
0600 (directories 0700, parents too) whatever the umask; a relative directory is refused;
``secure_delete`` is on. Unit tests on the store, then an agent given a directory another user
prepared (in this process: what it writes and logs is the same in a process of its own), and a
command line given another user's settings file.

The tests run as root: "another user" is made with ``os.chown`` to a uid nobody has.
"""

from __future__ import annotations

import logging
import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_adapter.safety.private_path import UnsafePathError
from acp_adapter.store import (
    DATABASE_NAME,
    AuditError,
    MemoryStore,
    PermissionDecision,
    SqliteStore,
    open_store,
)
from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.fake_openai import FakeOpenAI, text_reply
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.shared_servers import cli_in_process

KEY = "sk-test-victim-0123456789abcdef"

OTHER_UID = 54321


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file another user's needs root (chown)")


def test_files_and_parents_are_created_private_under_umask_000(tmp_path: Path, umask_000: None) -> None:
    where = tmp_path / "a" / "b" / "state"
    store = SqliteStore(where)
    store.put("ns", "k", "v")  # a write: the -wal and -shm exist now
    files = {p.name: _mode(p) for p in where.iterdir()}
    assert files == {DATABASE_NAME: 0o600, f"{DATABASE_NAME}-wal": 0o600, f"{DATABASE_NAME}-shm": 0o600}
    assert [_mode(d) for d in (tmp_path / "a", tmp_path / "a" / "b", where)] == [0o700] * 3
    store.close()


def test_a_relative_state_dir_is_refused() -> None:
    with pytest.raises(UnsafePathError, match="relative path"):
        SqliteStore(Path("relative/dir"))


def test_secure_delete_is_on_and_the_schema_untrusted(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    for db in (store.database._db, store.database._reader):
        assert db.execute("PRAGMA secure_delete").fetchone()[0] == 1
        assert db.execute("PRAGMA trusted_schema").fetchone()[0] == 0
    store.close()


def test_a_world_writable_state_dir_is_refused_not_chmodded(tmp_path: Path) -> None:
    shared = tmp_path / "state"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafePathError, match=rf"{shared} may be written by other users.*chmod go-w"):
        SqliteStore(shared)
    assert _mode(shared) == 0o777 and list(shared.iterdir()) == []


def test_a_state_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    _needs_root()
    theirs = tmp_path / "state"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafePathError, match=f"owned by uid {OTHER_UID}"):
        SqliteStore(theirs)


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
@pytest.mark.parametrize("how", ["0666", "0644", "theirs"])
def test_a_planted_database_file_is_refused_by_name(tmp_path: Path, suffix: str, how: str) -> None:
    planted = tmp_path / f"{DATABASE_NAME}{suffix}"
    planted.write_bytes(b"")
    if how == "theirs":
        _needs_root()
        planted.chmod(0o600)
        os.chown(planted, OTHER_UID, OTHER_UID)
        why = f"owned by uid {OTHER_UID}"
    else:
        planted.chmod(int(how, 8))
        why = "may be (written|read) by other users"
    with pytest.raises(UnsafePathError, match=rf"{planted} (is )?{why}"):
        SqliteStore(tmp_path)
    assert planted.read_bytes() == b""


def test_a_dangling_link_as_the_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / f"{DATABASE_NAME}-wal").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match="a link to a file that does not exist"):
        SqliteStore(tmp_path)
    assert not (tmp_path / "elsewhere").exists()


def test_an_unsafe_state_dir_leaves_the_audit_refusing(tmp_path: Path) -> None:
    shared = tmp_path / "state"
    shared.mkdir()
    shared.chmod(0o777)
    store = open_store(shared)
    assert isinstance(store, MemoryStore)
    with pytest.raises(AuditError, match="chmod go-w"):
        store.record_permission(PermissionDecision(0.0, "s", "c", "Running x", True, "auto", "acp"))


@pytest.mark.anyio
async def test_an_agent_never_writes_into_a_state_dir_another_user_prepared(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The attack: a 0777 state directory holding a 0666 database, both another user's. Nothing is
    written there (ignoring the failed chmod would write the conversation into it), the log names
    the path and the fix, and an allowed command is refused on its card (before it runs: no
    process starts)."""
    _needs_root()
    state, ws = tmp_path / "state", tmp_path / "ws"
    ws.mkdir()
    state.mkdir()
    state.chmod(0o777)
    (state / DATABASE_NAME).write_bytes(b"")
    (state / DATABASE_NAME).chmod(0o666)
    for path in (state, state / DATABASE_NAME):
        os.chown(path, OTHER_UID, OTHER_UID)
    client = RecordingClient()
    caplog.set_level(logging.INFO, logger="acp_progress")
    async with served_inprocess(client, progress_agent(state_dir=str(state))) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, f"run `touch {ws / 'ran'}`")).stop_reason == "end_turn"
    assert sorted(p.name for p in state.iterdir()) == [DATABASE_NAME]
    assert (state / DATABASE_NAME).read_bytes() == b""
    assert f"the state directory {state} is owned by uid {OTHER_UID}" in caplog.text
    (card,) = [ups for ups in client.cards(sid).values() if "touch" in repr(ups[0].title)]
    assert final_status(card) == "failed" and f"owned by uid {OTHER_UID}" in repr(card[-1].content)
    assert not (ws / "ran").exists()


@pytest.mark.anyio
async def test_an_agent_never_writes_into_a_planted_wal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The attack: a 0666 ``-wal`` and ``-shm`` planted beside the user's own database, so another
    user could read the conversation while the agent writes it. They stay empty."""
    state, ws = tmp_path / "state", tmp_path / "ws"
    ws.mkdir()
    SqliteStore(state).close()
    for suffix in ("-wal", "-shm"):
        planted = state / f"{DATABASE_NAME}{suffix}"
        planted.write_bytes(b"")
        planted.chmod(0o666)
    caplog.set_level(logging.INFO, logger="acp_progress")
    async with served_inprocess(RecordingClient(), progress_agent(state_dir=str(state))) as conn:
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "what is 1+1")).stop_reason == "end_turn"
    for suffix in ("-wal", "-shm"):
        assert (state / f"{DATABASE_NAME}{suffix}").read_bytes() == b""
    assert f"{DATABASE_NAME}-wal may be written by other users" in caplog.text


def _run_with_config(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """``acp-progress run hi`` in ``tmp_path`` with the settings file of ``config_dir`` and the
    victim's key in the environment, in this process (``run`` drives its agent in its own process
    anyway: which settings file it obeys is the point, not the process): its exit status and
    stderr."""
    env = agent_env(
        ACP_PROGRESS_CONFIG_DIR=str(config_dir),
        ACP_PROGRESS_MODEL="openai",
        OPENAI_API_KEY=KEY,
        ACP_PROGRESS_OPENAI_MODEL="test-model",
        ACP_PROGRESS_OPENAI_MAX_RETRIES="0",
        ACP_PROGRESS_OPENAI_TIMEOUT="2",
        ACP_PROGRESS_SUMMARY="off",
        ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
    )
    with monkeypatch.context() as scoped:
        for name in [name for name in os.environ if name.startswith("OPENAI")]:
            scoped.delenv(name)
        for name, value in env.items():
            scoped.setenv(name, value)
        scoped.chdir(tmp_path)
        sigint = signal.getsignal(signal.SIGINT)
        capsys.readouterr()
        try:
            with cli_in_process() as main:
                code = main(["run", "hi"])
        finally:
            signal.signal(signal.SIGINT, sigint)  # as the command line set it up for its own process
        return code, capsys.readouterr().err


def test_a_config_in_another_user_s_world_writable_dir_never_gets_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The attack: a ``config.toml`` in someone else's world-writable directory sets ``[openai]
    base_url`` to their server, where the victim's OPENAI_API_KEY must not go. The same file in a
    private directory shows the test can fail: there, the key does go to the configured server."""
    _needs_root()
    with FakeOpenAI(api_key=KEY) as server:
        server.script(text_reply("hello"))
        setting = f'[openai]\nbase_url = "{server.base_url}"\n'
        private = tmp_path / "mine"
        private.mkdir(mode=0o700)
        (private / "config.toml").write_text(setting)
        (private / "config.toml").chmod(0o600)
        code, stderr = _run_with_config(private, tmp_path, monkeypatch, capsys)
        assert code == 0, stderr
        assert len(server.requests) == 1  # the control: a private file is obeyed

        server.requests.clear()
        shared = tmp_path / "shared"
        shared.mkdir()
        (shared / "config.toml").write_text(setting)
        (shared / "config.toml").chmod(0o644)
        shared.chmod(0o777)
        os.chown(shared, OTHER_UID, OTHER_UID)
        code, stderr = _run_with_config(shared, tmp_path, monkeypatch, capsys)
        assert code != 0
        assert server.requests == []
        assert f"the settings file {shared / 'config.toml'} is in {shared}" in stderr
