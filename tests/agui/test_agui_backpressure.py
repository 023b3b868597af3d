"""A run's outbox is bounded behind a reader that stops reading (every input is bounded).

A :class:`RunEmitter` that queued every event would let a stalled SSE reader grow it without
limit. Past ``max_queued`` events a snapshot replaces its activity's queued one (latest wins)
and the update pump waits in ``writable()``; text and terminal events are never dropped.
The last test stalls a real SSE reader over a real socket.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
import time
from typing import Any

import pytest
from acp import update_agent_message_text

from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.limits import EndpointLimits
from acp_adapter.frontends.agui.policy import none_policy
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.tools import build_tool_complete, build_tool_progress, build_tool_start
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.agui_checks import check_order, wire
from tests.helpers.agui_http import Served

PROGRESS_AGENT = [sys.executable, str(ROOT / "tests" / "agents" / "progress_agent.py")]


def _emitter(loop: asyncio.AbstractEventLoop, max_queued: int) -> RunEmitter:
    projection = RunProjection("t", "r", emit_tool_progress=True, policy=none_policy)
    emitter = RunEmitter(projection, loop, max_queued=max_queued)
    emitter.start()
    return emitter


async def _pump(emitter: RunEmitter, updates: list[Any]) -> int:
    """What ``ActiveRun`` does: feed, then wait while the reader is behind. Returns updates fed."""
    fed = 0
    for update in updates:
        emitter.feed(update)
        fed += 1
        await emitter.writable()
    return fed


def test_a_stalled_reader_holds_text_back_instead_of_growing_the_queue() -> None:
    async def scenario() -> None:
        emitter = _emitter(asyncio.get_running_loop(), max_queued=32)
        chunks = [update_agent_message_text(f"chunk {i} ") for i in range(500)]
        pump = asyncio.create_task(_pump(emitter, chunks))
        await asyncio.sleep(0.05)
        assert not pump.done(), "the pump went on although nobody reads"
        assert emitter.queued <= 33  # max_queued, plus the one update that found it full
        received: list[Any] = []
        while not pump.done() or emitter.queued:  # the reader comes back: everything arrives
            received += emitter.drain()
            await asyncio.sleep(0)
        await pump
        emitter.finish()
        received += emitter.drain()
        events = wire(received)
        check_order(events)
        text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == "".join(f"chunk {i} " for i in range(500))  # nothing lost, in order
        assert emitter.coalesced == 0

    asyncio.run(scenario())


def test_snapshots_of_one_activity_coalesce_while_the_reader_is_stalled() -> None:
    async def scenario() -> None:
        emitter = _emitter(asyncio.get_running_loop(), max_queued=16)
        updates: list[Any] = [build_tool_start("c1", "Counting", "other")]
        updates += [build_tool_progress("c1", value=i, total=10_000) for i in range(1, 10_001)]
        # 10,000 snapshots of one activity never make the pump wait: they replace each other
        fed = await asyncio.wait_for(_pump(emitter, updates), 5)
        assert fed == len(updates)
        assert emitter.queued <= 16 and emitter.coalesced > 9_900
        done = asyncio.create_task(_pump(emitter, [build_tool_complete("c1", "counted")]))
        await asyncio.sleep(0.01)
        events = wire(emitter.drain())
        await done
        emitter.finish()
        events += wire(emitter.drain())
        check_order(events)
        shots = [e for e in events if e["type"] == "ACTIVITY_SNAPSHOT"]
        assert shots[-1]["content"]["progress"] == {"value": 10_000, "total": 10_000}  # latest wins
        types = [e["type"] for e in events]
        assert types.index("TOOL_CALL_RESULT") > max(
            i for i, t in enumerate(types) if t == "ACTIVITY_SNAPSHOT"
        )
        assert types[-1] == "RUN_FINISHED"

    asyncio.run(scenario())


def test_while_the_reader_keeps_up_every_snapshot_is_delivered() -> None:
    async def scenario() -> None:
        emitter = _emitter(asyncio.get_running_loop(), max_queued=16)
        updates: list[Any] = [build_tool_start("c1", "Counting", "other")]
        updates += [build_tool_progress("c1", value=i, total=100) for i in range(1, 101)]
        received: list[Any] = []
        for update in updates:
            emitter.feed(update)
            received += emitter.drain()
        shots = [e for e in wire(received) if e["type"] == "ACTIVITY_SNAPSHOT"]
        assert [s["content"]["progress"]["value"] for s in shots] == list(range(1, 101))
        assert emitter.coalesced == 0

    asyncio.run(scenario())


def test_a_disconnect_releases_a_waiting_pump() -> None:
    async def scenario() -> None:
        emitter = _emitter(asyncio.get_running_loop(), max_queued=16)
        pump = asyncio.create_task(
            _pump(emitter, [update_agent_message_text(f"chunk {i} ") for i in range(100)])
        )
        await asyncio.sleep(0.02)
        assert not pump.done()
        threading.Thread(target=emitter.abandon).start()  # from another thread, as a callback would
        assert await asyncio.wait_for(pump, 2) == 100  # the rest is ignored, nothing waits for ever

    asyncio.run(scenario())


@pytest.mark.e2e
def test_a_real_sse_reader_that_stops_reading_does_not_grow_the_run(tmp_path: Any) -> None:
    """An SSE client that reads nothing: the run's queue stays at its bound, the agent is held,
    and when the client reads again the stream is valid and ends with the latest progress."""
    app = create_app(
        AguiOptions(
            agent_command=PROGRESS_AGENT,
            policy=none_policy,
            tool_progress=True,
            cwd=tmp_path,
            agent_env=agent_env(),
            limits=EndpointLimits(max_queued_events=64),
        )
    )
    served = Served(app)
    # small kernel buffers (accepted sockets inherit the listener's): the stall reaches the app soon
    served._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    served.start()
    try:
        port = int(served.url.rsplit(":", 1)[1])
        request = json.dumps(
            {
                "threadId": "t-stall",
                "runId": "r-stall",
                "messages": [{"id": "m1", "role": "user", "content": "text 8000"}],
            }
        ).encode()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port
            + f"Content-Length: {len(request)}\r\n\r\n".encode()
            + request
        )
        service = app.state.agui
        deadline = time.monotonic() + 10
        while service.threads.get("t-stall") is None or service.threads.get("t-stall").active is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        emitter = service.threads.get("t-stall").active.context.emitter
        peak = 0
        for _ in range(100):  # one second of a reader that reads nothing
            peak = max(peak, emitter.queued)
            time.sleep(0.01)
        assert 0 < peak <= 64 + 4, peak
        assert not emitter.closed, "8,000 chunks cannot have gone through a reader that reads nothing"
        data = b""
        sock.settimeout(10)
        while b'"RUN_FINISHED"' not in data:
            chunk = sock.recv(1 << 20)
            assert chunk, "the stream ended without RUN_FINISHED"
            data += chunk
        sock.close()
        assert data.count(b'"TEXT_MESSAGE_CONTENT"') == 8_000
    finally:
        served.stop()
