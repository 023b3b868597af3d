"""An AG-UI app served on loopback in this process and spoken to over real HTTP: the app on uvicorn
in a thread (:class:`Served`), a run observer that records every run (:class:`Recorder`), a run's
input, its event stream read back with every event validated as its ag-ui-protocol model and the
stream's order rules checked (:func:`run`)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from acp_adapter.frontends.agui.observers import RunContext, RunObserver, RunOutcome
from tests.helpers.agui_checks import check_order, parse_wire


@dataclass
class RunRecord:
    context: RunContext
    updates: list[Any] = field(default_factory=list)
    outcome: RunOutcome | None = None
    ended: threading.Event = field(default_factory=threading.Event)

    def cards(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for update in self.updates:
            call_id = getattr(update, "tool_call_id", None)
            if call_id is not None:
                out.setdefault(call_id, []).append(update)
        return out


class Recorder:
    """A ``run_observers`` factory that keeps every run's context, updates and outcome by runId."""

    def __init__(self) -> None:
        self.runs: dict[str, RunRecord] = {}

    def __call__(self, context: RunContext) -> RunObserver:
        record = self.runs[context.run_id] = RunRecord(context)

        class Observer(RunObserver):
            def observe(self, update: Any) -> None:
                record.updates.append(update)

            def on_end(self, outcome: RunOutcome) -> None:
                record.outcome = outcome
                record.ended.set()

        return Observer()

    def wait(self, run_id: str, within: float = 5.0) -> RunRecord:
        deadline = time.monotonic() + within
        while run_id not in self.runs and time.monotonic() < deadline:
            time.sleep(0.01)
        record = self.runs[run_id]
        assert record.ended.wait(max(0.0, deadline - time.monotonic())), f"run {run_id} did not end"
        return record


class Served:
    """``create_app(...)`` on uvicorn in a thread, on a loopback socket bound before it starts."""

    def __init__(self, app: Any, recorder: Recorder | None = None) -> None:
        self.app = app
        self.recorder = recorder or Recorder()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_config=None, lifespan="on", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, name="agui-test-server", daemon=True
        )

    def start(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self._thread.is_alive() and time.monotonic() < deadline, "the AG-UI app did not start"
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(15)
        self._sock.close()


@contextlib.contextmanager
def serving_all(served: dict[str, Served]) -> Iterator[dict[str, Served]]:
    """Start every endpoint of ``served`` at once (each waits for its own start), stop them all after."""
    with ThreadPoolExecutor(len(served)) as pool:
        list(pool.map(Served.start, served.values()))
    try:
        yield served
    finally:
        with ThreadPoolExecutor(len(served)) as pool:
            list(pool.map(Served.stop, served.values()))


def run_input(
    thread_id: str, prompt: str, *, run_id: str | None = None, forwarded: Any = None, **extra: Any
) -> dict[str, Any]:
    """The body of a run of ``prompt`` on ``thread_id`` (``forwarded`` as its ``forwardedProps``)."""
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": run_id or f"run-{uuid.uuid4().hex[:8]}",
        "messages": [{"id": f"m-{uuid.uuid4().hex[:8]}", "role": "user", "content": prompt}],
        **extra,
    }
    if forwarded is not None:
        body["forwardedProps"] = forwarded
    return body


def validated_sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON payload of each SSE ``data:`` line, validated as its ag-ui-protocol model."""
    for line in lines:
        if line.startswith("data: "):
            event = json.loads(line[len("data: ") :])
            parse_wire(event)
            yield event


def assert_bad_switch_is_a_422(url: str, thread_id: str, prompt: str, switch: str) -> None:
    """A per-run ``forwardedProps`` switch that is not a bool is refused with 422, naming it."""
    body = run_input(thread_id, prompt, forwarded={switch: "yes"})
    response = httpx.post(url + "/", json=body, timeout=5)
    assert response.status_code == 422
    assert f"{switch} must be true or false" in response.json()["detail"]


def run(url: str, body: dict[str, Any], timeout: float = 15.0) -> list[dict[str, Any]]:
    """POST ``body`` to the app at ``url``: its event stream, each event validated, the order checked."""
    with (
        httpx.Client(timeout=timeout) as client,
        client.stream("POST", url + "/", json=body, headers={"Accept": "text/event-stream"}) as response,
    ):
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(validated_sse_events(response.iter_lines()))
    check_order(events)
    return events
