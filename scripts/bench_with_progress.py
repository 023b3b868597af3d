#!/usr/bin/env python3
"""What ``with_progress(agent)`` costs, against the same agent bare, in the same run.

1. **Update latency.** The relay tests' scripted SDK agent (``tests/agents/wrapped_agent.py scripted
   prompted``, one process a side, prompted ``paced N MS``) sends N ``tool_call_update``s a few ms
   apart, each stamped with its ``time.monotonic()`` (one clock for every process on Linux); the
   SDK's client side subtracts the stamp on arrival. ``bare`` serves the agent with
   ``acp.run_agent(agent)``, ``wrapped`` with ``acp.run_agent(with_progress(agent))``; runs
   alternate and the ratio is the median of the rounds' own ratios (goal ≤ 1.2×). A burst of
   updates sent as fast as possible (prompted ``burst N``) gives the throughput ratio.
2. **Prompt → think card.** A slow SDK agent whose model thinks 20 ms, wrapped with
   ``think_after=0`` (the card as early as the wrapper can show it), against this project's own agent
   (``python -m acp_adapter``, whose embedded model also thinks 20 ms) — the time from sending
   ``session/prompt`` to the ``kind="think"`` card's arrival, prompts ``--idle`` seconds apart, all
   processes up at once and prompted in alternating rounds (``scripts/bench_spinner_latency.py``'s
   harness). A bare SDK agent that answers with one update at once is the floor (goal: the wrapped
   agent's card as fast as our own agent's).

Usage: python scripts/bench_with_progress.py [--paced 300] [--burst 2000] [--rounds 6] [--runs 60]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from bench_spinner_latency import BARE_AGENT, Side, compare, describe, measure_interleaved, running
from paired_rounds import round_ratios
from stamps import Stamps

ROOT = Path(__file__).resolve().parent.parent
WRAPPED = [sys.executable, str(ROOT / "tests" / "agents" / "wrapped_agent.py")]


class Served:
    """One agent process (bare or wrapped) kept up for every round: the scripted agent in its
    ``prompted`` mode, so each prompt's words pick the run (a burst or paced updates)."""

    def __init__(self, stack: contextlib.AsyncExitStack, bare: bool) -> None:
        self.stack, self.bare = stack, bare
        self.client = Stamps()

    async def start(self, env: dict[str, str]) -> Served:
        argv = [*WRAPPED, *(["--bare"] if self.bare else []), "scripted", "prompted"]
        devnull = self.stack.enter_context(open(os.devnull, "wb"))  # noqa: SIM115 - closed by the stack
        self.conn, _process = await self.stack.enter_async_context(
            spawn_agent_process(
                self.client, argv[0], *argv[1:], env=env, cwd=str(ROOT), transport_kwargs={"stderr": devnull}
            )
        )
        await self.conn.initialize(protocol_version=PROTOCOL_VERSION)
        self.session_id = (await self.conn.new_session(cwd=str(ROOT), mcp_servers=[])).session_id
        await self.prompt("stream")  # warm up: the first prompt of a process pays for its imports
        return self

    async def prompt(self, run: str) -> float:
        self.client.count, self.client.latencies = 0, []
        started = time.perf_counter()
        await self.conn.prompt(session_id=self.session_id, prompt=[text_block(run)])
        return time.perf_counter() - started


async def update_latency(args: argparse.Namespace, env: dict[str, str]) -> None:
    latency: dict[bool, list[float]] = {True: [], False: []}
    per_round: dict[bool, list[float]] = {True: [], False: []}
    rates: dict[bool, list[float]] = {True: [], False: []}
    async with contextlib.AsyncExitStack() as stack:
        served = {bare: await Served(stack, bare).start(env) for bare in (True, False)}
        burst_run, paced_run = f"burst {args.burst}", f"paced {args.paced} {args.gap_ms}"
        for round_number in range(args.rounds):
            # who goes first alternates: the first of a round runs on a colder machine
            order = (True, False) if round_number % 2 == 0 else (False, True)
            for bare in order:
                elapsed = await served[bare].prompt(burst_run)
                assert served[bare].client.count >= args.burst, "every update of the burst arrives"
                rates[bare].append(args.burst / elapsed)
            for bare in order:
                await served[bare].prompt(paced_run)
                stamps = served[bare].client.latencies
                assert len(stamps) == args.paced, "every stamped update arrives"
                latency[bare].extend(stamps)
                per_round[bare].append(statistics.median(stamps))
    bare_ms, wrapped_ms = (statistics.median(latency[b]) * 1000 for b in (True, False))
    shares = round_ratios(per_round[False], per_round[True])
    print(
        f"update latency, {args.paced} updates {args.gap_ms:g} ms apart x {args.rounds} rounds,"
        " agent send -> client:"
    )
    print(f"  bare     {bare_ms:8.3f} ms median")
    print(f"  wrapped  {wrapped_ms:8.3f} ms median  ({wrapped_ms - bare_ms:+.3f} ms)")
    print(f"  ratio of the medians {wrapped_ms / bare_ms:.2f}x")
    print(
        f"  ratio    {shares.median:8.2f}x bare"
        f" (goal <= 1.2x; median of the rounds' own ratios, {shares.spread()})"
    )
    throughput = round_ratios(rates[False], rates[True])
    print(f"throughput, bursts of {args.burst} updates:")
    print(f"  bare     {statistics.median(rates[True]):10.0f} updates/s")
    print(f"  wrapped  {statistics.median(rates[False]):10.0f} updates/s")
    print(f"  ratio    {throughput.median:10.2f}x bare ({throughput.spread()})")


async def time_to_card(args: argparse.Namespace, env: dict[str, str], state: Path) -> None:
    ours_env = {
        **env,
        "ACP_PROGRESS_EMBEDDED_DELAY": "0.02",
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        "ACP_PROGRESS_STATE_DIR": str(state / "sessions"),
        "XDG_STATE_HOME": str(state / "xdg-state"),
        "ACP_PROGRESS_CONFIG_DIR": str(state / "config"),
    }
    bare_path = state / "bare_agent.py"
    bare_path.write_text(BARE_AGENT)
    sides = [
        Side([sys.executable, str(bare_path)], env, want_think=False),
        Side([sys.executable, "-m", "acp_adapter"], ours_env, want_think=True),
        Side([*WRAPPED, "--think-after", "0", "slow", "0.02"], env, want_think=True),
    ]
    async with running(sides):
        floor, ours, wrapped = await measure_interleaved(sides, args.runs, args.rounds, args.idle)
    per_round = max(1, len(wrapped) // args.rounds)
    print(
        f"prompt -> think card, {len(wrapped)} prompts per side {args.idle * 1000:g} ms apart,"
        f" {args.rounds} rounds:"
    )
    print(f"  bare SDK agent, first update       : {describe(floor)}")
    print(f"  acp-progress's own agent, its card : {describe(ours)}")
    print(f"  with_progress(SDK agent), our card : {describe(wrapped)}")
    line, _ = compare("wrapped vs our own agent", wrapped, ours, per_round)
    print("  " + line + " (goal: the same, 1.0x)")
    line, _ = compare("wrapped vs the bare SDK floor", wrapped, floor, per_round)
    print("  " + line)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paced", type=int, default=300, help="stamped updates per latency run")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="pause between stamped updates")
    parser.add_argument("--burst", type=int, default=2000, help="updates per throughput run")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds per comparison")
    parser.add_argument("--runs", type=int, default=60, help="prompts per side for the time to the card")
    parser.add_argument("--idle", type=float, default=0.05, help="seconds between prompts")
    args = parser.parse_args()
    env = {"PYTHONPATH": str(ROOT), "ACP_PROGRESS_HEARTBEAT_DISABLED": "1"}
    with tempfile.TemporaryDirectory(prefix="acp-bench-wrap-") as state:
        env["ACP_PROGRESS_CONFIG_DIR"] = str(Path(state) / "config")  # never the user's settings
        await update_latency(args, env)
        await time_to_card(args, env, Path(state))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
