"""The AG-UI endpoint's lifecycle, with a real ``acp-progress agui`` process where its process is
the point: a thread outlives a restart of the server, the startup is honest (one line per failure,
nothing announced before it serves, Ctrl-C at once). A failed model call ends the run with
``RUN_ERROR`` and its reason (the endpoint and its agent in this process)."""

from __future__ import annotations

import logging
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from acp_adapter.store import open_store
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.agui_inprocess import use_in_process_agui_agents
from tests.helpers.agui_process import AguiProcess, of_type, sse_events, text_of
from tests.helpers.shared_servers import cli_in_process

PROGRESS_AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'progress_agent.py'}"


def _user_texts(events: list[dict]) -> list[str]:
    return [
        e["content"]["text"]
        for e in events
        if e.get("sessionUpdate") == "user_message_chunk" and isinstance(e.get("content"), dict)
    ]


@pytest.mark.e2e
def test_a_thread_survives_a_server_restart(tmp_path: Path) -> None:
    """The endpoint's process restarted on the same port and state directory. This project's agent
    runs inside it (the restart is the endpoint's; a real agent process stopped with the endpoint
    is the stop-signal tests' below)."""
    (tmp_path / "app.py").write_text("# TODO: persist\n")
    state = tmp_path / "state"
    env = {"ACP_PROGRESS_STATE_DIR": str(state)}
    first = AguiProcess(tmp_path, env=env, agent_inside=True).wait_healthy()
    try:
        run1 = first.run("thread-T", "run-1", "search for TODO")
    finally:
        # a serving endpoint stops within 2 s of Ctrl-C, and it announced itself only once its
        # agent had started
        stopping = time.monotonic()
        assert first.stop(signal.SIGINT) == 130, first.text()
        assert time.monotonic() - stopping < 2
    text = first.text()
    assert text.index("starting the agent") < text.index("serving AG-UI on")
    assert of_type(run1, "RUN_FINISHED") and of_type(run1, "TOOL_CALL_START")

    # the same endpoint again
    second = AguiProcess(tmp_path, env=env, port=first.port, agent_inside=True).wait_healthy()
    try:
        run2 = second.run("thread-T", "run-2", "hello")
        other = second.run("thread-U", "run-3", "hello")
    finally:
        assert second.stop() == 130, second.text()
    assert of_type(run2, "RUN_FINISHED") and of_type(other, "RUN_FINISHED")
    # the replay of run 1 is history, not part of run 2: no tool card of run 1 is streamed again
    assert not of_type(run2, "TOOL_CALL_START")
    assert "loaded its ACP session" in second.text()

    store = open_store(state, retention_days=0)
    try:
        from acp_adapter.frontends.agui.thread_store import endpoint_scope

        scope = endpoint_scope(None, "127.0.0.1", first.port, None, str(tmp_path))
        threads = dict(store.items(f"agui:threads:{scope}"))
        session_id = threads["thread-T"]["sessionId"]
        assert threads["thread-U"]["sessionId"] != session_id
        stored = store.load(session_id)
        assert stored is not None
        # one conversation: the agent was prompted twice in the same session, across the restart
        assert _user_texts(stored.events) == ["search for TODO", "hello"]
        assert len(store.list_sessions().sessions) == 2  # thread-T's and thread-U's, no third
    finally:
        store.close()


def test_a_thread_whose_agent_cannot_load_starts_over_in_a_new_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint served in this process, twice on one state directory (a restart; that the
    command names the same endpoint again is the restart test's): the second cannot have its agent
    load the thread's session. The scripted agent answers in this process too (what it cannot do
    is the point, not its process)."""
    from tests.agents.progress_agent import ProgressAgent as ScriptedAgent
    from tests.helpers.agui_http import run, run_input
    from tests.helpers.agui_inprocess import endpoint_in_process, use_in_process_test_agent

    use_in_process_test_agent(monkeypatch, PROGRESS_AGENT, ScriptedAgent)
    with endpoint_in_process(tmp_path, agent_command=PROGRESS_AGENT) as first:
        assert text_of(run(first.url, run_input("thread-T", "hi", run_id="run-1"))) == "echo: hi"
    caplog.clear()
    caplog.set_level(logging.INFO, logger="acp_progress")
    # the same endpoint again (same state directory, same thread map): the same threads
    with endpoint_in_process(tmp_path, agent_command=PROGRESS_AGENT) as second:
        run2 = run(second.url, run_input("thread-T", "again", run_id="run-2"))
    assert text_of(run2) == "echo: again" and of_type(run2, "RUN_FINISHED")
    assert "the agent cannot load sessions; starting a new conversation" in caplog.text


@pytest.mark.e2e  # the openai client asks ``uname -p`` (a process) for its platform header
def test_a_failed_model_call_ends_the_run_with_run_error_and_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint and this project's agent in this process: the run's last event is the point."""
    from acp_adapter.frontends.agui.app import create_app
    from acp_adapter.frontends.agui.endpoint import AguiOptions
    from tests.helpers.agui_http import Served, run, run_input

    use_in_process_agui_agents(monkeypatch)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        refused_port = closed.getsockname()[1]
    env = agent_env(
        ACP_PROGRESS_EMBEDDED_DELAY="0.05",
        ACP_PROGRESS_MODEL="openai",
        OPENAI_BASE_URL=f"http://127.0.0.1:{refused_port}/v1",
        ACP_PROGRESS_OPENAI_MAX_RETRIES="0",
    )
    served = Served(create_app(AguiOptions(cwd=str(tmp_path), agent_env=env))).start()
    try:
        events = run(served.url, run_input("t-fail", "hello"))
    finally:
        served.stop()
    assert not of_type(events, "RUN_FINISHED")
    (error,) = of_type(events, "RUN_ERROR")
    assert error["message"].startswith("The model request failed: ")
    assert "connection refused" in error["message"] and error["code"] == "AGENT_ERROR"


def _agui(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``acp-progress agui ARGS`` in this process, for command lines that end before anything
    serves (the exit status and stderr are what a user sees; its process proves nothing more)."""
    capsys.readouterr()
    with cli_in_process() as main:
        code = main(["agui", "--cwd", str(tmp_path), "--no-token", *args])
    return code, capsys.readouterr().err


def _stderr_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.e2e  # it tries to spawn the agent (there is none to start)
def test_a_missing_agent_is_one_line_and_nothing_is_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.agui_process import free_port

    for name, value in agent_env().items():
        monkeypatch.setenv(name, value)
    code, stderr = _agui(tmp_path, capsys, "--agent", "no-such-agent-xyz", "--port", str(free_port()))
    assert code == 1
    lines = _stderr_lines(stderr)
    failures = [line for line in lines if "no-such-agent-xyz" in line]
    assert failures == ["acp-progress agui: cannot start the agent 'no-such-agent-xyz': command not found"]
    assert not any("serving" in line or "startup failed" in line.lower() for line in lines), lines
    assert "Traceback" not in stderr


def test_a_port_in_use_is_one_line_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in agent_env().items():
        monkeypatch.setenv(name, value)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        code, stderr = _agui(tmp_path, capsys, "--port", str(port))  # no process: none may start
        took = time.monotonic() - started
    assert code == 1
    assert _stderr_lines(stderr) == [
        f"acp-progress agui: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    assert "starting the agent" not in stderr and took < 20  # no agent was started first


def _running_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_while_the_agent_starts_ends_everything_within_2s(tmp_path: Path, sig: int) -> None:
    """An agent that never answers initialize: the endpoint is still starting (the first second of
    a real start) when Ctrl-C comes. It stops at once, and the agent's process with it."""
    marker = f"agent-that-never-answers-{uuid.uuid4().hex}"
    agent = f"{sys.executable} -c 'import time, sys; time.sleep(60)' {marker}"
    served = AguiProcess(tmp_path, "--agent", agent)
    served.wait_for("starting the agent")
    deadline = time.monotonic() + 10
    while not _running_with(marker):
        assert time.monotonic() < deadline, served.text()
        time.sleep(0.02)
    started = time.monotonic()
    code = served.stop(sig, within=5)
    took = time.monotonic() - started
    assert took < 2, f"took {took:.2f}s:\n{served.text()}"
    assert code == 130, served.text()
    assert "Traceback" not in served.text() and "serving" not in served.text()
    deadline = time.monotonic() + 3
    while _running_with(marker):
        assert time.monotonic() < deadline, "the agent outlived the endpoint"
        time.sleep(0.05)


@pytest.mark.e2e
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_mid_run_ends_the_run_with_run_error_and_exits_128_plus_signal(
    tmp_path: Path, sig: int, code: int
) -> None:
    """The stream ends with its terminal event — never stops after TOOL_CALL_END (curl rc 18) with
    ~95 lines of uvicorn traceback and exit 0."""
    import threading

    served = AguiProcess(tmp_path).wait_healthy()
    events: list[dict[str, object]] = []
    failure: list[BaseException] = []

    def read() -> None:
        body = {
            "threadId": "t-stop",
            "runId": "r-stop",
            "messages": [{"id": "m", "role": "user", "content": "wait 20 seconds"}],
        }
        try:
            with httpx.stream("POST", served.url + "/", json=body, timeout=60) as response:
                events.extend(sse_events(response.iter_lines()))  # extend appends as they arrive
        except BaseException as exc:  # the assertion below reports it
            failure.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 60
    while not of_type(events, "TOOL_CALL_START"):  # the wait tool is running
        assert time.monotonic() < deadline and reader.is_alive(), (events, failure, served.text())
        time.sleep(0.05)
    started = time.monotonic()
    assert served.stop(sig, within=15) == code, served.text()
    took = time.monotonic() - started
    reader.join(30)
    assert not failure, failure
    assert events and events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    assert events[-1]["message"] == "the server is stopping" and events[-1]["code"] == "SHUTDOWN"
    assert of_type(events, "TOOL_CALL_START")  # the run was mid-tool when the signal came
    text = served.text()
    assert "Traceback" not in text and "Exception in ASGI application" not in text
    stopping = [line for line in text.splitlines() if "stopping;" in line]
    assert len(stopping) == 1 and "1 open run(s) ended" in stopping[0]
    assert took < 10, f"took {took:.1f}s"


def test_two_endpoints_on_one_state_directory_never_share_a_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Endpoint B (its own workspace) never runs thread ``main`` by loading endpoint A's session:
    its model request would carry A's confidential file. Both endpoints and this project's agent
    are served in this process, one after the other on one state directory (what the store holds
    and what B loads is the point, not their processes)."""
    from tests.helpers.agui_http import run, run_input
    from tests.helpers.agui_inprocess import endpoint_in_process

    use_in_process_agui_agents(monkeypatch)
    state = tmp_path / "state"
    a_ws, b_ws = tmp_path / "a", tmp_path / "b"
    a_ws.mkdir()
    b_ws.mkdir()
    (a_ws / "secret.md").write_text("PROJECT-A CONFIDENTIAL\n")
    env = {"ACP_PROGRESS_STATE_DIR": str(state)}
    with endpoint_in_process(a_ws, env=env) as a:
        assert "PROJECT-A CONFIDENTIAL" in str(run(a.url, run_input("main", "read secret.md", run_id="r1")))
    caplog.clear()
    caplog.set_level(logging.INFO, logger="acp_progress")
    with endpoint_in_process(b_ws, env=env) as b:
        events = run(b.url, run_input("main", "hello", run_id="r2"))
    assert of_type(events, "RUN_FINISHED")
    assert "loaded its ACP session" not in caplog.text
    assert "thread main: opened ACP session" in caplog.text  # a new session, said in the log read here
    store = open_store(state, retention_days=0)
    try:
        sessions = store.list_sessions().sessions
        assert len(sessions) == 2  # A's and a new one for B
        b_session = next(s for s in sessions if s.cwd == str(b_ws))
        stored = store.load(b_session.session_id)
        assert stored is not None and "PROJECT-A" not in str(stored.events) + str(stored.history)
    finally:
        store.close()


@pytest.mark.anyio
async def test_thread_maps_are_scoped_per_endpoint_and_never_hold_the_token() -> None:
    from acp_adapter.frontends.agui.thread_store import ThreadSessions, endpoint_scope
    from acp_adapter.store import MemoryStore

    store = MemoryStore()
    one = ThreadSessions(store, scope=endpoint_scope("shared", "h", 1, None, "/a"))
    two = ThreadSessions(store, scope=endpoint_scope(None, "h", 2, "tok", "/b"))
    one.remember("main", "sess-1", "/a")
    await one.aclose()
    assert (await one.lookup("main")) is not None and (await two.lookup("main")) is None
    assert endpoint_scope(None, "h", 1, "t1", "/a") != endpoint_scope(None, "h", 1, "t2", "/a")
    assert "t1" not in endpoint_scope(None, "h", 1, "t1", "/a")  # the token is never stored
