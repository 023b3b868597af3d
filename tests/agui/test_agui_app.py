"""The AG-UI endpoint over real HTTP on loopback, driving real ACP agents over stdio.

Each app runs on uvicorn in a background thread (a real socket, real SSE); the agent behind it is
spawned by the client driver: this project's agent (embedded model, small delays) or
``tests/agents/progress_agent.py`` when a test needs progress of an exact shape. Every event read
back is validated as the ag-ui-protocol model of its type and the stream's order rules are checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from acp_adapter.config import AguiSettings
from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.observers import RunContext, RunObserver, RunOutcome
from acp_adapter.frontends.agui.policy import none_policy
from tests.agents.agui_policies import broken, counts_only
from tests.agents.progress_agent import SECRET
from tests.agents.progress_agent import ProgressAgent as ScriptedAgent
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.agui_http import Recorder, Served, assert_bad_switch_is_a_422, run, run_input, serving_all
from tests.helpers.agui_http import validated_sse_events as sse_events
from tests.helpers.agui_inprocess import use_in_process_agui_agents
from tests.helpers.agui_process import of_type, text_of
from tests.helpers.shared_servers import drive_own_agent_in_process

PROGRESS_AGENT = [sys.executable, str(ROOT / "tests" / "agents" / "progress_agent.py")]
#: in an agent's environment: this app's scripted agent runs in this process (its process proves nothing)
SCRIPTED_IN_PROCESS = "AGUI_TEST_SCRIPTED_AGENT_IN_PROCESS"
REDACTED = "[redacted]"


class Summarizer(RunObserver):
    """What a progress-summary front-end does: count updates, publish an activity as the run ends."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.updates = 0

    def observe(self, update: Any) -> None:
        self.updates += 1

    async def on_end(self, outcome: RunOutcome) -> None:
        await asyncio.sleep(0.01)  # e.g. a model call; the terminal event waits for it (bounded)
        self.context.emitter.emit_activity(
            f"{self.context.run_id}:summary",
            "PROGRESS_SUMMARY",
            {"text": f"{self.updates} updates, {outcome.status}", "token": SECRET},
        )


class Exploding(RunObserver):
    def observe(self, update: Any) -> None:
        raise RuntimeError("observer bug")

    def on_end(self, outcome: RunOutcome) -> None:
        raise RuntimeError("observer bug")


def summarizing(context: RunContext) -> RunObserver | None:
    return Summarizer(context) if context.prompt.startswith("summarize") else None


def exploding(context: RunContext) -> RunObserver | None:
    if context.prompt.startswith("summarize"):
        return Exploding()
    raise RuntimeError("factory bug")  # every other run: the factory itself fails


def make_app(recorder: Recorder, *, observers: tuple[Any, ...] = (), **kwargs: Any) -> Any:
    kwargs.setdefault("agent_env", agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"))
    return create_app(AguiOptions(run_observers=[recorder, *observers], **kwargs))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agui-ws")
    (root / "app.py").write_text("# TODO: wire the endpoint\nprint('hi')\n")
    (root / "notes.md").write_text("nothing here\n")
    (root / "lib").mkdir()
    (root / "lib" / "util.py").write_text("def f():\n    pass  # TODO later\n")
    return root


@pytest.fixture(scope="module")
def servers(workspace: Path, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[dict[str, Served]]:
    """Every app the tests need, started together (each starts its agent). ``real`` drives this
    project's agent in this process and ``global``, ``counts`` and ``none`` the scripted agent
    (what they stream is the point, not their processes); ``broken``'s scripted agent, which
    crashes on purpose, is a process of its own."""
    use_in_process_agui_agents(monkeypatch_module)
    drive_own_agent_in_process(
        monkeypatch_module,
        AgentHost,
        lambda host: host.argv == PROGRESS_AGENT and host.env.get(SCRIPTED_IN_PROCESS) == "1",
        make_agent=ScriptedAgent,
    )
    # the endpoint's settings, as the settings model reads them (create_app reads no environment)
    global_on = AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "1"}, config_file=False)
    in_process = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05", **{SCRIPTED_IN_PROCESS: "1"})
    scripted = {"agent_command": PROGRESS_AGENT, "cwd": workspace, "agent_env": in_process}
    specs: dict[str, dict[str, Any]] = {
        "real": {"cwd": workspace, "tool_progress": False},
        "global": {**scripted, "tool_progress": global_on.tool_progress},  # what acp-progress agui passes
        "counts": {**scripted, "tool_progress": True, "policy": counts_only},
        "none": {
            **scripted,
            "tool_progress": True,
            "policy": none_policy,
            "observers": (summarizing, exploding),
        },
        "broken": {
            "agent_command": PROGRESS_AGENT,
            "cwd": workspace,
            "tool_progress": True,
            "policy": broken,
        },
    }
    served: dict[str, Served] = {}
    for name, kwargs in specs.items():
        recorder = Recorder()
        served[name] = Served(make_app(recorder, **kwargs), recorder)
    with serving_all(served):
        yield served


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        yield mp


# ---------------------------------------------------------------- speaking AG-UI over HTTP


def snapshots(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in of_type(events, "ACTIVITY_SNAPSHOT") if e["activityType"] == "TOOL_PROGRESS"]


def tool_id(events: list[dict[str, Any]], name: str) -> str:
    (start,) = [e for e in of_type(events, "TOOL_CALL_START") if e["toolCallName"] == name]
    return str(start["toolCallId"])


# ---------------------------------------------------------------- the event stream


@pytest.mark.e2e
def test_health_answers_and_the_agent_started_with_the_app(servers: dict[str, Served]) -> None:
    response = httpx.get(servers["real"].url + "/health", timeout=5)
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "ok" and health["agentRunning"] is True


@pytest.mark.e2e
def test_search_run_is_valid_ordered_agui_with_progress_off_by_default(servers: dict[str, Served]) -> None:
    body = run_input("t-search", "search for TODO")
    events = run(servers["real"].url, body)
    types = [e["type"] for e in events]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == "t-search" and events[0]["runId"] == body["runId"]
    assert events[-1]["outcome"] == {"type": "success"}
    # one real tool call, bracketed; the think cards (spinner) are not AG-UI tool calls
    (start,) = of_type(events, "TOOL_CALL_START")
    assert start["toolCallName"] == "search"
    call = start["toolCallId"]
    assert json.loads("".join(e["delta"] for e in of_type(events, "TOOL_CALL_ARGS"))) == {"query": "TODO"}
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == call and "2 matches in 2 files" in result["content"]
    assert types.index("TOOL_CALL_END") < types.index("TOOL_CALL_RESULT") < types.index("TEXT_MESSAGE_START")
    assert "found 2 matches" in text_of(events)
    assert not of_type(events, "ACTIVITY_SNAPSHOT")  # tool progress is off unless asked for
    assert "Thinking" not in json.dumps(events)


@pytest.mark.e2e
def test_per_run_opt_in_publishes_default_redacted_snapshots(servers: dict[str, Served]) -> None:
    body = run_input("t-optin", "search for TODO", forwarded={"emitToolProgress": True})
    events = run(servers["real"].url, body)
    call = tool_id(events, "search")
    shots = snapshots(events)
    # the search tool reports value, total *and* message: the default policy withholds each one
    # (how many snapshots arrive depends on the reader: the agent replaces progress still queued)
    assert shots
    for shot in shots:
        assert shot == {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": f"{body['runId']}:progress:{call}",
            "activityType": "TOOL_PROGRESS",
            "content": {
                "toolCallId": call,
                "progress": {"value": REDACTED, "total": REDACTED, "message": REDACTED},
            },
            "replace": True,
        }
    types = [e["type"] for e in events]
    last_shot = max(i for i, e in enumerate(events) if e["type"] == "ACTIVITY_SNAPSHOT")
    assert types.index("TOOL_CALL_END") < types.index("ACTIVITY_SNAPSHOT")
    assert last_shot < types.index("TOOL_CALL_RESULT")  # nothing after the tool's result


@pytest.mark.e2e
def test_per_run_opt_out_and_a_bad_switch(servers: dict[str, Served]) -> None:
    off = {"emitToolProgress": False}
    events = run(servers["real"].url, run_input("t-optout", "search for TODO", forwarded=off))
    assert not of_type(events, "ACTIVITY_SNAPSHOT")
    assert_bad_switch_is_a_422(servers["real"].url, "t-optout", "search for TODO", "emitToolProgress")


@pytest.mark.e2e
def test_global_opt_in_and_per_run_opt_out(servers: dict[str, Served]) -> None:
    url = servers["global"].url
    body = run_input("t-global", "count 3")
    events = run(url, body)
    call = tool_id(events, "count")
    # a tool that reports only value/total, under the default policy
    assert [s["content"] for s in snapshots(events)] == [
        {"toolCallId": call, "progress": {"value": REDACTED, "total": REDACTED}}
    ] * 3
    assert {s["messageId"] for s in snapshots(events)} == {f"{body['runId']}:progress:{call}"}
    assert "count done" in text_of(events)
    off = run(url, run_input("t-global", "count 3", forwarded={"emitToolProgress": False}))
    assert not of_type(off, "ACTIVITY_SNAPSHOT")
    # no switch in forwardedProps (or a null one): the global setting holds
    for forwarded in ({}, {"emitToolProgress": None}, {"other": 1}):
        assert len(snapshots(run(url, run_input("t-global", "count 2", forwarded=forwarded)))) == 2


@pytest.mark.e2e
def test_counts_only_policy_publishes_counts_replacing_in_place(servers: dict[str, Served]) -> None:
    body = run_input("t-counts", "count 3", run_id="run-1")
    events = run(servers["counts"].url, body)
    call = tool_id(events, "count")
    assert call == "count-1"
    assert snapshots(events) == [
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "run-1:progress:count-1",
            "activityType": "TOOL_PROGRESS",
            "content": {"toolCallId": "count-1", "progress": {"value": i, "total": 3}},
            "replace": True,
        }
        for i in (1, 2, 3)
    ]
    # the policy also sees tool results; counts_only leaves them to the default (canonical) handling
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert result["content"] == "count finished"
    # message-only updates: counts_only keeps nothing of them, and nothing is published
    assert not snapshots(run(servers["counts"].url, run_input("t-counts", "note")))


@pytest.mark.e2e
def test_message_only_updates_have_no_value_or_total(servers: dict[str, Served]) -> None:
    events = run(servers["none"].url, run_input("t-note", "note"))
    assert [s["content"]["progress"] for s in snapshots(events)] == [
        {"message": "warming up"},
        {"message": "halfway there"},
    ]


@pytest.mark.e2e
def test_none_policy_still_passes_the_canonical_redactor(servers: dict[str, Served]) -> None:
    events = run(servers["none"].url, run_input("t-secret", "secret"))
    (shot,) = snapshots(events)
    progress = shot["content"]["progress"]
    assert progress["value"] == 1
    assert progress["message"].startswith("token ") and SECRET not in progress["message"]
    assert SECRET not in json.dumps(events)


@pytest.mark.e2e
def test_a_policy_that_raises_fails_closed_and_the_run_goes_on(servers: dict[str, Served]) -> None:
    events = run(servers["broken"].url, run_input("t-broken", "count 2"))
    assert not snapshots(events)
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert result["content"] == REDACTED  # the result was withheld too
    assert events[-1]["type"] == "RUN_FINISHED" and "count done" in text_of(events)


@pytest.mark.e2e
def test_an_agent_crash_is_a_run_error_and_the_next_run_restarts_it(servers: dict[str, Served]) -> None:
    served = servers["broken"]
    pid = served.app.state.agui.host.pid
    events = run(served.url, run_input("t-crash", "crash"))
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "AGENT_CRASHED"
    assert "exited with code 3" in events[-1]["message"]
    assert text_of(events) == "about to crash"  # what arrived before the crash, closed properly
    again = run(served.url, run_input("t-crash", "hello"))
    assert text_of(again) == "echo: hello"
    assert served.app.state.agui.host.pid not in (None, pid)


@pytest.mark.e2e
def test_many_updates_on_one_card_replace_one_activity(servers: dict[str, Served]) -> None:
    events = run(servers["counts"].url, run_input("t-burst", "burst 200"))
    shots = snapshots(events)
    assert len(shots) == 200 and len({s["messageId"] for s in shots}) == 1
    assert shots[-1]["content"]["progress"] == {"value": 200, "total": 200}


# ---------------------------------------------------------------- bad input


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", "the request body is empty"),
        (b"not json", "invalid RunAgentInput: body: Invalid JSON"),
        (b'{"runId": "r", "messages": []}', "invalid RunAgentInput: threadId: Field required"),
        (b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "wizard"}]}', "messages.0"),
        (
            b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "assistant", '
            b'"content": "hi"}]}',
            "no user message with text",
        ),
    ],
)
def test_invalid_run_input_is_a_422_with_a_clear_message(
    servers: dict[str, Served], body: bytes, expected: str
) -> None:
    response = httpx.post(
        servers["real"].url + "/", content=body, headers={"Content-Type": "application/json"}, timeout=5
    )
    assert response.status_code == 422
    assert expected in response.json()["detail"]


@pytest.mark.e2e
def test_latest_user_message_is_the_prompt(servers: dict[str, Served]) -> None:
    body = run_input("t-history", "ignored")
    body["messages"] = [
        {"id": "1", "role": "user", "content": "count 9"},
        {"id": "2", "role": "assistant", "content": "earlier answer"},
        {
            "id": "3",
            "role": "user",
            "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "there"}],
        },
    ]
    events = run(servers["none"].url, body)
    assert text_of(events) == "echo: hello\nthere"


# ---------------------------------------------------------------- threads, concurrency, disconnects


@dataclass
class OpenRun:
    """A run whose stream is being read. Holding ``events`` matters: a line iterator that is
    garbage-collected closes the connection, which is a disconnect."""

    response: httpx.Response
    events: Iterator[dict[str, Any]]
    seen: list[dict[str, Any]]

    def close(self) -> None:
        self.response.close()


def _open_until(client: httpx.Client, url: str, body: dict[str, Any], kind: str) -> OpenRun:
    """Start a run and read its stream until an event of ``kind`` arrived; the stream stays open."""
    request = client.build_request("POST", url + "/", json=body, headers={"Accept": "text/event-stream"})
    response = client.send(request, stream=True)
    assert response.status_code == 200
    opened = OpenRun(response, sse_events(response.iter_lines()), [])
    for event in opened.events:
        opened.seen.append(event)
        if event["type"] == kind:
            return opened
    raise AssertionError(f"the stream ended without {kind}: {[e['type'] for e in opened.seen]}")


@pytest.mark.e2e
def test_a_second_run_on_a_busy_thread_is_a_409(servers: dict[str, Served]) -> None:
    served = servers["real"]
    first = run_input("t-busy", "wait 3 seconds")
    with httpx.Client(timeout=10) as client:
        response = _open_until(client, served.url, first, "TOOL_CALL_START")
        try:
            refused = httpx.post(served.url + "/", json=run_input("t-busy", "hello"), timeout=5)
            assert refused.status_code == 409
            detail = refused.json()["detail"]
            assert "already has a run in progress" in detail and first["runId"] in detail
            # another thread is served meanwhile, by the same agent
            other = run(served.url, run_input("t-other", "hello"))
            assert other[-1]["type"] == "RUN_FINISHED"
        finally:
            response.close()  # disconnect: cancels the waiting run
    assert served.recorder.wait(first["runId"]).outcome is not None


@pytest.mark.e2e
def test_disconnect_cancels_the_turn_and_the_thread_serves_the_next_run(servers: dict[str, Served]) -> None:
    served = servers["real"]
    first = run_input("t-gone", "wait 5 seconds")
    started = time.monotonic()
    with httpx.Client(timeout=10) as client:
        response = _open_until(client, served.url, first, "TOOL_CALL_START")
        response.close()
    record = served.recorder.wait(first["runId"], within=5)
    assert time.monotonic() - started < 4, "the 5 s tool was not cancelled"
    assert record.outcome == RunOutcome("cancelled", stop_reason="cancelled", abandoned=True)
    # no orphan card: every card the agent opened in that turn reached a terminal status
    for call_id, updates in record.cards().items():
        assert updates[-1].status in ("completed", "failed"), (call_id, updates[-1])
    # the agent keeps serving: the next run on the same thread, in the same ACP session
    second = run_input("t-gone", "search for TODO")
    events = run(served.url, second)
    assert events[-1]["type"] == "RUN_FINISHED" and "found 2 matches" in text_of(events)
    assert served.recorder.wait(second["runId"]).context.session_id == record.context.session_id


@pytest.mark.e2e
def test_a_run_right_after_a_disconnect_waits_for_the_cancel(servers: dict[str, Served]) -> None:
    served = servers["none"]
    first = run_input("t-quick", "hang")
    with httpx.Client(timeout=10) as client:
        response = _open_until(client, served.url, first, "TOOL_CALL_START")
        response.close()
    events = run(served.url, run_input("t-quick", "hello"))  # sent at once, while cancelling
    assert text_of(events) == "echo: hello"
    assert served.recorder.wait(first["runId"]).outcome == RunOutcome(
        "cancelled", stop_reason="cancelled", abandoned=True
    )


@pytest.mark.e2e
def test_run_observers_see_the_stream_and_publish_before_the_terminal_event(
    servers: dict[str, Served],
) -> None:
    events = run(servers["none"].url, run_input("t-summary", "summarize this", run_id="run-sum"))
    assert text_of(events) == "echo: summarize this"  # the exploding observer did not break the run
    (summary,) = [e for e in of_type(events, "ACTIVITY_SNAPSHOT") if e["activityType"] != "TOOL_PROGRESS"]
    assert events.index(summary) < len(events) - 1 and events[-1]["type"] == "RUN_FINISHED"
    assert summary["messageId"] == "run-sum:summary" and summary["activityType"] == "PROGRESS_SUMMARY"
    assert summary["content"]["text"] == "1 updates, success"
    assert SECRET not in json.dumps(summary)  # the canonical redactor runs on observers' activities too


@pytest.mark.e2e
def test_one_session_per_thread_reused_across_runs(servers: dict[str, Served]) -> None:
    served = servers["none"]
    ids = []
    for thread in ("t-a", "t-a", "t-b", "t-a"):
        body = run_input(thread, "hello")
        run(served.url, body)
        ids.append(served.recorder.wait(body["runId"]).context.session_id)
    assert ids[0] == ids[1] == ids[3] and ids[2] != ids[0]


@pytest.mark.e2e
def test_a_session_the_agent_forgot_is_replaced_transparently(servers: dict[str, Served]) -> None:
    served = servers["none"]
    first = run_input("t-forget", "forget")
    assert text_of(run(served.url, first)) == "forgotten"
    second = run_input("t-forget", "hello")
    assert text_of(run(served.url, second)) == "echo: hello"  # not a RUN_ERROR for the rest of time
    old = served.recorder.wait(first["runId"]).context.session_id
    assert served.recorder.wait(second["runId"]).context.session_id not in (None, old)


@pytest.mark.e2e
def test_permission_requests_are_denied_by_default(servers: dict[str, Served], workspace: Path) -> None:
    events = run(servers["real"].url, run_input("t-perm", "run `touch created.txt`"))
    (result,) = of_type(events, "TOOL_CALL_RESULT")
    assert "Permission denied automatically" in result["content"], result
    assert not (workspace / "created.txt").exists()
    assert events[-1]["type"] == "RUN_FINISHED"


# ---------------------------------------------------------------- the app as a library


def test_create_app_rejects_bad_arguments_before_serving(tmp_path: Path) -> None:
    from acp_adapter.client.driver import AgentStartError
    from acp_adapter.frontends.agui.policy import PolicyError

    with pytest.raises(PolicyError):
        create_app(AguiOptions(policy="no_such_module_xyz:redact"))
    with pytest.raises(AgentStartError):
        create_app(AguiOptions(agent_command="'unbalanced"))
    with pytest.raises(ValueError, match="not a directory"):
        create_app(AguiOptions(cwd=tmp_path / "missing"))


@pytest.mark.e2e
def test_a_host_mounts_the_app_and_runs_its_lifespan(workspace: Path) -> None:
    """The README's embedding: mount under a path, enter the app's lifespan from the host's."""
    agui = make_app(Recorder(), agent_command=PROGRESS_AGENT, cwd=workspace)

    @contextlib.asynccontextmanager
    async def lifespan(host: FastAPI) -> AsyncIterator[None]:
        async with agui.router.lifespan_context(agui):
            yield

    host = FastAPI(lifespan=lifespan)
    host.mount("/agui", agui)
    served = Served(host).start()
    try:
        pid = agui.state.agui.host.pid
        assert pid is not None  # started with the host, before any run
        os.kill(pid, 0)
        events = run(served.url + "/agui", run_input("t-mounted", "hello"))
        assert text_of(events) == "echo: hello"
        assert httpx.get(served.url + "/agui/health", timeout=5).json()["threads"] == 1
    finally:
        served.stop()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the agent outlived the app")
