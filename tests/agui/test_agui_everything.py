"""Every kind of update end to end: a real ``acp-progress agui`` process driving an agent that sends
every kind of update, read by the real ``@ag-ui/client`` (its verifier must accept the stream).

The plan arrives as shared state (the client applies the snapshot and the JSON Patches with its own
``fast-json-patch``), the edit card's diff is in the tool result, usage is in ``RUN_FINISHED`` and
the thought is reasoning. Node >= 18 is required: the test fails, never skips, without it.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.agents.agui_everything_agent import LONG_COMMAND, TITLE, EverythingAgent
from tests.helpers.acp_agent import ROOT
from tests.helpers.agui_http import Served, run_input
from tests.helpers.agui_http import run as stream
from tests.helpers.agui_inprocess import endpoint_in_process, use_in_process_test_agent
from tests.helpers.agui_process import of_type, sse_events, text_of
from tests.helpers.npm_client import CLIENT_DIR, node_with_packages

pytestmark = pytest.mark.e2e

SCRIPT = CLIENT_DIR / "run_everything.mjs"
AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'agui_everything_agent.py'}"


@pytest.fixture(scope="module")
def node() -> str:
    return node_with_packages("@ag-ui/client")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``acp-progress agui --agent AGENT --redact none --summary off --tool-progress`` served in this
    process, its agent too (what the client reads is the point, not their processes; the client is
    a process of its own)."""
    workspace = tmp_path_factory.mktemp("agui-everything")
    with pytest.MonkeyPatch.context() as patched:
        use_in_process_test_agent(patched, AGENT, EverythingAgent)
        with endpoint_in_process(workspace, agent_command=AGENT, policy="none", tool_progress=True) as served:
            yield served


def run_client(node: str, url: str, thread: str, prompt: str, *resume: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(SCRIPT), url + "/", thread, prompt, *resume],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip(), f"the client printed nothing (exit {done.returncode}):\n{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and "error" not in report, f"{report.get('error')}\n{done.stderr}"
    return report


def test_the_real_client_applies_plan_state_diff_usage_and_reasoning(node: str, server: Served) -> None:
    report = run_client(node, server.url, "everything-1", "everything 10")
    (run,) = report["runs"]
    types = run["types"]
    assert types.count("STATE_SNAPSHOT") == 1 and types.count("STATE_DELTA") >= 2, types
    assert types.index("STATE_SNAPSHOT") < types.index("STATE_DELTA")
    assert "REASONING_MESSAGE_CONTENT" in types and "ACTIVITY_SNAPSHOT" in types
    assert report["state"] == {
        "plan": [
            {"content": "Read the notes", "status": "completed", "priority": "high"},
            {"content": "Count the items", "status": "completed", "priority": "medium"},
            {"content": "Fix the typo", "status": "completed", "priority": "low"},
        ]
    }
    diff = next(r for r in report["toolResults"] if "notes.txt" in r)
    assert "-paers" in diff and "+pears" in diff and diff.startswith("--- a/notes.txt")
    assert run["result"]["usage"] == {
        "used": 4321,
        "size": 128000,
        "cost": {"amount": 0.0123, "currency": "USD"},
    }
    assert run["usage"] == [{"inputTokens": 900, "outputTokens": 120, "totalTokens": 1020}]
    assert report["text"] == "All done: 5 items counted and the typo fixed."
    threads = {t["threadId"]: t for t in httpx.get(server.url + "/threads").json()["threads"]}
    assert threads["everything-1"]["title"] == TITLE  # the agent's session title names the thread


def test_progress_reaches_the_total_before_the_result(server: Served) -> None:
    events = stream(server.url, run_input("everything-2", "everything 0", run_id="r1"))
    progress = [e["content"]["progress"] for e in of_type(events, "ACTIVITY_SNAPSHOT")]
    assert [p["value"] for p in progress] == [1, 2, 3, 4, 5] and progress[-1]["total"] == 5


# ---------------------------------------------------------------- permission questions as interrupts


def test_a_permission_question_pauses_the_run_and_the_resume_answers_it(node: str, server: Served) -> None:
    report = run_client(node, server.url, "perm-1", "permission", json.dumps({"optionId": "allow"}))
    first, second = report["runs"]
    assert first["outcome"]["type"] == "interrupt" and first["types"][-1] == "RUN_FINISHED"
    (interrupt,) = first["interrupts"]
    assert LONG_COMMAND in interrupt["message"]  # the whole command, tail included
    assert interrupt["metadata"]["acpProgress"]["command"] == LONG_COMMAND
    assert interrupt["responseSchema"]["properties"]["optionId"]["enum"] == ["allow", "reject"]
    assert interrupt["toolCallId"] and interrupt["expiresAt"].endswith("Z")
    assert second["outcome"]["type"] == "success" and "TOOL_CALL_RESULT" in second["types"]
    assert report["text"].endswith("permission=allow")


def test_a_cancelled_resume_gets_the_static_answer(node: str, server: Served) -> None:
    report = run_client(node, server.url, "perm-2", "permission")
    assert [r["outcome"]["type"] for r in report["runs"]] == ["interrupt", "success"]
    assert report["text"].endswith("permission=reject")
    assert report["runs"][1]["resultStatuses"] == ["failed"]  # the denied tool's result says so


def test_a_client_that_does_not_ask_gets_the_static_answer_in_the_same_run(server: Served) -> None:
    events = stream(server.url, run_input("perm-3", "permission", run_id="r1"))
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"]["type"] == "success"
    assert text_of(events).endswith("permission=reject")


def post(url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + "/", json=body, timeout=20)


def body(thread: str, run: str, prompt: str | None, **extra: Any) -> dict[str, Any]:
    messages = [{"id": f"m-{run}", "role": "user", "content": prompt}] if prompt else []
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def test_a_paused_thread_takes_a_plain_run_and_refuses_a_stale_resume(server: Served) -> None:
    asking = body("perm-4", "r1", "permission", forwardedProps={"permissionInterrupts": True})
    first = list(sse_events(post(server.url, asking).iter_lines()))
    (interrupt,) = first[-1]["outcome"]["interrupts"]
    wrong = body("perm-4", "r2", None, resume=[{"interruptId": "nope", "status": "cancelled"}])
    assert post(server.url, wrong).status_code == 409
    bad = body(
        "perm-4", "r2", None, resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {}}]
    )
    assert post(server.url, bad).status_code == 422
    # a client that does not resume: static answer, then this run
    events = stream(server.url, run_input("perm-4", "hello", run_id="r3"))
    assert text_of(events) == "echo: hello"
    stale = body("perm-4", "r4", None, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
    response = post(server.url, stale)
    assert response.status_code == 409 and "no pending interrupt" in response.json()["detail"]


def test_an_unanswered_question_gets_the_static_answer_after_the_bounded_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``acp-progress agui --agent AGENT --summary off --permission-interrupts --permission-timeout
    0.5`` served in this process, its agent too (the bounded wait is the point, not their
    processes)."""
    use_in_process_test_agent(monkeypatch, AGENT, EverythingAgent)
    caplog.set_level(logging.INFO, logger="acp_progress")
    options = {"agent_command": AGENT, "permission_interrupts": True, "permission_timeout": 0.5}
    with endpoint_in_process(tmp_path, **options) as served:
        # asked (the endpoint default), nobody answers
        first = stream(served.url, run_input("wait-1", "permission", run_id="r1"), timeout=20)
        (interrupt,) = first[-1]["outcome"]["interrupts"]
        deadline = time.monotonic() + 30
        while "no answer within 0.5 s; the static policy answers" not in caplog.text:
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.02)
        stale = body("wait-1", "r2", None, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
        assert post(served.url, stale).status_code == 409
        answered = stream(served.url, run_input("wait-1", "hello", run_id="r3"), timeout=20)
        assert text_of(answered) == "echo: hello"
