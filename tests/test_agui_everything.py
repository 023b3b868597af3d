"""Issue 29 point 4 end to end: a real ``acp-progress agui`` process driving an agent that sends
every kind of update, read by the real ``@ag-ui/client`` (its verifier must accept the stream).

The plan arrives as shared state (the client applies the snapshot and the JSON Patches with its own
``fast-json-patch``), the edit card's diff is in the tool result, usage is in ``RUN_FINISHED`` and
the thought is reasoning. Node >= 18 is required: the test fails, never skips, without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from .agui_process import AguiProcess, of_type
from .conftest import ROOT
from .npm_client import CLIENT_DIR, node_with_packages

SCRIPT = CLIENT_DIR / "run_everything.mjs"
AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'agui_everything_agent.py'}"


@pytest.fixture(scope="module")
def node() -> str:
    return node_with_packages("@ag-ui/client")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AguiProcess]:
    workspace = tmp_path_factory.mktemp("agui-everything")
    process = AguiProcess(
        workspace, "--agent", AGENT, "--redact", "none", "--summary", "off", "--tool-progress"
    )
    try:
        yield process.wait_healthy()
    finally:
        process.stop()


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


def test_the_real_client_applies_plan_state_diff_usage_and_reasoning(node: str, server: AguiProcess) -> None:
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


def test_progress_reaches_the_total_before_the_result(server: AguiProcess) -> None:
    events = server.run("everything-2", "r1", "everything 0")
    progress = [e["content"]["progress"] for e in of_type(events, "ACTIVITY_SNAPSHOT")]
    assert [p["value"] for p in progress] == [1, 2, 3, 4, 5] and progress[-1]["total"] == 5
