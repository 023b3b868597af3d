"""Failed turns at the front-end, against a scripted OpenAI-compatible server.

With the OpenAI back-end, HTTP 500/401, a hang and a stream that broke off mid-answer must not look
like a finished turn (``— stop reason: end_turn``, exit 0): the agent answers the prompt with a
JSON-RPC error, and ``watch`` / ``chat`` print the reason, never a stop reason,
and exit 1; ``--json`` ends the turn with one ``{"error": …}`` object.

Two layers decide this. The agent turns each failure kind into the JSON-RPC error (code, message,
``data.details``) and the think card's status; that is checked for every kind with the agent in
this process. The front-ends only pass that error on — :class:`PromptRefused` takes the message
and details as they are, whatever the kind — so each front-end keeps one run of its whole command line
(a different kind each) proving the whole path: exit code, the printed line, the ``--json`` object.
Those runs are in this process with the agent inside (:func:`tests.helpers.cli_inside.run_cli_inside`):
what the command prints and its exit status are the point, not its processes.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, inprocess_agent, prompt_text
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.fake_openai import FakeOpenAI, Reply, error_reply, text_chunks, text_reply

KEY = "sk-test-frontend-0123456789abcdef"
#: the read time-out of the run whose server hangs (waited out whole); the others keep 1 s
HANG_TIMEOUT = "0.4"

#: name -> (the scripted failure, the short reason: in the message, the printed line and data.details)
FAILURES: dict[str, tuple[Reply, str]] = {
    "http-500": (error_reply(500, "backend crashed"), "Server error (HTTP 500): backend crashed"),
    "http-401": (
        error_reply(401, "Incorrect API key provided", code="invalid_api_key"),
        "Authentication failed (HTTP 401): check OPENAI_API_KEY",
    ),
    "hang": (Reply(events=[], hang_after=0), f"No response from the model server within {HANG_TIMEOUT}s"),
    "stream-cut": (
        Reply(events=text_chunks(["Hello ", "wor"]), break_after=2),
        "The stream ended unexpectedly after 2 chunks",
    ),
}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def _env(server: FakeOpenAI, tmp_path: Path, timeout: str = "1") -> dict[str, str]:
    return agent_env(
        ACP_PROGRESS_MODEL="openai",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY=KEY,
        ACP_PROGRESS_OPENAI_MODEL="test-model",
        ACP_PROGRESS_OPENAI_MAX_RETRIES="0",
        ACP_PROGRESS_OPENAI_TIMEOUT=timeout,
        ACP_PROGRESS_SUMMARY="off",
        ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
    )


def _run(
    args: list[str], server: FakeOpenAI, tmp_path: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return run_cli_inside(args, cwd=tmp_path, env={**os.environ, **_env(server, tmp_path)}, stdin=stdin)


# ------------------------------------------------------------------ every kind, at the agent


@pytest.mark.anyio
@pytest.mark.parametrize("failure", list(FAILURES))
async def test_each_failure_is_one_json_rpc_error_the_front_ends_show_as_it_is(
    server: FakeOpenAI, tmp_path: Path, failure: str
) -> None:
    from acp_adapter.client.driver import PromptRefused
    from acp_adapter.config import Settings
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    reply, reason = FAILURES[failure]
    server.script(reply, text_reply("recovered fine"))
    settings = Settings.from_env(_env(server, tmp_path, HANG_TIMEOUT if failure == "hang" else "1"))
    client = RecordingClient()
    async with inprocess_agent(client, ProgressAgent(turn_runner=AIAgent, settings=settings)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        with pytest.raises(RequestError) as caught:
            await prompt_text(conn, sid, "say hello")
        failed_answer = client.answer(sid)
        failed_cards = list(client.cards(sid).values())
        # the session goes on: the next prompt is answered and ends normally (chat's next line)
        recovered = await prompt_text(conn, sid, "and again")
    error = caught.value
    assert error.code == -32603 and error.data["details"] == reason, (error, error.data)
    assert str(error) == f"The model request failed: {reason}"
    # what watch prints (``❌ turn failed: <reason>``, no details line: they are in the reason) and
    # what --json writes as the error object's message and data, for this kind
    refused = PromptRefused(error)
    assert refused.reason == f"The model request failed: {reason}" and refused.details == reason
    assert refused.code == -32603 and refused.data == error.data
    if failure == "stream-cut":  # the thinking ended with the first token; the answer broke off
        assert failed_cards and final_status(failed_cards[-1]) == "completed", failed_cards
        assert failed_answer == "Hello wor"
    else:  # no answer came: the thinking card itself failed
        assert failed_cards and final_status(failed_cards[-1]) == "failed", failed_cards
        assert failed_answer == ""
    assert recovered.stop_reason == "end_turn" and client.answer(sid).endswith("recovered fine")
    assert KEY not in f"{error} {error.data} {client.updates}"


# ------------------------------------------------------------------ each front-end, end to end


def test_watch_prints_the_reason_and_exits_1(server: FakeOpenAI, tmp_path: Path) -> None:
    reply, reason = FAILURES["stream-cut"]  # the kind with an answer shown before the failure
    server.script(reply)
    proc = _run(["watch", "--summary", "off", "say hello"], server, tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    failed = next((line for line in proc.stdout.splitlines() if "❌ turn failed:" in line), None)
    assert failed == f"❌ turn failed: The model request failed: {reason}", proc.stdout
    assert "Hello wor" in proc.stdout  # what did arrive is shown, then the failure
    assert "stop reason" not in proc.stdout and "end_turn" not in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr and KEY not in proc.stdout + proc.stderr, proc.stderr


def test_watch_json_ends_the_turn_with_one_error_object(server: FakeOpenAI, tmp_path: Path) -> None:
    reply, reason = FAILURES["http-401"]  # a kind with no answer: the thinking card itself fails
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
    assert cards and cards[-1]["status"] == "failed", cards
    assert KEY not in proc.stdout + proc.stderr


def test_chat_on_a_pipe_reports_the_failure_goes_on_and_exits_1(server: FakeOpenAI, tmp_path: Path) -> None:
    reply, reason = FAILURES["http-500"]
    server.script(reply, text_reply("recovered fine"))
    proc = _run(["chat", "--summary", "off"], server, tmp_path, stdin="say hello\nand again\n")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)  # one turn failed
    out = proc.stdout
    failed = out.index("❌ turn failed:")
    assert reason in out[failed:].splitlines()[0], out
    assert "stop reason" not in out[:failed], "the failed turn never looks like end_turn"
    # the conversation goes on: the next line is answered, and that turn ends normally
    assert "recovered fine" in out[failed:] and out.count("stop reason: end_turn") == 1, out
