"""A real AG-UI client against a real ``acp-progress agui`` process.

``tests/agui_client/run_agent.mjs`` uses the npm package ``@ag-ui/client`` (its ``HttpAgent``,
whose verifier rejects any stream that breaks the AG-UI event rules) to run prompts on the
endpoint started as a subprocess with the command line a user types: tool progress and the
progress summary, each an activity the client replaces in place. Node ≥ 18 and npm are
required: this test fails, never skips, without them, so CI cannot pass by not running it.
``npm install`` (tests/helpers/npm_client.py) installs the locked client into
``tests/agui_client/node_modules`` when it is missing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.npm_client import CLIENT_DIR, node_with_packages

pytestmark = pytest.mark.e2e

SCRIPT = CLIENT_DIR / "run_agent.mjs"


@pytest.fixture(scope="module")
def node() -> str:
    """The node binary, checked to be >= 18, with the locked @ag-ui/client installed."""
    return node_with_packages("@ag-ui/client")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli() -> list[str]:
    """``acp-progress`` as installed next to this interpreter (what a user runs), else via ``-c``."""
    script = Path(sys.executable).parent / "acp-progress"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from acp_adapter.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``acp-progress agui --port N --redact tests.agents.agui_policies:counts_only`` on loopback.

    Progress summaries are on, as they are by default for ``agui``; event-driven
    (``ACP_PROGRESS_SUMMARY_INTERVAL=0``) so a short run still has several revisions.
    """
    workspace = tmp_path_factory.mktemp("agui-node-ws")
    (workspace / "main.py").write_text("# TODO: first\nprint(1)\n")
    (workspace / "docs.txt").write_text("TODO second\n")
    log_path = workspace.parent / "agui-server.log"
    port = _free_port()
    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")}
    env.pop("ACP_PROGRESS_AGUI_TOOL_PROGRESS", None)
    env.pop("ACP_PROGRESS_SUMMARY", None)
    env["ACP_PROGRESS_SUMMARY_INTERVAL"] = "0"
    argv = [
        *_cli(),
        "agui",
        "--no-token",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--cwd",
        str(workspace),
        "--redact",
        "tests.agents.agui_policies:counts_only",
    ]
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        server = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while True:
                assert server.poll() is None, f"acp-progress agui exited:\n{log_path.read_text()}"
                assert time.monotonic() < deadline, f"no /health answer in 30 s:\n{log_path.read_text()}"
                try:
                    if httpx.get(url + "/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.05)
            yield url
        finally:
            server.send_signal(signal.SIGINT)
            try:
                code = server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                raise
    assert code == 130, f"acp-progress agui exited with {code}:\n{log_path.read_text()}"


def _run_client(node: str, url: str, thread: str, forwarded: dict[str, Any], *prompts: str) -> dict[str, Any]:
    done = subprocess.run(
        [node, str(SCRIPT), url + "/", thread, json.dumps(forwarded), *prompts],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout.strip(), f"the client printed nothing (exit {done.returncode}):\n{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and "error" not in report, f"{report.get('error')}\n{done.stderr}"
    return report


def _of(items: list[dict[str, Any]], activity_type: str) -> list[dict[str, Any]]:
    return [item for item in items if item["activityType"] == activity_type]


def test_http_agent_sees_tool_progress_replaced_in_place(node: str, endpoint: str) -> None:
    on = {"emitToolProgress": True}
    report = _run_client(node, endpoint, "node-thread", on, "search for TODO", "hello")
    first, second = report["runs"]

    assert first["types"][0] == "RUN_STARTED" and first["types"][-1] == "RUN_FINISHED"
    assert first["outcome"] == {"type": "success"}
    shots = _of(first["snapshots"], "TOOL_PROGRESS")
    assert shots, first["types"]  # how many: the agent replaces progress still queued for a slow reader
    call_id = shots[0]["content"]["toolCallId"]
    activity_id = f"{first['runId']}:progress:{call_id}"
    # one activity per tool call per run, replaced in place with updated counts (no message: the
    # counts-only policy named on the command line withheld it)
    assert {s["messageId"] for s in shots} == {activity_id}
    assert all(s["activityType"] == "TOOL_PROGRESS" and s["replace"] is True for s in shots)
    assert all(s["content"]["progress"]["total"] == 2 for s in shots)
    assert shots[-1]["content"] == {"toolCallId": call_id, "progress": {"value": 2, "total": 2}}
    assert [s["replacedExisting"] for s in shots] == [False] + [True] * (len(shots) - 1)
    (activity,) = _of(first["activities"], "TOOL_PROGRESS")
    assert activity["id"] == activity_id and activity["activityType"] == "TOOL_PROGRESS"
    assert activity["content"] == shots[-1]["content"]
    assert any("2 matches in 2 files" in result for result in first["toolResults"])
    assert "found 2 matches" in first["text"]

    # the same thread again: the client sends its history, the latest user message is the prompt
    assert second["types"][-1] == "RUN_FINISHED" and not _of(second["snapshots"], "TOOL_PROGRESS")
    assert second["text"] and second["runId"] != first["runId"]


def test_http_agent_sees_the_progress_summary_replaced_in_place(node: str, endpoint: str) -> None:
    report = _run_client(node, endpoint, "node-summary", {}, "search for TODO")
    (run,) = report["runs"]
    assert run["types"][-1] == "RUN_FINISHED"
    shots = _of(run["snapshots"], "PROGRESS_SUMMARY")
    assert len(shots) >= 2, run["types"]
    # one activity per run, each revision replacing the last in the client's message list
    assert {s["messageId"] for s in shots} == {f"{run['runId']}:progress-summary"}
    assert all(s["replace"] is True for s in shots)
    assert [s["replacedExisting"] for s in shots] == [False] + [True] * (len(shots) - 1)
    revisions = [s["content"]["revision"] for s in shots]
    assert revisions == list(range(1, len(shots) + 1))
    assert all(set(s["content"]) == {"summary", "revision"} and s["content"]["summary"] for s in shots)
    assert any("TODO" in s["content"]["summary"] for s in shots)
    # every summary arrived before the terminal event
    last_summary = max(i for i, t in enumerate(run["types"]) if t == "ACTIVITY_SNAPSHOT")
    assert last_summary < run["types"].index("RUN_FINISHED")
    (activity,) = _of(run["activities"], "PROGRESS_SUMMARY")
    assert activity["content"] == shots[-1]["content"]

    off = _run_client(node, endpoint, "node-summary", {"emitProgressSummary": False}, "search for TODO")
    assert not _of(off["runs"][0]["snapshots"], "PROGRESS_SUMMARY")


def _readme_snippet() -> str:
    readme = (ROOT / "docs" / "frontends" / "agui.md").read_text()
    after = readme[readme.index("save as `run.mjs`") :]
    start = after.index("```js\n") + len("```js\n")
    return after[start : after.index("```", start)]


def test_the_readme_node_snippet_works_as_printed(node: str, endpoint: str, tmp_path: Path) -> None:
    """The snippet prints the summary's text, not ``…:progress-summary undefined`` (a summary has no
    ``.progress``)."""
    snippet = _readme_snippet()
    assert "http://127.0.0.1:8000/" in snippet
    script = CLIENT_DIR / f"readme-snippet-{os.getpid()}.mjs"  # beside node_modules, like a user's run.mjs
    script.write_text(snippet.replace("http://127.0.0.1:8000/", endpoint + "/"))
    try:
        done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=30)
    finally:
        script.unlink()
    assert done.returncode == 0, done.stderr
    assert "undefined" not in done.stdout and "run failed" not in done.stderr, done.stdout
    assert re.search(r"^\[summary \d+\] \S", done.stdout, re.M), done.stdout
    assert re.search(r"^\[progress \S+\] \{", done.stdout, re.M), done.stdout
    assert "TODO" in done.stdout  # the streamed answer


def test_a_stored_thread_opens_in_the_http_agent_and_goes_on(node: str, endpoint: str) -> None:
    """GET /threads/{id} as a reloaded client uses it: the earlier messages become the HttpAgent's
    own (its schema parses them in the next RunAgentInput), and the thread goes on."""
    first = _run_client(node, endpoint, "thread-history", {}, "search for TODO")
    answer = first["runs"][0]["text"]
    assert "TODO" in answer
    deadline = time.monotonic() + 10
    while True:  # the agent writes a turn to the store when it ends
        stored = httpx.get(f"{endpoint}/threads/thread-history").json()
        if any(m.get("content") == answer for m in stored["messages"]):
            break
        assert time.monotonic() < deadline, stored
        time.sleep(0.05)
    done = subprocess.run(
        [node, str(CLIENT_DIR / "open_thread.mjs"), endpoint, "thread-history", "and again"],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and "error" not in report, f"{report.get('error')}\n{done.stderr}"
    history = report["history"]["messages"]
    roles = [m["role"] for m in history]
    assert roles[0] == "user" and history[0]["content"] == "search for TODO"
    assert "tool" in roles and history[-1] == {
        "id": history[-1]["id"],
        "role": "assistant",
        "content": answer,
    }
    calls = {c["id"] for m in history for c in m.get("toolCalls", [])}
    assert {m["toolCallId"] for m in history if m["role"] == "tool"} <= calls
    messages = report["messages"]
    assert messages[: len(history)] == history  # the client keeps them as they came
    assert report["outgoingRoles"][: len(roles)] == roles  # and sent them with the next run
    assert messages[len(history)]["content"] == "and again"
    assert report["types"][0] == "RUN_STARTED" and report["types"][-1] == "RUN_FINISHED"
    assert any(m["role"] == "assistant" and m.get("content") for m in messages[len(history) + 1 :])
    assert report["warnings"] == []
