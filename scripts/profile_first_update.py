#!/usr/bin/env python3
"""Every Python call on the path from ``session/prompt`` to the think card, counted in process.

The agent (``ProgressAgent`` with ``run_agent.AIAgent``, as ``serve`` builds it, on the connection
``agent_connection`` makes) and an SDK client share one event loop, over the SDK's in-memory
transports or (``--transport stdio``) JSON lines on a socket pair with the agent reading them as
``serve`` reads its stdio. After a few warm-up prompts, the profiler (``sys.setprofile``) is
switched on just before the client sends a prompt and off once the agent's transport has sent the
think card's ``tool_call``, so what it counts is the client's request and the agent's whole path to
its first update: the work that stands between a person's prompt and the spinner (in a real editor
the two sides are processes of their own, so what the agent does after the card is sent does not
delay it). It counts the event loop's thread only (the agent loop's worker thread starts after the
card is out).

It prints the number of Python calls (median of ``--prompts`` profiled prompts; C calls apart),
the calls per package, and with ``--calls`` every function called on the path, in the order of its
first call, with how often. Point ``PYTHONPATH`` at a checkout to profile that checkout, e.g. an
older one to compare::

    PYTHONPATH=/path/to/old python scripts/profile_first_update.py --calls

The count is exact for one run of the code, not a time: ``scripts/bench_spinner_latency.py`` gives
the time, against a bare SDK agent measured in the same run.

``--timed N`` adds the CPU time the event loop's thread spends on the path (the median of N
more prompts, without the profiler): less noisy than a wall-clock time on a busy machine, and
still no substitute for it.

Usage: python scripts/profile_first_update.py [--prompts 5] [--warm 5] [--calls] [--timed 0]
       [--transport memory|stdio] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class CallCounter:
    """A ``sys.setprofile`` hook: Python calls by function, in the order of their first call."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.c_calls = 0

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            module = frame.f_globals.get("__name__", "?")
            self.calls[f"{module}:{code.co_qualname}"] += 1
        elif event == "c_call":
            self.c_calls += 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def package_of(function: str) -> str:
    """The top-level package of a ``module:qualname`` (``acp_adapter``, ``acp``, ``pydantic`` …)."""
    return function.split(":", 1)[0].split(".", 1)[0]


def is_think_card(message: dict[str, Any]) -> bool:
    """Whether a JSON-RPC message is a ``session/update`` opening a think card."""
    update = (message.get("params") or {}).get("update") or {}
    return message.get("method") == "session/update" and update.get("kind") == "think"


class ThinkCardWatch:
    """The agent's transport, watched: stops the profiler (or the clock) once the current prompt's
    think card has been sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.counter: CallCounter | None = None
        self.profiled: list[CallCounter] = []
        #: the thread's CPU time (ns) when the timed prompt was sent, and each timed path's
        self.since: int | None = None
        self.cpu_ns: list[int] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.inner.send(message)
        if is_think_card(message):
            self.card_sent()

    async def receive(self) -> dict[str, Any] | None:
        message: dict[str, Any] | None = await self.inner.receive()
        return message

    async def close(self) -> None:
        await self.inner.close()

    def card_sent(self) -> None:
        if self.counter is not None:
            sys.setprofile(None)
            self.profiled.append(self.counter)
            self.counter = None
        if self.since is not None:
            self.cpu_ns.append(time.thread_time_ns() - self.since)
            self.since = None

    @property
    def waiting(self) -> bool:
        return self.counter is not None or self.since is not None


class Client:
    """The SDK client's side: takes the updates (the agent's transport tells when the card went)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def connect(agent: Any, transport: str) -> tuple[ThinkCardWatch, Any, Any]:
    """The agent's watched transport, its connection (not listening yet) and the client's, over the
    SDK's in-memory transports (``memory``) or over a socket pair with the agent on the package's
    JSON-RPC stream, as ``serve`` has it on its stdio (``stdio``: JSON lines both ways)."""
    from acp.core import ClientSideConnection

    from acp_adapter.server import agent_connection

    client: Any = Client()
    if transport == "memory":
        from acp._transport import memory_transport_pair

        agent_end, client_end = memory_transport_pair()
        watch = ThinkCardWatch(agent_end)
        return watch, agent_connection(agent, watch), ClientSideConnection(client, client_end)
    from acp_adapter.protocol import JsonRpcStream, StreamLimits

    agent_socket, client_socket = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=agent_socket)
    client_reader, client_writer = await asyncio.open_connection(sock=client_socket)
    stream = JsonRpcStream(agent_reader, agent_writer, StreamLimits.from_settings(agent.settings.streams))
    watch = ThinkCardWatch(stream)
    return watch, agent_connection(agent, watch), ClientSideConnection(client, client_writer, client_reader)


async def profile(prompts: int, warm: int, transport: str, timed: int) -> ThinkCardWatch:
    """Prompt an in-process agent ``warm`` times, then ``prompts`` times under the profiler, then
    ``timed`` times on the thread's CPU clock (no profiler)."""
    from acp import PROTOCOL_VERSION, text_block

    from acp_adapter.config import Settings
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    agent = ProgressAgent(Settings.from_env(), turn_runner=AIAgent)
    watch, conn, client = await connect(agent, transport)
    listening = asyncio.ensure_future(conn.listen())
    try:
        await client.initialize(protocol_version=PROTOCOL_VERSION)
        session = await client.new_session(cwd=str(ROOT), mcp_servers=[])
        for index in range(warm + prompts + timed):
            if index >= warm + prompts:
                watch.since = time.thread_time_ns()
            elif index >= warm:
                watch.counter = CallCounter()
                sys.setprofile(watch.counter)
            await client.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            sys.setprofile(None)
            if watch.waiting:
                raise RuntimeError("the prompt was answered without a think card")
    finally:
        sys.setprofile(None)
        await client.close()
        await conn.close()
        listening.cancel()
        agent.shutdown()
    return watch


def report(watch: ThinkCardWatch, show_calls: bool) -> dict[str, Any]:
    profiled = watch.profiled
    totals = [counter.total for counter in profiled]
    typical = min(profiled, key=lambda counter: abs(counter.total - statistics.median(totals)))
    by_package: Counter[str] = Counter()
    for function, count in typical.calls.items():
        by_package[package_of(function)] += count
    print(f"Python calls from session/prompt to the think card: median {statistics.median(totals):g}")
    print(f"  per profiled prompt: {', '.join(map(str, totals))}")
    print(f"  C calls (the typical prompt): {typical.c_calls}")
    print("  by package (the typical prompt):")
    for package, count in by_package.most_common():
        print(f"    {count:5d}  {package}")
    cpu_us = statistics.median(watch.cpu_ns) / 1000 if watch.cpu_ns else None
    cpu_low_us = sorted(watch.cpu_ns)[len(watch.cpu_ns) // 10] / 1000 if watch.cpu_ns else None
    if cpu_us is not None:
        print(
            f"  CPU time of the path (no profiler, {len(watch.cpu_ns)} prompts):"
            f" median {cpu_us:.1f} µs, 10th percentile {cpu_low_us:.1f} µs"
        )
    if show_calls:
        print("  every function, in the order of its first call (calls × function):")
        for function, count in typical.calls.items():
            print(f"    {count:3d} × {function}")
    return {
        "median_calls": statistics.median(totals),
        "cpu_median_us": cpu_us,
        "cpu_p10_us": cpu_low_us,
        "calls": totals,
        "c_calls": typical.c_calls,
        "by_package": dict(by_package),
        "functions": dict(typical.calls),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=5, help="prompts profiled (the median is reported)")
    parser.add_argument("--warm", type=int, default=5, help="prompts sent first, not profiled")
    parser.add_argument(
        "--timed", type=int, default=0, help="prompts then timed on the thread's CPU clock (median)"
    )
    parser.add_argument("--calls", action="store_true", help="list every function called on the path")
    parser.add_argument(
        "--transport",
        choices=("memory", "stdio"),
        default="memory",
        help="the SDK's in-memory transports, or JSON lines over a socket pair as serve reads its stdio",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as one JSON object to FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-profile-state-") as state:
        # as bench_spinner_latency.py runs the agent: a 20 ms model, no heartbeats, and never the
        # user's state or configuration
        os.environ.update(
            {
                "ACP_PROGRESS_EMBEDDED_DELAY": "0.02",
                "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
                "ACP_PROGRESS_HEARTBEAT_DISABLED": "1",
                "ACP_PROGRESS_STATE_DIR": str(Path(state) / "sessions"),
                "XDG_STATE_HOME": str(Path(state) / "xdg-state"),
                "ACP_PROGRESS_CONFIG_DIR": str(Path(state) / "config"),
            }
        )
        if str(ROOT) not in sys.path:
            sys.path.append(str(ROOT))  # run_agent.py; a PYTHONPATH checkout comes first
        watch = asyncio.run(profile(args.prompts, args.warm, args.transport, args.timed))
        figures = report(watch, args.calls)
    if args.json:
        Path(args.json).write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
