"""``chat`` and ``watch`` on pipes:
three prompts in one session with the history carried over, ``--json`` parsed line by line,
``watch -`` from stdin, honest failed turns, whole lines on a pipe, ``sessions`` and
``--continue``/``--session`` against this project's agent with its own state directory.

What is tested is what the command prints and the status it ends with, so the command line runs in
the test process with its streams on files and this project's agent served inside it
(:func:`tests.helpers.cli_inside.run_cli_inside`): two processes per run proved nothing here. Steps
that only set up or read back the state directory (store two sessions first, list what is stored
afterwards) talk to an in-process agent directly (:mod:`tests.helpers.shared_agent`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, inprocess_agent, prompt_text
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.shared_agent import listed_sessions, seed_sessions


def _run(
    args: list[str], cwd: Path, state: Path, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", ACP_PROGRESS_STATE_DIR=str(state), **env),
    }
    return run_cli_inside(args, cwd=cwd, env=full_env, stdin=stdin)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    return work, state


def _json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]  # every line is one JSON object


def test_chat_on_a_pipe_is_one_session_with_the_history_carried_over(dirs) -> None:
    work, state = dirs
    proc = _run(["chat", "--json"], work, state, stdin="what is 2+2\n\nwhat is 3*7\nwhat is 10-4\n")
    assert proc.returncode == 0, proc.stderr
    objs = _json_lines(proc.stdout)
    ends = [o for o in objs if "stopReason" in o]
    assert [o["stopReason"] for o in ends] == ["end_turn"] * 3, "three prompts (the blank line skipped)"
    sessions = {o["sessionId"] for o in objs if "update" in o}
    assert len(sessions) == 1, sessions
    answers = "".join(
        o["update"]["content"]["text"]
        for o in objs
        if o.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
    )
    assert "2+2 = 4" in answers and "3*7 = 21" in answers and "10-4 = 6" in answers
    # the model saw the conversation so far: each turn's input grows by the turns before it
    inputs = [o["_meta"]["acpProgress"]["usage"]["inputTokens"] for o in ends]
    assert inputs[0] < inputs[1] < inputs[2], inputs
    # and the agent keeps one session holding all three prompts
    assert listed_sessions(state, work) == list(sessions)


@pytest.mark.anyio
async def test_an_unreachable_model_server_fails_the_turn_with_an_error_not_end_turn(dirs) -> None:
    """What ``chat`` and ``watch --json`` show of a failed turn is the agent's JSON-RPC error, passed
    on as it is (exit 1, ``❌ turn failed: …``, one ``{"error": …}`` line: end to end, for each
    front-end, in test_frontend_failed_turns.py); here the kind that needs no server at all."""
    from acp import RequestError

    from acp_adapter.config import Settings
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    work, state = dirs
    env = agent_env(
        ACP_PROGRESS_STATE_DIR=str(state),
        ACP_PROGRESS_MODEL="openai",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        OPENAI_API_KEY="x",
        ACP_PROGRESS_OPENAI_MAX_RETRIES="0",
    )
    client = RecordingClient()
    agent = ProgressAgent(turn_runner=AIAgent, settings=Settings.from_env(env))
    async with inprocess_agent(client, agent) as conn:
        session = await conn.new_session(cwd=str(work), mcp_servers=[])
        with pytest.raises(RequestError) as caught:
            await prompt_text(conn, session.session_id, "hello")
    error = caught.value
    assert error.code == -32603 and "connection refused" in error.data["details"], error.data
    assert str(error).startswith("The model request failed: Cannot connect"), str(error)
    (card,) = client.cards(session.session_id).values()
    assert final_status(card) == "failed"


def test_watch_dash_reads_the_prompt_from_stdin(dirs) -> None:
    work, state = dirs
    proc = _run(["watch", "--json", "-"], work, state, stdin="what is 6*7\n")
    assert proc.returncode == 0, proc.stderr
    objs = _json_lines(proc.stdout)
    assert objs[-1]["stopReason"] == "end_turn"
    text = "".join(
        o["update"]["content"]["text"]
        for o in objs
        if o.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
    )
    assert "6*7 = 42" in text
    empty = _run(["watch", "-"], work, state, stdin="  \n")
    assert empty.returncode == 2 and "empty" in empty.stderr


@pytest.mark.e2e  # a process of its own: the command the tool runs
def test_watch_json_records_the_permission_request_and_its_answer(dirs) -> None:
    work, state = dirs
    (work / "victim.txt").write_text("x")
    proc = _run(["watch", "--json", "--yes", "run `rm victim.txt`"], work, state)
    assert proc.returncode == 0, proc.stderr
    objs = _json_lines(proc.stdout)
    keys = [next(iter(o)) for o in objs]
    asked = keys.index("permissionRequest")
    assert keys[asked + 1] == "permissionResponse"
    request, answer = objs[asked]["permissionRequest"], objs[asked + 1]["permissionResponse"]
    assert answer["toolCallId"] == request["toolCall"]["toolCallId"]
    assert answer["outcome"]["outcome"] == "selected" and answer["_meta"]["acpProgress"]["automatic"] is True
    assert not (work / "victim.txt").exists()


@pytest.mark.e2e  # a process of its own: the command the tool runs
def test_pipe_lines_stay_whole_and_allowed_follows_its_card(dirs) -> None:
    work, state = dirs
    proc = _run(
        ["watch", "--yes", "--summary", "off", "run `echo hi`"],
        work,
        state,
        ACP_PROGRESS_EMBEDDED_CHUNK_DELAY="0.01",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    card = next(i for i, line in enumerate(lines) if line.startswith("▶ 💻"))
    allowed = next(i for i, line in enumerate(lines) if line.startswith("🔓 allowed"))
    assert card < allowed, lines
    for line in lines:  # one event per line: no card mark glued after answer text
        for mark in ("▶", "✅", "❌", "🔓", "— stop reason"):
            assert mark not in line or line.lstrip().startswith(mark) or line.startswith("   …"), line


def test_sessions_and_continue_load_the_newest_and_show_its_replay(dirs) -> None:
    work, state = dirs
    seed_sessions(state, work, ["what is 2+2", "what is 5*5"])
    listed = _run(["sessions", "--cwd", str(work)], work, state)
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["SESSION", "UPDATED", "WORKSPACE", "TITLE"]
    assert len(rows) == 2 and rows[0].endswith("what is 5*5") and rows[1].endswith("what is 2+2"), rows
    newest = rows[0].split()[0]
    cont = _run(["watch", "--summary", "off", "--continue", "what is 1+1"], work, state)
    assert cont.returncode == 0, cont.stderr
    out = cont.stdout
    assert f"── session {newest} ──" in out and "› what is 5*5" in out and "5*5 = 25" in out
    assert out.index("── continued ──") < out.index("1+1 = 2")
    assert "what is 2+2" not in out, "only the newest session is replayed"
    chat = _run(["chat", "--json", "--session", newest], work, state, stdin="what is 3+3\n")
    assert chat.returncode == 0, chat.stderr
    objs = _json_lines(chat.stdout)
    replayed = [o["replay"] for o in objs if "replay" in o]
    assert replayed and all(r["sessionId"] == newest for r in replayed)
    assert {o["sessionId"] for o in objs if "update" in o} == {newest}


def test_viewing_a_session_does_not_make_it_the_one_continue_picks(dirs) -> None:
    """``chat --session OLD`` with nothing typed (only its replay read) does not store OLD as used
    now, so the next ``--continue`` goes on in the session last worked in."""
    import sqlite3

    from acp_adapter.store import DATABASE_NAME

    work, state = dirs
    older, newer = seed_sessions(state, work, ["what is 2+2", "what is 5*5"])
    # the times the front-ends compare are in whole seconds: both sessions are made 2 s older (as
    # if stored 2 s ago), so a touch now would be later than both instead of tying with them
    db = sqlite3.connect(state / DATABASE_NAME)
    with db:
        db.execute("UPDATE sessions SET created_at = created_at - 2, updated_at = updated_at - 2")
    db.close()
    viewed = _run(["chat", "--session", older], work, state, stdin="")
    assert viewed.returncode == 0, viewed.stderr
    assert "what is 2+2" in viewed.stdout  # its replay was shown
    assert listed_sessions(state, work) == [newer, older]
    cont = _run(["watch", "--summary", "off", "--continue", "what is 1+1"], work, state)
    assert cont.returncode == 0 and "── session " + newer in cont.stdout, cont.stdout
    prompted = _run(["chat", "--session", older], work, state, stdin="what is 3+3\n")
    assert prompted.returncode == 0, prompted.stderr
    assert listed_sessions(state, work) == [older, newer]  # a prompt in it is using it


@pytest.mark.e2e  # a process of its own: the --agent that exits at once
def test_session_errors_are_one_line(dirs) -> None:
    work, state = dirs
    unknown = _run(["watch", "--session", "sess_nope", "hi"], work, state)
    assert unknown.returncode == 1 and "could not load session sess_nope" in unknown.stderr
    nothing = _run(["chat", "--continue"], work, state, stdin="hi\n")
    assert nothing.returncode == 1 and "no session to continue" in nothing.stderr
    cannot = _run(["sessions", "--agent", f"{sys.executable} -c 'import sys; sys.exit(0)'"], work, state)
    assert cannot.returncode == 2 and cannot.stderr.count("\n") == 1, cannot.stderr


def test_watch_session_loads_that_session_not_the_newest_and_goes_on_in_it(dirs) -> None:
    work, state = dirs
    picked, newer = seed_sessions(state, work, ["what is 2+2", "what is 5*5"])
    assert listed_sessions(state, work) == [newer, picked]
    out = _run(["watch", "--summary", "off", "--session", picked, "what is 7+7"], work, state)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"── session {picked} ──" in text and "› what is 2+2" in text and "2+2 = 4" in text
    assert "what is 5*5" not in text, "the session asked for, not the newest, is replayed"
    assert text.index("── continued ──") < text.index("7+7 = 14")
    listed = listed_sessions(state, work)
    assert listed == [picked, newer], "the prompt went into that session (now the newest)"
