"""Idle sessions are freed: a configurable cap and idle time, a clear error for
a prompt to a freed session, and never a session whose prompt is running."""

from __future__ import annotations

import time
from typing import Any

import pytest
from acp import RequestError

from acp_adapter.agent.session import LiveSessions
from acp_adapter.config import ConfigError, Settings
from acp_adapter.server import ProgressAgent
from run_agent import AIAgent
from tests.helpers.acp_agent import RecordingClient, fast_settings, inprocess_agent, prompt_text


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class NullOutbox:
    def submit(self, session_id: str, update: Any) -> None:
        pass


class SkippingClock:
    """The real monotonic clock plus the idle time a test skips, so no test sleeps it out."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped


def _idle_skipped(agent: ProgressAgent) -> SkippingClock:
    """The agent's sessions timed by a clock the test can move past their idle timeout."""
    clock = SkippingClock()
    agent.sessions._clock = clock  # the sessions' only time source
    return clock


def _store(**kwargs: Any) -> tuple[LiveSessions, Clock]:
    clock = Clock()
    return LiveSessions(clock=clock, **kwargs), clock


def test_sessions_idle_longer_than_the_timeout_are_freed_with_a_clear_error():
    store, clock = _store(idle_timeout=60)
    old = store.create("/w", NullOutbox())  # type: ignore[arg-type]
    clock.now += 30
    used = store.create("/w", NullOutbox())  # type: ignore[arg-type]
    clock.now += 31  # old: 61 s unused, used: 31 s
    store.get(used.id)
    assert store.find(old.id) is None and len(store) == 1
    with pytest.raises(RequestError) as err:
        store.get(old.id)
    assert err.value.code == -32602
    assert "freed" in str(err.value.data) and "session/new" in str(err.value.data)
    with pytest.raises(RequestError) as unknown:
        store.get("sess_never_existed")
    assert "unknown session id" in str(unknown.value.data)


def test_a_session_with_a_running_prompt_is_never_freed():
    store, clock = _store(idle_timeout=60, max_sessions=1)
    busy = store.create("/w", NullOutbox())  # type: ignore[arg-type]
    busy.begin_turn()
    clock.now += 3600
    assert store.get(busy.id) is busy and len(store) == 1  # get() frees idle sessions first
    with pytest.raises(RequestError) as err:
        store.create("/w", NullOutbox())  # type: ignore[arg-type]
    assert "ACP_PROGRESS_MAX_SESSIONS=1" in str(err.value.data)
    busy.finish_turn([])
    store.touch(busy.id)
    assert store.create("/w", NullOutbox())  # type: ignore[arg-type]  # now busy can be freed
    assert store.find(busy.id) is None


def test_beyond_the_cap_the_least_recently_used_session_is_freed():
    store, clock = _store(max_sessions=3)
    a, b, c = (store.create("/w", NullOutbox()) for _ in range(3))  # type: ignore[arg-type]
    clock.now += 1
    store.get(a.id)  # a is now the most recently used
    d = store.create("/w", NullOutbox())  # type: ignore[arg-type]
    assert [s.id for s in store.all()] == [c.id, a.id, d.id]
    with pytest.raises(RequestError) as err:
        store.get(b.id)
    assert "at most 3 sessions" in str(err.value.data)


def test_settings_name_the_variables():
    settings = Settings.from_env(
        {"ACP_PROGRESS_MAX_SESSIONS": "7", "ACP_PROGRESS_SESSION_IDLE_TIMEOUT": "90"}
    )
    assert settings.max_sessions == 7 and settings.session_idle_timeout == 90
    with pytest.raises(ConfigError, match="ACP_PROGRESS_MAX_SESSIONS"):
        Settings.from_env({"ACP_PROGRESS_MAX_SESSIONS": "0"})
    with pytest.raises(ConfigError, match="ACP_PROGRESS_SESSION_IDLE_TIMEOUT"):
        Settings.from_env({"ACP_PROGRESS_SESSION_IDLE_TIMEOUT": "soon"})


@pytest.mark.anyio
async def test_the_agent_frees_idle_sessions_and_brings_one_back_from_the_store(tmp_path):
    agent = ProgressAgent(
        turn_runner=AIAgent,
        settings=fast_settings(max_sessions=2, session_idle_timeout=0.3, embedded_delay=0.05),
    )
    clock = _idle_skipped(agent)
    client = RecordingClient()
    async with inprocess_agent(client, agent) as conn:
        first = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, first, "what is 1+1")).stop_reason == "end_turn"
        clock.skipped += 0.4
        second = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert agent.sessions.find(first) is None  # freed for idleness …
        assert (await prompt_text(conn, first, "what is 2+2")).stop_reason == "end_turn"  # … and back
        assert [m.content for m in agent.sessions.get(first).history if m.role == "user"] == [
            "what is 1+1",
            "what is 2+2",
        ]
        assert (await prompt_text(conn, second, "what is 2+2")).stop_reason == "end_turn"
        for _ in range(5):
            await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert len(agent.sessions) == 2


@pytest.mark.anyio
async def test_with_state_off_a_freed_session_gets_a_clear_error(tmp_path):
    agent = ProgressAgent(
        turn_runner=AIAgent,
        settings=fast_settings(max_sessions=2, session_idle_timeout=0.3, embedded_delay=0.05, state=False),
    )
    clock = _idle_skipped(agent)
    client = RecordingClient()
    async with inprocess_agent(client, agent) as conn:
        first = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, first, "what is 1+1")).stop_reason == "end_turn"
        clock.skipped += 0.4
        await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        with pytest.raises(RequestError) as err:
            await prompt_text(conn, first, "what is 2+2")
        assert "freed" in str(err.value.data)
