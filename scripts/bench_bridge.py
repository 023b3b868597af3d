"""Bridge benchmark: platform edits for a progress burst, and the route queue against asyncio.Queue.

1. 1,000 progress events (500 tools: started + completed) spread evenly over 10 s of a fake clock,
   delivered in accumulate mode onto a recording sink with Telegram's 4096 UTF-16 limit. Reports
   edits, posts, the largest number of edits inside any 1.5 s window (goal: 1), and whether every
   terminal line is on screen at the end (goal: all 500).
2. Throughput of RouteQueue put+get against a plain asyncio.Queue in the same run, same events.

Run: python scripts/bench_bridge.py
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.delivery import COALESCE_WINDOW, RouteDelivery
from acp_adapter.frontends.bridges.events import ProgressEvent, ProgressPayload
from acp_adapter.frontends.bridges.queue import RouteQueue
from acp_adapter.frontends.bridges.sink import BaseSink, utf16_len

EVENTS = 1000
SPAN = 10.0


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class Sink(BaseSink):
    limit = 4096

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.messages: dict[int, str] = {}
        self.edit_times: list[float] = []
        self.posts = 0

    def measure(self, text: str) -> int:
        return utf16_len(text)

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
        self.posts += 1
        self.messages[len(self.messages) + 1] = text
        return len(self.messages)

    async def edit(self, message_id: int, text: str) -> None:
        self.edit_times.append(self.clock.now)
        self.messages[message_id] = text


def events(count: int = EVENTS) -> list[ProgressEvent]:
    """``count`` events: ``count // 2`` distinct calls, each started then completed (none coalesce)."""
    out = []
    for i in range(count // 2):
        for phase in ("started", "completed"):
            p = ProgressPayload(f"call_{i}", "search", phase, "Searching for", f"q{i}", "🔎", len(out) + 1)  # type: ignore[arg-type]
            out.append(ProgressEvent(p))
    return out


async def burst() -> None:
    clock = Clock()
    sink = Sink(clock)
    delivery = RouteDelivery(sink, ProgressConfig(tool_progress="all"), clock)
    delivery.begin_turn(None)
    step = SPAN / EVENTS
    for n, event in enumerate(events()):
        clock.now = n * step
        await delivery.handle(event)
    while delivery.pending_edits:  # trailing flushes, on the window's schedule
        deadline = delivery.next_deadline()
        clock.now = max(clock.now, deadline or clock.now)
        await delivery.tick()
    times = sink.edit_times
    worst = max((sum(1 for u in times if t <= u < t + COALESCE_WINDOW) for t in times), default=0)
    shown = "\n".join(sink.messages.values())
    lines = set(shown.split("\n"))
    terminal = sum(1 for i in range(EVENTS // 2) if f"✅ Searching for q{i}" in lines)
    print(f"burst: {EVENTS} progress events over {SPAN:g}s, accumulate mode, limit 4096 UTF-16 units")
    print(f"  platform edits: {len(times)}   posts (first line + continuations): {sink.posts}")
    print(f"  most edits in any {COALESCE_WINDOW}s window: {worst} (goal <= 1)")
    print(f"  terminal lines on screen at the end: {terminal}/{EVENTS // 2}")


async def throughput(rounds: int = 5) -> None:
    evs = events(20 * EVENTS)  # 20,000 distinct events: both queues hold every one
    best_route = best_plain = float("inf")
    for _ in range(rounds):
        q = RouteQueue(soft_bound=len(evs) + 1)
        t0 = time.perf_counter()
        for e in evs:
            q.put(e)
        while q.get_nowait() is not None:
            pass
        best_route = min(best_route, time.perf_counter() - t0)
        plain: asyncio.Queue[ProgressEvent] = asyncio.Queue()
        t0 = time.perf_counter()
        for e in evs:
            plain.put_nowait(e)
        while not plain.empty():
            plain.get_nowait()
        best_plain = min(best_plain, time.perf_counter() - t0)
    r, p = len(evs) / best_route, len(evs) / best_plain
    print(f"queue throughput ({len(evs)} events put+get, best of {rounds}):")
    print(f"  RouteQueue {r:,.0f} ev/s   asyncio.Queue {p:,.0f} ev/s   ratio {r / p:.2f}")


async def main() -> None:
    await burst()
    await throughput()


if __name__ == "__main__":
    asyncio.run(main())
