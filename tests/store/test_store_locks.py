"""Advisory locks against a real PostgreSQL: held across processes, released by PostgreSQL itself
when the holder dies (kill -9), lost — and said so — when the database restarts."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from acp_adapter.store.locks import AdvisoryLocks, lock_key
from tests.helpers.acp_agent import ROOT

pytest.importorskip("psycopg")

HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from acp_adapter.store.locks import AdvisoryLocks
    locks = AdvisoryLocks(sys.argv[1])
    assert locks.try_lock(sys.argv[2])
    print("held", flush=True)
    time.sleep(120)
    """
)


def test_keys_are_stable_signed_64_bit() -> None:
    assert lock_key("agui:thread") == lock_key("agui:thread") != lock_key("agui:thread2")
    assert -(2**63) <= lock_key("x") < 2**63


@pytest.mark.e2e
def test_a_lock_held_by_a_process_killed_with_sigkill_is_released_by_postgresql(pg_url: str) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(root=str(ROOT)), pg_url, "bridge:bot"],
        stdout=subprocess.PIPE,
        text=True,
    )
    locks = AdvisoryLocks(pg_url)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not locks.try_lock("bridge:bot"), "two processes held one lock"
        assert locks.try_lock("bridge:other")
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        deadline = time.monotonic() + 15
        while not locks.try_lock("bridge:bot"):
            assert time.monotonic() < deadline, "the dead holder's lock was never released"
            time.sleep(0.1)
        assert set(locks.held) == {"bridge:bot", "bridge:other"}
    finally:
        holder.kill()
        holder.wait()
        locks.close()


@pytest.mark.e2e
def test_unlock_counts_takes_and_close_releases_all(pg_url: str) -> None:
    first, second = AdvisoryLocks(pg_url), AdvisoryLocks(pg_url)
    assert first.try_lock("t") and first.try_lock("t")  # re-entrant in one process
    first.unlock("t")
    assert not second.try_lock("t"), "released after one unlock of two takes"
    first.unlock("t")
    assert second.try_lock("t")
    second.close()  # PostgreSQL lets go as the closed connection's backend ends: a moment later
    deadline = time.monotonic() + 5
    while not first.try_lock("t"):
        assert time.monotonic() < deadline, "closing the connection did not release its lock"
        time.sleep(0.02)
    first.close()


@pytest.mark.e2e
def test_a_database_restart_loses_the_locks_and_says_so(pg_server: Any, pg_url: str, caplog: Any) -> None:
    locks = AdvisoryLocks(pg_url)
    assert locks.try_lock("leader") and locks.alive()
    pg_server.stop("fast")
    try:
        assert not locks.alive()
        assert locks.held == {} and locks.losses == 1
        assert "PostgreSQL released them" in caplog.text
    finally:
        pg_server.start()
    assert locks.try_lock("leader")  # reconnects
    locks.close()
