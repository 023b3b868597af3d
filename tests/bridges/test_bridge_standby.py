"""A bridge and its standby on one PostgreSQL store : real ``bridge run``
processes against the strict fake Bot API. The standby never polls while the leader lives;
``kill -9`` of the leader mid-turn → the standby polls within 15 s from the saved offset, and every
message — those arriving during the failover too — is answered exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from acp_adapter.cli import main
from acp_adapter.frontends.bridges.state import INTERRUPTED
from tests.helpers.acp_agent import ROOT, agent_env

pytestmark = pytest.mark.e2e

pytest.importorskip("psycopg")

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
CHAT = 4242


def _wait_for(path: Path, needle: str, within: float) -> float:
    deadline = time.monotonic() + within
    while needle not in path.read_text(errors="replace"):
        assert time.monotonic() < deadline, (
            f"no {needle!r} in {within} s:\n{path.read_text(errors='replace')}"
        )
        time.sleep(0.05)
    return time.monotonic()


def _leads(url: str, bridge: str) -> bool:
    """Whether some process holds bridge ``bridge``'s leader lock (PostgreSQL's lock table)."""
    import psycopg

    from acp_adapter.store.locks import lock_key

    key = lock_key(f"bridge:{bridge}") & 0xFFFFFFFFFFFFFFFF  # a bigint key: classid high, objid low
    with psycopg.connect(url) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()"
            " AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.objsubid = 1",
            (key >> 32, key & 0xFFFFFFFF),
        ).fetchone()
    return bool(row and row[0])


def test_the_standby_takes_over_a_killed_leader_and_nothing_is_answered_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    pytest.importorskip("telegram")
    from tests.helpers.acp_progress_command import AGENT_INSIDE
    from tests.helpers.fake_telegram import FakeTelegram

    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ACP_PROGRESS_DATABASE_URL", pg_url)
    fake = FakeTelegram(TOKEN).start()
    fake.max_poll_seconds = 0.5  # an empty long poll is held 0.5 s, not 5 s
    create = ["bridge", "create", "tg", "--platform", "telegram", "--chat-id", str(CHAT), "--cwd", str(ROOT)]
    assert main(create) == 0
    env = {
        **os.environ,
        # their agents think 0.05 s a step: the take-over is timed, not the turns
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"),
        "ACP_PROGRESS_SUMMARY": "off",
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "ACP_PROGRESS_TELEGRAM_API_URL": fake.api_url,
        # the standby tries to lead every 0.2 s, not every second: the take-over, not the retry, is timed
        "ACP_PROGRESS_STORE_LEADER_RETRY": "0.2",
    }
    # the bridges' processes are the point (one killed, one taking over); their agents run inside them
    run = [*AGENT_INSIDE, "bridge", "run", "tg"]
    logs = [tmp_path / "leader.log", tmp_path / "standby.log"]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for log in logs:
            with log.open("wb") as err:
                procs.append(subprocess.Popen(run, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err))
            if log is logs[0]:  # the standby starts once the first process leads, beside its start
                deadline = time.monotonic() + 30
                while not _leads(pg_url, "tg"):
                    assert procs[0].poll() is None, logs[0].read_text(errors="replace")
                    assert time.monotonic() < deadline, logs[0].read_text(errors="replace")
                    time.sleep(0.05)
        leader, standby = procs
        fake.wait_until(lambda: bool(fake.calls_of("getUpdates")), within=30)
        _wait_for(logs[1], "standby", within=30)
        fake.user_says(CHAT, "search for TODO")
        fake.wait_until(lambda: any("I searched" in t for t in fake.chat_view(CHAT)), within=30)
        assert "ready" not in logs[1].read_text(), "the standby started polling beside the leader"

        fake.user_says(CHAT, "wait 20 seconds")
        fake.wait_until(lambda: any(t.startswith("⏳ Working on") for t in fake.chat_view(CHAT)), within=20)
        fake.user_says(CHAT, "read README.md")  # accepted by the leader, queued behind the running turn
        read = fake.last_update_id
        fake.wait_until(lambda: fake.taken(read), within=10)  # it took (and stored) the update
        before = len(fake.calls)
        leader.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        leader.wait(10)
        fake.user_says(CHAT, "what is 2+2")  # arrives while nobody polls

        took_over = _wait_for(logs[1], "this process leads now", within=15)
        assert took_over - killed < 15
        fake.wait_until(lambda: any(t.startswith(INTERRUPTED) for t in fake.chat_view(CHAT)), within=30)
        fake.wait_until(lambda: any("README" in t and t.startswith("✅") for t in fake.chat_view(CHAT)), 30)
        fake.wait_until(lambda: any("2+2 = 4" in t for t in fake.chat_view(CHAT)), within=30)
        standby.send_signal(signal.SIGTERM)
        standby.wait(15)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        fake.stop()
    view = fake.chat_view(CHAT)
    assert sum(1 for t in view if "I searched" in t) == 1, view
    assert sum(1 for t in view if "2+2 = 4" in t) == 1, view
    assert sum(1 for t in view if "README" in t and t.startswith("✅")) == 1, view
    assert sum(1 for t in view if "Working on" in t) == 1, view  # the interrupted prompt never ran again
    # the standby polled from the offset the leader saved: the first update it asked for is the
    # one after "read README.md", and "what is 2+2" (sent meanwhile) came with it
    after = fake.calls[before:]
    offsets = [int(c.params.get("offset") or 0) for c in after if c.method == "getUpdates"]
    assert offsets and offsets[0] == 4, offsets
    text = logs[1].read_text(errors="replace")
    assert "Traceback" not in text and pg_url.split("@")[0].split(":")[-1] not in text


def test_bridge_run_leads_with_the_leader_retry_setting(pg_url: str) -> None:
    """``[store] leader_retry`` (ACP_PROGRESS_STORE_LEADER_RETRY) is how often ``bridge run`` tries
    to lead and checks its lock; without it, every second."""
    from acp_adapter.cli.bridge import _wait_to_lead
    from acp_adapter.config import Settings
    from acp_adapter.frontends.bridges.standby import RETRY_S

    env = {"ACP_PROGRESS_DATABASE_URL": pg_url, "ACP_PROGRESS_STORE_LEADER_RETRY": "0.2"}
    leader = _wait_to_lead("retry-setting", Settings.from_env(env, config_file=False))
    assert leader is not None and leader.retry == 0.2
    leader.release()
    del env["ACP_PROGRESS_STORE_LEADER_RETRY"]
    leader = _wait_to_lead("retry-setting", Settings.from_env(env, config_file=False))
    assert leader is not None and leader.retry == RETRY_S == 1.0
    leader.release()


def test_a_standby_waits_while_the_leader_lives(tmp_path: Path, pg_url: str) -> None:
    """In-process: the second Leadership stands by, and takes over once the first lets go."""
    from acp_adapter.frontends.bridges.standby import Leadership

    first, second = Leadership(pg_url, "b"), Leadership(pg_url, "b")
    said: list[str] = []
    first.acquire(said.append)
    assert said == []
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if len(sleeps) == 3:
            first.release()  # PostgreSQL lets go as the backend ends: soon after

    second.acquire(said.append, sleep=sleep)
    assert len(sleeps) >= 3 and "standby" in said[0] and "leads now" in said[1]
    second.release()


@pytest.mark.anyio
async def test_a_leader_that_loses_its_lock_stops(pg_server: object, pg_url: str) -> None:
    """The database restarts under the leader: it can no longer know it is alone, so it stops
    (the CLI then exits 1 for its supervisor) instead of polling beside a new leader."""
    import asyncio

    from acp_adapter.frontends.bridges.standby import Leadership

    leader = Leadership(pg_url, "b", retry=0.05)
    leader.acquire(lambda _text: None)
    stop = asyncio.Event()
    keeper = asyncio.create_task(leader.keep(stop))
    await asyncio.sleep(0.2)
    assert not stop.is_set() and not leader.lost
    pg_server.stop("fast")  # type: ignore[attr-defined]
    try:
        await asyncio.wait_for(stop.wait(), 10)
        assert leader.lost
    finally:
        pg_server.start()  # type: ignore[attr-defined]
        keeper.cancel()
        leader.release()
