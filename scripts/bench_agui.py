#!/usr/bin/env python3
"""What the AG-UI endpoint costs: SSE events per second through it against encoding the same events
with ``EventEncoder`` alone, and the median time from a tool's progress call to its snapshot at the
client.

The endpoint is the real thing: ``acp-progress agui`` in its own process on a loopback port
(``--tool-progress --redact none``), driving ``tests/agents/progress_agent.py`` over stdio through
the client driver; this script is the HTTP client. Throughput: the agent's tool sends a burst of N
progress updates as fast as it can, each one an ``ACTIVITY_SNAPSHOT``; events/s is the number of
SSE events over the time from the POST to the last byte. The baseline parses the events received
back into their ag-ui-protocol models and times ``EventEncoder.encode`` on all of them in this
process, so the ratio says how much of an event's cost is the endpoint (agent pipe, driver,
projection, policy, canonical redactor, HTTP) rather than the encoding every AG-UI server pays.
For scale it also prints how fast the client driver alone receives the same burst from the same
agent: the ceiling any front-end on this agent's stdio stream shares.
Latency: the tool sends updates a few ms apart whose message is its ``time.monotonic()`` taken
just before sending (one system-wide clock on Linux); the client subtracts it when the snapshot
arrives. Runs alternate and the baseline is measured in the same run: these machines are shared.

Usage: python scripts/bench_agui.py [--burst 5000] [--paced 300] [--gap-ms 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from ag_ui.core import Event
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    from acp_adapter.client.driver import AgentDriver
except ImportError:  # a checkout from before the layer packages: copy this script into it
    from acp_adapter.client import AgentDriver  # type: ignore[no-redef,attr-defined]

AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'progress_agent.py'}"
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_endpoint(log: Any) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    argv = [
        sys.executable,
        "-c",
        "import sys; from acp_adapter.cli import main; sys.exit(main())",
        "agui",
        "--no-token",
        "--port",
        str(port),
        "--agent",
        AGENT,
        "--tool-progress",
        "--redact",
        "none",
        "--summary",
        "off",  # this measures tool progress: no summary activity in the stream
        "--cwd",
        tempfile.gettempdir(),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACP_PROGRESS_LOG_LEVEL": "WARNING"}
    server = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("acp-progress agui exited at start-up")
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit("acp-progress agui did not answer /health within 30 s")


def _body(prompt: str) -> dict[str, Any]:
    return {
        "threadId": f"bench-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": [{"id": "m1", "role": "user", "content": prompt}],
    }


def burst(client: httpx.Client, url: str, count: int) -> tuple[float, list[bytes]]:
    """Seconds from the POST to the last byte, and the raw SSE payloads received."""
    started = time.perf_counter()
    with client.stream("POST", url + "/", json=_body(f"burst {count}")) as response:
        response.raise_for_status()
        raw = b"".join(response.iter_raw())
    elapsed = time.perf_counter() - started
    payloads = [frame[len(b"data: ") :] for frame in raw.split(b"\n\n") if frame.startswith(b"data: ")]
    return elapsed, payloads


def encoder_rate(payloads: list[bytes], repeat: int = 3) -> float:
    """Events/s of ``EventEncoder.encode`` alone on the same events (best of ``repeat``)."""
    events = [EVENTS.validate_json(p) for p in payloads]
    encoder = EventEncoder()
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for event in events:
            encoder.encode(event)
        best = min(best, time.perf_counter() - started)
    return len(events) / best


async def driver_rate(count: int) -> float:
    """Updates/s of the same burst received by the client driver alone (no projection, no HTTP)."""
    async with AgentDriver(shlex.split(AGENT), cwd=tempfile.gettempdir()) as driver:
        session = await driver.new_session(tempfile.gettempdir())
        started = time.perf_counter()
        received = 0
        async for _ in driver.prompt(session, f"burst {count}"):
            received += 1
        return received / (time.perf_counter() - started)


def paced(client: httpx.Client, url: str, count: int, gap_ms: float) -> list[float]:
    """Per snapshot: arrival ``time.monotonic()`` minus the tool's stamp, in seconds."""
    latencies: list[float] = []
    with client.stream("POST", url + "/", json=_body(f"stamp {count} {gap_ms}")) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            arrived = time.monotonic()
            event = json.loads(line[len("data: ") :])
            if event["type"] == "ACTIVITY_SNAPSHOT" and event.get("activityType") == "TOOL_PROGRESS":
                message = event["content"]["progress"].get("message", "")
                if message.startswith("t="):
                    latencies.append(arrived - float(message[2:]))
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--burst", type=int, default=5000, help="progress updates per throughput run")
    parser.add_argument("--paced", type=int, default=300, help="progress updates per latency run")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="pause between paced updates")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each measurement")
    args = parser.parse_args()

    with tempfile.TemporaryFile() as log:
        server, url = start_endpoint(log)
        try:
            endpoint_rates: list[float] = []
            encoder_rates: list[float] = []
            driver_rates: list[float] = []
            latencies: list[float] = []
            with httpx.Client(timeout=120) as client:
                paced(client, url, 20, args.gap_ms)  # warm-up: first session, imports, JIT-free caches
                for _ in range(args.rounds):
                    elapsed, payloads = burst(client, url, args.burst)
                    snapshots = sum(b'"ACTIVITY_SNAPSHOT"' in p for p in payloads)
                    assert snapshots == args.burst, f"only {snapshots} of {args.burst} snapshots arrived"
                    endpoint_rates.append(len(payloads) / elapsed)
                    encoder_rates.append(encoder_rate(payloads))
                    got = paced(client, url, args.paced, args.gap_ms)
                    assert len(got) == args.paced, f"only {len(got)} of {args.paced} stamped snapshots"
                    latencies.extend(got)
                    driver_rates.append(asyncio.run(driver_rate(args.burst)))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(15)

    through = statistics.median(endpoint_rates)
    alone = statistics.median(encoder_rates)
    driver = statistics.median(driver_rates)
    ms = sorted(x * 1000 for x in latencies)
    p95 = ms[max(0, int(len(ms) * 0.95) - 1)]
    print(f"burst of {args.burst} progress updates, {args.rounds} rounds (median):")
    print(f"  SSE events/s through the endpoint (real HTTP, loopback): {through:10,.0f}")
    print(f"  EventEncoder.encode alone on the same events:            {alone:10,.0f}")
    print(f"  ratio endpoint / encoder alone:                          {through / alone:10.3f}")
    print(f"  (the client driver alone receives the same burst at      {driver:10,.0f} updates/s)")
    print(f"tool progress call -> snapshot at the client, {len(ms)} updates {args.gap_ms:g} ms apart:")
    print(f"  median {statistics.median(ms):.2f} ms   p95 {p95:.2f} ms   max {ms[-1]:.2f} ms")


if __name__ == "__main__":
    main()
