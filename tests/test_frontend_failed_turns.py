"""Failed turns at the front-end, against a scripted OpenAI-compatible server (issue 21 point 5).

Before: with the OpenAI back-end, HTTP 500/401 and a hang exited 1 but the output still ended
``— stop reason: end_turn``, and a stream that broke off mid-answer exited 0. Now the agent answers
the prompt with a JSON-RPC error, and ``watch`` / ``chat`` print the reason, never a stop reason,
and exit 1; ``--json`` ends the turn with one ``{"error": …}`` object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import agent_env
from .fake_openai import FakeOpenAI, Reply, error_reply, text_chunks, text_reply

KEY = "sk-test-frontend-0123456789abcdef"

#: name -> (the scripted failure, the short reason: in the message, the printed line and data.details)
FAILURES: dict[str, tuple[Reply, str]] = {
    "http-500": (error_reply(500, "backend crashed"), "Server error (HTTP 500): backend crashed"),
    "http-401": (
        error_reply(401, "Incorrect API key provided", code="invalid_api_key"),
        "Authentication failed (HTTP 401): check OPENAI_API_KEY",
    ),
    "hang": (Reply(events=[], hang_after=0), "No response from the model server within 1s"),
    "stream-cut": (
        Reply(events=text_chunks(["Hello ", "wor"]), break_after=2),
        "The stream ended unexpectedly after 2 chunks",
    ),
}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def _run(
    args: list[str], server: FakeOpenAI, tmp_path: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = agent_env(
        ACP_PROGRESS_MODEL="openai",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY=KEY,
        ACP_PROGRESS_OPENAI_MODEL="test-model",
        ACP_PROGRESS_OPENAI_MAX_RETRIES="0",
        ACP_PROGRESS_OPENAI_TIMEOUT="1",
        ACP_PROGRESS_SUMMARY="off",
        ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
    )
    return subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
        timeout=60,
    )


@pytest.mark.parametrize("failure", list(FAILURES))
def test_watch_prints_the_reason_and_exits_1(server: FakeOpenAI, tmp_path: Path, failure: str) -> None:
    reply, reason = FAILURES[failure]
    server.script(reply)
    proc = _run(["watch", "--summary", "off", "say hello"], server, tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    failed = next((line for line in proc.stdout.splitlines() if "❌ turn failed:" in line), None)
    assert failed == f"❌ turn failed: The model request failed: {reason}", proc.stdout
    if failure == "stream-cut":
        assert "Hello wor" in proc.stdout  # what did arrive is shown, then the failure
    assert "stop reason" not in proc.stdout and "end_turn" not in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr and KEY not in proc.stdout + proc.stderr, proc.stderr


@pytest.mark.parametrize("failure", list(FAILURES))
def test_watch_json_ends_the_turn_with_one_error_object(
    server: FakeOpenAI, tmp_path: Path, failure: str
) -> None:
    reply, reason = FAILURES[failure]
    server.script(reply)
    proc = _run(["watch", "--json", "say hello"], server, tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    objs: list[dict[str, Any]] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not any("stopReason" in o for o in objs), objs
    assert [o for o in objs if "error" in o] == [objs[-1]], "exactly one error object, and it is last"
    error = objs[-1]["error"]
    assert error["code"] == -32603 and error["data"]["details"] == reason, error
    assert error["message"] == f"The model request failed: {reason}", error
    cards = [o["update"] for o in objs if o.get("update", {}).get("sessionUpdate") == "tool_call_update"]
    if failure == "stream-cut":  # the thinking ended with the first token; the answer broke off
        assert cards and cards[-1]["status"] == "completed", cards
        chunks = [
            o["update"] for o in objs if o.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
        ]
        assert "".join(c["content"]["text"] for c in chunks) == "Hello wor"
    else:  # no answer came: the thinking card itself failed
        assert cards and cards[-1]["status"] == "failed", cards


@pytest.mark.parametrize("failure", list(FAILURES))
def test_chat_on_a_pipe_reports_the_failure_goes_on_and_exits_1(
    server: FakeOpenAI, tmp_path: Path, failure: str
) -> None:
    reply, reason = FAILURES[failure]
    server.script(reply, text_reply("recovered fine"))
    proc = _run(["chat", "--summary", "off"], server, tmp_path, stdin="say hello\nand again\n")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)  # one turn failed
    out = proc.stdout
    failed = out.index("❌ turn failed:")
    assert reason in out[failed:].splitlines()[0], out
    assert "stop reason" not in out[:failed], "the failed turn never looks like end_turn"
    # the conversation goes on: the next line is answered, and that turn ends normally
    assert "recovered fine" in out[failed:] and out.count("stop reason: end_turn") == 1, out
