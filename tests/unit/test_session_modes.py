"""Modes, models, commands, remembered permissions, close and resume.

This project's agent driven by the SDK's client side: the mode and model selectors of
``session/new``/``load``/``resume``, ``session/set_config_option`` and ``session/set_mode`` with
their updates, read-only refusing without asking, auto allowing without asking (audited as
automatic), "always" answers per program that survive a new agent, ``/help`` and
``/title`` answered without the model, ``session/close`` cancelling a running turn and
``session/resume`` going on without a replay.

The agents run in this process with the connection ``serve`` builds (its ``session/close`` and
``session/resume`` routes included, :func:`tests.helpers.shared_agent.served_inprocess`): every decision
here is the agent's, and a later agent reads the earlier one's store as a new process would. The
agent over real stdio is covered by the end-to-end and front-end tests.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import (
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionInfoUpdate,
    ToolCallStart,
    UserMessageChunk,
)

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.choosing_client import ChoosingClient, agent_from_env, card_of
from tests.helpers.shared_agent import served_inprocess


def _audit(state: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "audit", "--json", "--limit", "100"],
        env={**agent_env(ACP_PROGRESS_STATE_DIR=str(state))},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()][::-1]  # oldest first


def _agent_env(state: Path) -> dict[str, str]:
    """The test agent's settings with its store at ``state``; its model thinks 0.02 s, not 0.3 s:
    no test here is about the model's thinking time (the close test waits on a tool)."""
    return agent_env(ACP_PROGRESS_STATE_DIR=str(state), ACP_PROGRESS_EMBEDDED_DELAY="0.02")


def _a_tool_card(update: Any) -> bool:
    return isinstance(update, ToolCallStart) and update.kind != "think"


def _card_text(updates: list[Any]) -> str:
    return " ".join(c.content.text for u in updates for c in (u.content or []) if hasattr(c, "content"))


@pytest.mark.e2e
@pytest.mark.anyio
async def test_modes_models_and_commands_are_offered_and_read_only_refuses_without_asking(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    client = ChoosingClient()
    async with served_inprocess(client, agent_from_env(_agent_env(state))) as conn:
        new = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = new.session_id
        mode, model = new.config_options
        assert (mode.id, mode.current_value) == ("mode", "ask")
        assert [o.value for o in mode.options] == ["ask", "read-only", "auto"]
        assert (model.id, model.current_value) == ("model", "embedded")
        assert new.modes.current_mode_id == "ask"
        assert [m.id for m in new.modes.available_modes] == ["ask", "read-only", "auto"]
        answer = await conn.set_config_option(config_id="mode", session_id=sid, value="read-only")
        assert answer.config_options[0].current_value == "read-only"
        updates = client.for_session(sid)
        assert any(isinstance(u, CurrentModeUpdate) and u.current_mode_id == "read-only" for u in updates)
        changed = [u for u in updates if isinstance(u, ConfigOptionUpdate)]
        assert changed and changed[-1].config_options[0].current_value == "read-only"

        # sent after session/new's answer (the outbox keeps order: before the mode's updates)
        (commands,) = [r.update for r in client.commands if r.session_id == sid]
        assert isinstance(commands, AvailableCommandsUpdate)
        assert [c.name for c in commands.available_commands] == ["help", "title"]

        assert (await prompt_text(conn, sid, "run echo refused")).stop_reason == "end_turn"
        assert client.permission_requests == [], "read-only asked the client"
        card = card_of(client, sid, "echo refused")
        assert final_status(card) == "failed" and "read-only mode" in _card_text(card)

        with pytest.raises(Exception) as err:  # an unknown value is a clear error, nothing changes
            await conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
        assert "unknown mode" in str(err.value.data)
    (row,) = _audit(state)
    assert (row["allowed"], row["decidedBy"], row["rule"]) == (False, "auto", "mode read-only")


@pytest.mark.e2e
@pytest.mark.anyio
async def test_auto_mode_by_set_mode_runs_without_asking_and_is_audited_as_automatic(tmp_path: Path) -> None:
    state = tmp_path / "state"
    client = ChoosingClient(choices=["reject_once"])
    async with served_inprocess(client, agent_from_env(_agent_env(state))) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=sid, mode_id="auto")  # the older method
        assert any(
            isinstance(u, CurrentModeUpdate) and u.current_mode_id == "auto" for u in client.for_session(sid)
        )
        await prompt_text(conn, sid, "run echo automatic-run")
        assert client.permission_requests == []
        card = card_of(client, sid, "echo automatic-run")
        assert final_status(card) == "completed" and "automatic-run" in _card_text(card)

    async with served_inprocess(ChoosingClient(), agent_from_env(_agent_env(state))) as conn:
        loaded = await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert loaded.modes.current_mode_id == "auto"  # stored with the session
        assert loaded.config_options[0].current_value == "auto"
    (row,) = _audit(state)
    assert (row["allowed"], row["decidedBy"], row["rule"]) == (True, "auto", "mode auto")


@pytest.mark.e2e
@pytest.mark.anyio
async def test_always_answers_are_per_program_stored_with_the_session_and_audited(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    env = _agent_env(state)
    client = ChoosingClient(choices=["allow_always", "reject_always", "allow_once"])
    async with served_inprocess(client, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "run echo first")  # asked: allow always (echo)
        assert client.offered[0] == ["allow_once", "allow_always", "reject_once", "reject_always"]
        assert client.permission_requests[0].kind == "execute"
        await prompt_text(conn, sid, "run echo second")  # not asked
        assert len(client.permission_requests) == 1
        assert final_status(card_of(client, sid, "echo second")) == "completed"
        await prompt_text(conn, sid, "run ls -la")  # another command: asked, rejected always
        await prompt_text(conn, sid, "run ls")  # refused without asking
        assert len(client.permission_requests) == 2
        card = card_of(client, sid, "ls")
        assert final_status(card) == "failed" and "always reject" in _card_text(card)
        # a compound command is never covered by "always allow echo", nor offered it
        await prompt_text(conn, sid, "run `echo a; echo b`")
        assert len(client.permission_requests) == 3
        assert "allow_always" not in client.offered[2]

    again = ChoosingClient()
    async with served_inprocess(again, agent_from_env(env)) as conn:  # a new agent: still remembered
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        await prompt_text(conn, sid, "run echo third")
        assert again.permission_requests == []
        assert final_status(card_of(again, sid, "echo third")) == "completed"
    rows = [(r["allowed"], r["decidedBy"], r["rule"]) for r in _audit(state)]
    echo = f"always allow execute:program:{os.path.realpath(shutil.which('echo') or 'echo')}"
    assert rows == [
        (True, "client", echo),
        (True, "auto", echo),
        (False, "client", "always reject execute:ls"),
        (False, "auto", "always reject execute:ls"),
        (True, "client", ""),
        (True, "auto", echo),
    ]


@pytest.mark.anyio
async def test_help_and_title_are_answered_by_the_agent_and_the_title_is_stored(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = _agent_env(state)
    client = RecordingClient()
    async with served_inprocess(client, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "/help")).stop_reason == "end_turn"
        text = client.answer(sid)
        assert "run_command" in text and "read-only" in text and "/title" in text
        assert client.think_cards(sid) == {}, "the model was asked"
        await prompt_text(conn, sid, "/title  Release checklist ")
        infos = [u for u in client.for_session(sid) if isinstance(u, SessionInfoUpdate)]
        assert [i.title for i in infos] == ["Release checklist"]
        await prompt_text(conn, sid, "what is 2+2")  # a later prompt does not rename it
        assert [s.title for s in (await conn.list_sessions()).sessions] == ["Release checklist"]
    async with served_inprocess(RecordingClient(), agent_from_env(env)) as conn:
        assert [s.title for s in (await conn.list_sessions()).sessions] == ["Release checklist"]


@pytest.mark.anyio
async def test_close_cancels_the_turn_keeps_the_session_and_resume_goes_on_without_a_replay(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    env = _agent_env(state)
    first = RecordingClient()
    async with served_inprocess(first, agent_from_env(env)) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        caps = init.agent_capabilities.session_capabilities
        assert caps.close is not None and caps.resume is not None
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "what is 2+2")
        waiting = asyncio.Event()
        # the wait tool's card (the first card that is not the model's thinking): well under way
        first.on_update = lambda r: waiting.set() if _a_tool_card(r.update) else None
        turn = asyncio.create_task(prompt_text(conn, sid, "wait 20 seconds"))
        await asyncio.wait_for(waiting.wait(), 10)
        started = time.monotonic()
        await conn.close_session(session_id=sid)
        assert (await turn).stop_reason == "cancelled"
        assert time.monotonic() - started < 3
        assert await conn.close_session(session_id=sid) is not None  # closing again: nothing to do
        assert [s.session_id for s in (await conn.list_sessions()).sessions] == [sid]

    client = RecordingClient()
    async with served_inprocess(client, agent_from_env(env)) as conn:
        resumed = await conn.resume_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert resumed.modes.current_mode_id == "ask"
        assert client.for_session(sid) == [], "resume replayed the conversation"
        assert [r.session_id for r in client.commands] == [sid]
        assert (await prompt_text(conn, sid, "what is 3+3")).stop_reason == "end_turn"
        assert "6" in client.answer(sid)
    replay = RecordingClient()
    async with served_inprocess(replay, agent_from_env(env)) as conn:  # the same conversation, gone on
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        users = [u.content.text for u in replay.for_session(sid) if isinstance(u, UserMessageChunk)]
        assert users == ["what is 2+2", "wait 20 seconds", "what is 3+3"]


def test_a_schema_1_database_is_migrated_and_its_audit_gains_the_rule_column(tmp_path: Path) -> None:
    """A database written before modes (schema 1: no ``rule``) opens, keeps its rows, passes the
    schema check and records rules."""
    import sqlite3

    from acp_adapter.store import DATABASE_NAME, PermissionDecision, SqliteStore
    from acp_adapter.store.sqlite import MIGRATIONS

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    db = sqlite3.connect(state / DATABASE_NAME, isolation_level=None)
    MIGRATIONS[0](db)
    db.execute("PRAGMA user_version = 1")
    db.execute(
        "INSERT INTO permissions (at, session_id, tool_call_id, title, allowed, decided_by, surface) "
        "VALUES (1.0, 's1', 'c1', 'Running ls', 1, 'client', 'acp')"
    )
    db.close()
    (state / DATABASE_NAME).chmod(0o600)
    store = SqliteStore(state)
    try:
        store.record_permission(
            PermissionDecision(2.0, "s1", "c2", "Running ls", True, "auto", "acp", "mode auto")
        )
        rows = store.permission_audit()
    finally:
        store.close()
    assert [(r.tool_call_id, r.rule) for r in rows] == [("c2", "mode auto"), ("c1", "")]
    again = SqliteStore(state)  # the migrated schema is exactly the expected one
    again.close()


def test_always_allow_never_covers_a_command_with_shell_operators() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from acp_adapter.agent.permissions import command_name, rule_key
    from acp_adapter.tooling.calls import ToolCall

    @given(st.text(max_size=30), st.sampled_from(list(";&|`$<>(){}\n*?[]~!#\\")), st.text(max_size=30))
    def check(before: str, operator: str, after: str) -> None:
        command = f"echo x{before}{operator}{after}y"
        assert command_name(command)[1] is False
        key, may_allow_always = rule_key("execute", ToolCall("c", "run_command", {"command": command}), None)
        assert key.startswith("execute:") and may_allow_always is False

    check()
    assert command_name("/usr/bin/git status --short") == ("git", True)
    assert command_name("FOO=1 ls") == ("FOO=1", False)
    assert rule_key("edit", ToolCall("c", "edit_file", {"path": "a.py"}), None) == ("edit", True)


@pytest.mark.anyio
async def test_the_model_selector_switches_the_session_to_the_configured_openai_model(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import FakeOpenAI, text_reply

    with FakeOpenAI(api_key="sk-test-key") as server:
        server.script(text_reply("from the ", "remote model"))
        env = agent_env(
            ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test-key",
            ACP_PROGRESS_OPENAI_MODEL="fake-model",
        )
        client = RecordingClient()
        async with served_inprocess(client, agent_from_env(env)) as conn:
            new = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            sid = new.session_id
            model = new.config_options[1]
            assert [o.value for o in model.options] == ["embedded", "openai:fake-model"]
            assert model.current_value == "embedded"
            await prompt_text(conn, sid, "what is 2+2")
            assert server.requests == [] and "4" in client.answer(sid)
            answer = await conn.set_config_option(
                config_id="model", session_id=sid, value="openai:fake-model"
            )
            assert answer.config_options[1].current_value == "openai:fake-model"
            assert (await prompt_text(conn, sid, "hello")).stop_reason == "end_turn"
        (request,) = server.requests
        assert request.body["model"] == "fake-model"
        assert "from the remote model" in client.answer(sid)
