#!/usr/bin/env python3
"""What progress summaries cost, and how often they call their generator.

(a) Primary stream latency: the time from sending a prompt to the first ``agent_message_chunk``,
    with summaries off and on, through real ``acp-progress serve`` processes over real pipes (the
    embedded model thinks ``--delay`` seconds; summaries run every ``--summary-interval`` seconds,
    far more often than the 10 s default, to make any cost visible). Three paths, run interleaved
    in the same run because these machines are shared and noisy:
      off       — the agent with ACP_PROGRESS_SUMMARY=off
      agent     — the agent with ACP_PROGRESS_SUMMARY=embedded (summary on its think card)
      front-end — the "off" agent, with a ProgressSummary observing the stream in this process
                  (what watch and the bridges do)
    Prints medians, p90 and the ratio to "off". The goal is no measurable difference.

(b) Generator calls per minute for a simulated 2-minute turn (reasoning bursts, a tool every ~12 s,
    streamed answer at the end), cadence (interval 10) vs event-driven (interval 0), with an
    instant generator, one that takes 1.5 s and one that takes 12 s — on a fake clock, so it
    finishes in about a second of real time.

Usage: python scripts/bench_summary.py [--runs 40] [--delay 0.2] [--summary-interval 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import (  # noqa: E402
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import AgentMessageChunk  # noqa: E402

from acp_adapter.client.driver import AgentDriver  # noqa: E402
from acp_adapter.protocol.meta import META_KEY  # noqa: E402
from acp_adapter.summary import (  # noqa: E402
    EmbeddedGenerator,
    ManualClock,
    ProgressSummary,
    SummaryEvent,
    SummaryRequest,
)

AGENT = [sys.executable, "-m", "acp_adapter"]


# ---------------------------------------------------------------- (a) primary stream latency


def _env(summary: str, args: argparse.Namespace) -> dict[str, str]:
    return {
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "ACP_PROGRESS_EMBEDDED_DELAY": str(args.delay),
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        "ACP_PROGRESS_HEARTBEAT_INTERVAL": "0.05",
        "ACP_PROGRESS_SUMMARY": summary,
        "ACP_PROGRESS_SUMMARY_INTERVAL": str(args.summary_interval),
        "ACP_PROGRESS_LOG_LEVEL": "WARNING",
    }


SUMMARY_BEATS = [0]  # think-card heartbeats that carried a summary (the "agent" path)


async def first_chunk_latency(
    driver: AgentDriver, session_id: str, text: str, front_end: ProgressSummary | None
) -> float:
    started = time.perf_counter()
    first: float | None = None
    turn = driver.prompt(session_id, text)
    async for update in turn:
        meta = (getattr(update, "field_meta", None) or {}).get(META_KEY) or {}
        if "summary" in meta:
            SUMMARY_BEATS[0] += 1
        if front_end is not None:
            front_end.observe(update)
        if first is None and isinstance(update, AgentMessageChunk):
            first = time.perf_counter() - started
    if front_end is not None:
        front_end.stop("finished")
    assert first is not None, "the turn produced no answer"
    return first


async def bench_latency(args: argparse.Namespace) -> None:
    text = "fix the failing test in test_auth.py"
    results: dict[str, list[float]] = {"off": [], "agent": [], "front-end": []}
    summaries_seen = {"front-end": 0}
    async with (
        AgentDriver(AGENT, env=_env("off", args), cwd=str(ROOT)) as off,
        AgentDriver(AGENT, env=_env("embedded", args), cwd=str(ROOT)) as on,
    ):
        off_session = await off.new_session(str(ROOT))
        on_session = await on.new_session(str(ROOT))
        for _ in range(3):  # warm both processes up (imports, first-turn costs)
            await first_chunk_latency(off, off_session, text, None)
            await first_chunk_latency(on, on_session, text, None)
        SUMMARY_BEATS[0] = 0
        for i in range(args.runs):
            order = ["off", "agent", "front-end"]
            random.Random(i).shuffle(order)  # no path always goes first
            for path in order:
                if path == "off":
                    results[path].append(await first_chunk_latency(off, off_session, text, None))
                elif path == "agent":
                    results[path].append(await first_chunk_latency(on, on_session, text, None))
                else:

                    def seen(event: SummaryEvent) -> None:
                        summaries_seen["front-end"] += 1

                    summary = ProgressSummary(
                        EmbeddedGenerator(), user_text=text, interval=args.summary_interval, on_summary=seen
                    ).start()
                    results[path].append(await first_chunk_latency(off, off_session, text, summary))
    base = statistics.median(results["off"])
    print(
        f"(a) time to first answer chunk, {args.runs} runs per path, embedded model thinking {args.delay}s,"
    )
    print(f"    summaries every {args.summary_interval}s (default 10s):")
    for path, values in results.items():
        values.sort()
        med = statistics.median(values)
        p90 = values[int(len(values) * 0.9) - 1]
        print(
            f"    {path:<10} median {med * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   "
            f"ratio {med / base:5.3f}   (Δ {1000 * (med - base):+.1f} ms)"
        )
    print(
        f"    summaries: {SUMMARY_BEATS[0]} think-card heartbeats carried one (agent), "
        f"{summaries_seen['front-end']} emitted (front-end), over {args.runs} turns each"
    )


# ---------------------------------------------------------------- (b) generator calls per minute


def simulated_turn(seed: int = 7, length: float = 120.0) -> list[tuple[float, Any]]:
    """A realistic 2-minute agent turn: think card, reasoning bursts, a tool every ~12 s, answer."""
    rng = random.Random(seed)
    events: list[tuple[float, Any]] = []
    t, n = 0.0, 0
    while t < length - 12:
        n += 1
        think = f"think-{n}"
        events.append((t, start_tool_call(think, "Thinking...", kind="think", status="in_progress")))
        wait = rng.uniform(1.0, 4.0)
        beat = 1.0
        while beat < wait:
            events.append((t + beat, update_tool_call(think, status="in_progress")))
            beat += 1.0
        t += wait
        events.append((t, update_tool_call(think, status="completed")))
        for _ in range(rng.randint(10, 40)):  # streamed reasoning, a chunk every ~0.1 s
            t += rng.uniform(0.05, 0.15)
            events.append((t, update_agent_thought_text("…")))
        tool = f"call-{n}"
        title = rng.choice(
            ["Reading src/auth.py", "Searching for TODO", "Running pytest -x", "Listing files"]
        )
        events.append((t, start_tool_call(tool, title, kind="read", status="in_progress")))
        run = rng.uniform(1.0, 8.0)
        for k in range(int(run)):
            events.append((t + k + 0.5, update_tool_call(tool, status="in_progress")))
        t += run
        events.append((t, update_tool_call(tool, status="completed")))
    events.append((t, start_tool_call("think-final", "Thinking...", kind="think", status="in_progress")))
    t += 2.0
    events.append((t, update_tool_call("think-final", status="completed")))
    while t < length:
        t += 0.05
        events.append((t, update_agent_message_text("word ")))
    return events


class SlowEmbedded:
    """The embedded writer behind a fake-clock latency (a model call that takes ``latency`` s)."""

    def __init__(self, clock: ManualClock, latency: float) -> None:
        self.clock = clock
        self.latency = latency
        self.inner = EmbeddedGenerator()

    async def generate(self, request: SummaryRequest) -> Any:
        if self.latency > 0:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def wake() -> None:
                if not done.done():
                    done.set_result(None)

            self.clock.call_later(self.latency, wake)
            await done
        return await self.inner.generate(request)


async def simulate(interval: float, latency: float, events: list[tuple[float, Any]]) -> tuple[int, int, int]:
    clock = ManualClock()
    emitted: list[SummaryEvent] = []
    summary = ProgressSummary(
        SlowEmbedded(clock, latency),
        user_text="fix the failing test in test_auth.py",
        interval=interval,
        clock=clock,
        on_summary=emitted.append,
    ).start()
    for at, update in events:
        await clock.advance(max(0.0, at - clock.now()))
        summary.observe(update)
    await clock.advance(max(0.0, 120.0 - clock.now()))
    summary.stop("finished")
    return summary.stats.generations, len(emitted), summary.stats.skipped_ticks


async def bench_calls() -> None:
    events = simulated_turn()
    tools = sum(1 for _, u in events if getattr(u, "kind", None) == "read")
    print(f"(b) generator calls, simulated 2-minute turn ({len(events)} updates, {tools} tools), fake clock:")
    started = time.perf_counter()
    for latency in (0.0, 1.5, 12.0):
        for label, interval in (("cadence 10s", 10.0), ("event-driven", 0.0)):
            calls, emitted, skipped = await simulate(interval, latency, events)
            print(
                f"    {label:<13} generator {latency:.1f}s: {calls:3d} calls = {calls / 2:5.1f}/min, "
                f"{emitted:3d} new summaries, {skipped} ticks skipped"
            )
    print(f"    (6 simulated 2-minute turns in {time.perf_counter() - started:.2f} s of real time)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.2, help="embedded model think delay (seconds)")
    parser.add_argument("--summary-interval", type=float, default=0.02)
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    if not args.skip_latency:
        asyncio.run(bench_latency(args))
    asyncio.run(bench_calls())


if __name__ == "__main__":
    main()
