#!/usr/bin/env python3
"""What ``acp-progress relay`` costs: session updates per second through the relay against the same
agent driven directly, and the median latency the relay adds to one update.

Both paths are real processes over real pipes, driven by the SDK's client side as an editor would:
``direct`` spawns the scripted test agent; ``relay`` spawns ``acp-progress relay -- <the same agent>``.
Throughput: the agent sends a burst of N ``tool_call_update``s as fast as it can; updates/s is N over
the time from the prompt to its response. Latency: the agent sends updates a few ms apart, each
stamped with its ``time.monotonic()`` (one system-wide clock on Linux); the client subtracts the
stamp on arrival. Runs alternate between the two paths and the baseline is measured in the same run,
because these machines are shared and noisy.

Usage: python scripts/bench_relay.py [--burst 5000] [--paced 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import ClientCapabilities, Implementation  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402
from stamps import Stamps  # noqa: E402

AGENT = [sys.executable, str(ROOT / "tests" / "agents" / "scripted_agent.py")]
RELAY = [sys.executable, "-m", "acp_adapter.cli", "relay", "--no-heartbeat", "--"]


async def one_run(argv: list[str], mode: list[str]) -> tuple[float, Stamps]:
    client = Stamps()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with spawn_agent_process(client, argv[0], *argv[1:], *mode, env=env, cwd=str(ROOT)) as (conn, _p):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
        started = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        return time.perf_counter() - started, client


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=5000, help="updates per throughput run")
    parser.add_argument("--paced", type=int, default=300, help="updates per latency run")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="pause between paced updates")
    parser.add_argument("--rounds", type=int, default=5, help="alternating runs of each path")
    args = parser.parse_args()

    rates: dict[str, list[float]] = {"direct": [], "relay": []}
    latencies: dict[str, list[float]] = {"direct": [], "relay": []}
    for _ in range(args.rounds):
        # the two bursts of a round run back to back (see paired_rounds)
        for name, prefix in (("direct", AGENT), ("relay", RELAY + AGENT)):
            elapsed, client = await one_run(prefix, ["burst", str(args.burst)])
            assert client.count >= args.burst, f"{name}: only {client.count} updates arrived"
            rates[name].append(args.burst / elapsed)
        for name, prefix in (("direct", AGENT), ("relay", RELAY + AGENT)):
            _, client = await one_run(prefix, ["paced", str(args.paced), str(args.gap_ms)])
            latencies[name].extend(client.latencies)

    direct_rate, relay_rate = statistics.median(rates["direct"]), statistics.median(rates["relay"])
    direct_lat = statistics.median(latencies["direct"]) * 1000
    relay_lat = statistics.median(latencies["relay"]) * 1000
    print(f"throughput, {args.burst} updates, median of {args.rounds} runs:")
    print(f"  direct  {direct_rate:10.0f} updates/s")
    print(f"  relay   {relay_rate:10.0f} updates/s")
    shares = round_ratios(rates["relay"], rates["direct"])
    print(
        f"  ratio   {shares.median:10.2f}x direct (goal >= 0.7x; median of the rounds' own"
        f" ratios, {shares.spread()})"
    )
    print(
        f"latency, {len(latencies['relay'])} updates {args.gap_ms:g} ms apart, agent send -> client handler:"
    )
    print(f"  direct  {direct_lat:8.3f} ms median")
    print(f"  relay   {relay_lat:8.3f} ms median")
    print(f"  added   {relay_lat - direct_lat:8.3f} ms per update (goal <= 1 ms)")


if __name__ == "__main__":
    asyncio.run(main())
