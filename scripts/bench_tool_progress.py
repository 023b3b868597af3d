#!/usr/bin/env python3
"""Cost of one tool progress update, from the tool's ``ctx.progress(...)`` call to the client's
``session_update`` handler, next to a bare SDK ``session_update`` sent from the event loop.

Both paths run over the same real socket pair with the SDK's agent and client connections (JSON
serialisation, framing and a kernel round trip included), in one process so one clock times both.
Reports the median single-update latency and the sustained throughput (updates/s) of each path and
their ratio; the baselines are measured in the same run because these machines are shared and noisy.
Two baselines: the raw SDK sending the *same* progress update (content line plus ``_meta`` progress,
built with the SDK helpers), which isolates what this package adds (redaction, the turn state machine,
the thread hand-off); and the historical one, a much smaller ``raw_output``-only update. The SDK's
own ratio of the two is printed too: in practice the ceiling of the ratio against the small update,
since the package adds its own work to what the SDK costs for the update it sends. The three
paths run in alternating rounds, so a change in the machine's load during the run hits all of them,
with their order rotated each round and the garbage collected before each path, so none always
runs first or inherits another's garbage; the throughput ratio is the median of the rounds' own
ratios.

A fourth path is ours again with the session store recording, as the agent runs it: the recorder
observes every update the outbox sends (a SQLite store in a temporary directory, its background
writer running); its ratio to the store-off path is the store's cost on tool progress.

A slow client last: a tool reporting 20,000 values to an editor that reads 1,000 lines a second
(see :func:`bench_slow_client`): the tool's time against an instant client's, the age of the value
the client holds (staleness, in ms and in read intervals), how many values it got, and that it ends
with the last value and the terminal update; then the same with a push-reading client
(:func:`bench_push_client`), whose own buffer no agent can see.

Usage: python scripts/bench_tool_progress.py [--latency-runs 2000] [--burst 20000] [--rounds 9]
       [--slow-reports 20000] [--read-interval 0.001] [--no-hold] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import text_block, tool_content, update_tool_call  # noqa: E402
from acp.core import AgentSideConnection, ClientSideConnection  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402

from acp_adapter.agent.tool_cards import AcpToolObserver  # noqa: E402
from acp_adapter.cancel import CancelToken  # noqa: E402
from acp_adapter.events import SessionStream, UpdateOutbox  # noqa: E402
from acp_adapter.protocol import JsonRpcStream, StreamLimits  # noqa: E402
from acp_adapter.protocol.backlog import peer_backlog_probe  # noqa: E402
from acp_adapter.protocol.meta import META_KEY  # noqa: E402
from acp_adapter.protocol.stdio import ProtocolFds, open_protocol_streams  # noqa: E402
from acp_adapter.store import BackgroundWriter, SqliteStore  # noqa: E402
from acp_adapter.store.recorder import ConversationRecorder  # noqa: E402
from acp_adapter.tooling.calls import ToolCall  # noqa: E402
from acp_adapter.tooling.toolbox import ToolContext, ToolOutcome  # noqa: E402


class Arrivals:
    """Client side: count updates and wake whoever waits for the n-th one."""

    def __init__(self) -> None:
        self.count = 0
        self.last_at = 0.0
        self.target = 0
        self.reached: asyncio.Event | None = None
        self.reached_thread = threading.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.count += 1
        self.last_at = time.perf_counter()
        progress = ((update.field_meta or {}).get(META_KEY) or {}).get("progress")
        if progress is not None:
            self.value = progress.get("value", self.value)
        if self.count >= self.target or (self.want_value is not None and self.value >= self.want_value):
            if self.reached is not None:
                self.reached.set()
            self.reached_thread.set()

    value: float = -1
    want_value: float | None = None

    def expect(self, n: int) -> None:
        self.target = self.count + n
        self.want_value = None
        self.reached = asyncio.Event()
        self.reached_thread.clear()

    def expect_value(self, value: float) -> None:
        """Wait for the client to hold ``value``: the package replaces queued progress, so a burst
        is done when its last value arrived, not after one update per report."""
        self.target = 2**62
        self.want_value = value
        self.reached = asyncio.Event()
        self.reached_thread.clear()


class NullAgent:
    def on_connect(self, conn: Any) -> None:
        pass


async def connect() -> tuple[AgentSideConnection, ClientSideConnection, Arrivals, asyncio.WriteTransport]:
    """The SDK's two connections on a socket pair; also the agent side's write transport."""
    left, right = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=left, limit=2**24)
    client_reader, client_writer = await asyncio.open_connection(sock=right, limit=2**24)
    arrivals = Arrivals()
    agent_conn = AgentSideConnection(NullAgent(), agent_writer, agent_reader)
    client_conn = ClientSideConnection(arrivals, client_writer, client_reader)
    return agent_conn, client_conn, arrivals, agent_writer.transport  # type: ignore[return-value]


def same_update(i: int, n: int) -> Any:
    """What a tool's progress report becomes on the wire (content line and ``_meta`` progress),
    built with the SDK helpers alone: no redaction, no state machine, no thread hand-off."""
    message = f"Scanned {i}/{n} files"
    update = update_tool_call("call_1", status="in_progress", content=[tool_content(text_block(message))])
    progress = {"value": i, "total": n, "message": message}
    meta = {META_KEY: {"phase": "progress", "progress": progress}}
    return update.model_copy(update={"field_meta": meta})


def small_update(i: int, n: int) -> Any:
    """The historical baseline: a much smaller update than a progress report."""
    return update_tool_call("call_1", status="in_progress", raw_output={"i": i})


async def bench_bare(latency_runs: int, burst: int, make: Any = small_update) -> tuple[list[float], float]:
    agent_conn, client_conn, arrivals, _ = await connect()
    update = make(0, latency_runs)
    latencies: list[float] = []
    for _ in range(latency_runs):
        arrivals.expect(1)
        sent = time.perf_counter()
        await agent_conn.session_update(session_id="s", update=update)
        await arrivals.reached.wait()  # type: ignore[union-attr]
        latencies.append(arrivals.last_at - sent)
    arrivals.expect(burst)
    started = time.perf_counter()
    for i in range(burst):
        await agent_conn.session_update(session_id="s", update=make(i, burst))
    await arrivals.reached.wait()  # type: ignore[union-attr]
    rate = burst / (arrivals.last_at - started)
    await client_conn.close()
    await agent_conn.close()
    return latencies, rate


async def bench_ours(
    latency_runs: int, burst: int, state: Path | None = None, hold: bool = True
) -> tuple[list[float], float]:
    """Our path; with ``state``, the session store records the turn as the agent's does. With
    ``hold``, the outbox has the backlog probe ``serve`` gives it (here on the socket pair)."""
    if state is None:
        return await _bench_ours(latency_runs, burst, None, hold)
    store = SqliteStore(state)
    writer = BackgroundWriter(store)
    recorder = ConversationRecorder(store, writer)
    recorder.open_session("s", str(ROOT))
    recorder.begin_turn("s", str(ROOT), [text_block("search for TODO")], "search for TODO")
    try:
        return await _bench_ours(latency_runs, burst, recorder, hold)
    finally:
        recorder.end_turn("s", [])
        writer.close()
        store.close()


async def _bench_ours(
    latency_runs: int, burst: int, recorder: ConversationRecorder | None, hold: bool
) -> tuple[list[float], float]:
    agent_conn, client_conn, arrivals, transport = await connect()
    loop = asyncio.get_running_loop()
    probe = peer_backlog_probe(transport) if hold else None
    outbox = UpdateOutbox(agent_conn, loop, backlog=probe) if hold else UpdateOutbox(agent_conn, loop)
    if recorder is not None:
        outbox.observers("s").add(recorder.observer("s"))
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    cancel = CancelToken()
    observer = AcpToolObserver(stream, conn=agent_conn, loop=loop, cancel=cancel, workspace=str(ROOT))
    call = ToolCall("call_1", "search", {"query": "TODO"})
    arrivals.expect(1)
    observer.tool_started(call, None)
    await arrivals.reached.wait()  # type: ignore[union-attr]
    ctx = ToolContext(call, ROOT, cancel, lambda v, t, m: observer.tool_progress(call, v, t, m))

    def tool_thread(latencies: list[float]) -> None:
        for i in range(latency_runs):
            arrivals.reached_thread.clear()
            loop.call_soon_threadsafe(arrivals.expect, 1)
            time.sleep(0)  # let the loop register the expectation
            while arrivals.target <= arrivals.count:
                time.sleep(0)
            sent = time.perf_counter()
            ctx.progress(i, latency_runs, f"Scanned {i}/{latency_runs} files")
            arrivals.reached_thread.wait()
            latencies.append(arrivals.last_at - sent)

    latencies: list[float] = []
    await asyncio.to_thread(tool_thread, latencies)

    arrivals.expect_value(burst - 1)
    started = time.perf_counter()

    def burst_thread() -> None:
        for i in range(burst):
            ctx.progress(i, burst, f"Scanned {i}/{burst} files")

    await asyncio.to_thread(burst_thread)
    await arrivals.reached.wait()  # type: ignore[union-attr]
    rate = burst / (arrivals.last_at - started)
    await outbox.aclose()
    await client_conn.close()
    await agent_conn.close()
    return latencies, rate


#: The slow client, as a process of its own reading the agent's stdout pipe the way an editor does:
#: a buffered line reader that pulls from the pipe only when it needs the next line (Python's
#: ``BufferedReader.readline`` with an 8 KiB buffer behaves as Rust's ``BufReader::read_line``,
#: which Zed uses), taking ``interval`` seconds per line. It says ``ready`` once started, stops at
#: the tool card's terminal update and prints when it read each progress value
#: (``time.perf_counter`` is CLOCK_MONOTONIC, the same clock in both processes).
PULL_CLIENT = r"""
import json, os, sys, time
interval, meta_key = float(sys.argv[1]), sys.argv[2]
source = os.fdopen(0, "rb", buffering=8192)
reads, ended = [], None
sys.stdout.write("ready\n")
sys.stdout.flush()
for line in iter(source.readline, b""):
    now = time.perf_counter()
    update = json.loads(line).get("params", {}).get("update", {})
    progress = ((update.get("_meta") or {}).get(meta_key) or {}).get("progress")
    if progress is not None:
        reads.append((now, progress["value"]))
    elif update.get("status") in ("completed", "failed"):
        ended = now
        break
    if interval:
        time.sleep(interval)
json.dump({"reads": reads, "ended": ended}, sys.stdout)
"""


class SlowRun(NamedTuple):
    """One run of a tool reporting to a (slow or instant) client."""

    took: float  # the tool's time to report every value
    staleness: list[float]  # at each progress line read while the tool ran: the age of its value
    delivered: int  # progress lines the client read
    ends_right: bool  # the client's last progress value was the tool's last, then the terminal update


def tool_card(
    outbox: UpdateOutbox, conn: Any, loop: asyncio.AbstractEventLoop
) -> tuple[AcpToolObserver, ToolCall, ToolContext]:
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    cancel = CancelToken()
    observer = AcpToolObserver(stream, conn=conn, loop=loop, cancel=cancel, workspace=str(ROOT))
    call = ToolCall("call_1", "search", {"query": "TODO"})
    observer.tool_started(call, None)
    ctx = ToolContext(call, ROOT, cancel, lambda v, t, m: observer.tool_progress(call, v, t, m))
    return observer, call, ctx


def run_tool(
    observer: AcpToolObserver, call: ToolCall, ctx: ToolContext, reported_at: list[float]
) -> tuple[float, float]:
    """Report every value, then finish the card; returns (start, end) of the reports."""
    reports = len(reported_at)
    started = time.perf_counter()
    for i in range(reports):
        reported_at[i] = time.perf_counter()
        ctx.progress(i, reports, f"Scanned {i}/{reports} files")
    ended = time.perf_counter()
    observer.tool_finished(call, ToolOutcome(True, text="done"))
    return started, ended


async def bench_slow_client(reports: int, read_interval: float, hold: bool = True) -> SlowRun:
    """A tool reporting ``reports`` values to an editor that reads one line per ``read_interval``
    (0: as fast as it can), over a real pipe with the agent's real stdio settings: the transports
    ``serve`` opens on its stdout (:func:`open_protocol_streams`), the SDK connection on
    :class:`JsonRpcStream` with the default 1 MiB write high-water mark, a 64 KiB kernel pipe, and
    the backlog probe ``serve`` wires (``hold``: False runs without it, the baseline without holding).

    The client is :data:`PULL_CLIENT`, another process. Staleness is sampled at each progress line
    it reads while the tool still runs: the read time minus the moment the tool reported that value.
    """
    out_read, out_write = os.pipe()  # the agent's stdout
    in_read, in_write = os.pipe()  # its stdin (nothing is sent on it)
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PULL_CLIENT, str(read_interval), META_KEY,
        stdin=out_read, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    os.close(out_read)
    assert client.stdout is not None
    await client.stdout.readline()  # started: the tool must not run before anyone reads
    reader, writer = await open_protocol_streams(ProtocolFds(in_read, out_write))
    stream = JsonRpcStream(reader, writer, StreamLimits())
    conn = AgentSideConnection(NullAgent(), stream, listening=False)
    loop = asyncio.get_running_loop()
    probe = peer_backlog_probe(writer.transport) if hold else None
    outbox = UpdateOutbox(conn, loop, backlog=probe) if hold else UpdateOutbox(conn, loop)
    observer, call, ctx = tool_card(outbox, conn, loop)
    reported_at = [0.0] * reports
    started, ended = await asyncio.to_thread(run_tool, observer, call, ctx, reported_at)
    await outbox.aclose()
    output = await asyncio.wait_for(client.stdout.read(), 120)
    await client.wait()
    writer.close()
    os.close(in_write)
    await conn.close()
    result = json.loads(output)
    reads = result["reads"]
    staleness = [at - reported_at[int(value)] for at, value in reads if at < ended]
    ends_right = bool(reads) and reads[-1][1] == reports - 1 and result["ended"] is not None
    return SlowRun(ended - started, staleness, len(reads), ends_right)


async def bench_push_client(reports: int, read_interval: float, hold: bool = True) -> SlowRun:
    """The same tool and agent settings with a *push-reading* client: an asyncio ``StreamReader`` on
    a socket pair, in this process, that takes ``read_interval`` per line. Such a reader pulls
    everything the kernel has into its own buffer (up to twice its 64 KiB limit) whether or not it
    wants the next line yet, so the kernel looks empty to the agent while hundreds of old lines
    wait in the client's memory: no probe can see them, holding cannot help, and the staleness is
    that buffer's worth of read intervals. Editors read with a pull-driven line reader instead."""
    left, right = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=left)
    client_reader, client_writer = await asyncio.open_connection(sock=right)
    stream = JsonRpcStream(agent_reader, agent_writer, StreamLimits())
    conn = AgentSideConnection(NullAgent(), stream, listening=False)
    loop = asyncio.get_running_loop()
    probe = peer_backlog_probe(agent_writer.transport) if hold else None
    outbox = UpdateOutbox(conn, loop, backlog=probe) if hold else UpdateOutbox(conn, loop)
    observer, call, ctx = tool_card(outbox, conn, loop)
    reported_at = [0.0] * reports
    reads: list[tuple[float, int]] = []
    ended_at: list[float] = []

    async def client() -> None:
        while line := await client_reader.readline():
            now = time.perf_counter()
            update = json.loads(line).get("params", {}).get("update", {})
            progress = (update.get("_meta") or {}).get(META_KEY, {}).get("progress")
            if progress is not None:
                reads.append((now, int(progress["value"])))
            elif update.get("status") in ("completed", "failed"):
                ended_at.append(now)
                return
            await asyncio.sleep(read_interval)

    reader_task = asyncio.create_task(client())
    started, ended = await asyncio.to_thread(run_tool, observer, call, ctx, reported_at)
    await outbox.aclose()
    await asyncio.wait_for(reader_task, 120)
    client_writer.close()
    await conn.close()
    staleness = [at - reported_at[value] for at, value in reads if at < ended]
    ends_right = bool(reads) and reads[-1][1] == reports - 1 and bool(ended_at)
    return SlowRun(ended - started, staleness, len(reads), ends_right)


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples) or [0.0]
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def fmt(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[int(len(ordered) * 0.95)]
    return f"median {statistics.median(latencies) * 1e6:8.1f} µs  p95 {p95 * 1e6:8.1f} µs"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-runs", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=9, help="alternating rounds of the four paths")
    parser.add_argument("--slow-reports", type=int, default=20000, help="values the slow-client case reports")
    parser.add_argument(
        "--read-interval", type=float, default=0.001, help="seconds the slow client takes per line (1,000/s)"
    )
    parser.add_argument(
        "--no-hold", action="store_true", help="no backlog probe: progress is never held (the baseline)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as one JSON object to FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-bench-state-") as state:
        return await bench(args, Path(state))


async def bench(args: argparse.Namespace, state: Path) -> int:
    runs, burst = max(1, args.latency_runs // args.rounds), max(1, args.burst // args.rounds)
    bare_lat: list[float] = []
    same_lat: list[float] = []
    ours_lat: list[float] = []
    stored_lat: list[float] = []
    rates: dict[str, list[float]] = {"bare": [], "same": [], "ours": [], "stored": []}
    paths: list[tuple[str, list[float], Callable[[], Awaitable[tuple[list[float], float]]]]] = [
        ("bare", bare_lat, lambda: bench_bare(runs, burst)),
        ("same", same_lat, lambda: bench_bare(runs, burst, same_update)),
        ("ours", ours_lat, lambda: bench_ours(runs, burst, None, not args.no_hold)),
        ("stored", stored_lat, lambda: bench_ours(runs, burst, state, not args.no_hold)),
    ]
    for round_ in range(args.rounds):  # alternate, so a change in the machine's load hits all three
        turn = round_ % len(paths)  # and rotate, so no path always runs first or right after another
        for name, lat, run in paths[turn:] + paths[:turn]:
            gc.collect()  # no path pays for the garbage the one before it left
            samples, rate = await run()
            lat.extend(samples)
            rates[name].append(rate)
    bare_rate, same_rate, ours_rate = (statistics.median(rates[k]) for k in ("bare", "same", "ours"))
    print(f"{args.rounds} alternating rounds of {burst} updates per path; burst rates are the median round's")
    print(f"bare SDK, small update            : {fmt(bare_lat)}  burst {bare_rate:9.0f} updates/s")
    print(f"bare SDK, the same progress update: {fmt(same_lat)}  burst {same_rate:9.0f} updates/s")
    print(f"tool ctx.progress → client handler: {fmt(ours_lat)}  burst {ours_rate:9.0f} updates/s")
    figures: dict[str, float | bool] = {"rounds": args.rounds, "updates_per_round": burst}
    for name, lat, key in (("small update", bare_lat, "bare"), ("same update", same_lat, "same")):
        ratio = statistics.median(ours_lat) / statistics.median(lat)
        shares = round_ratios(rates["ours"], rates[key])
        figures[f"latency_vs_{key}"] = ratio
        figures[f"throughput_vs_{key}"] = shares.median
        print(
            f"vs bare SDK, {name:12s}: latency {ratio:.2f}x, "
            f"throughput {shares.median:.2f}x of the SDK's (median of rounds; {shares.spread()})"
        )
    stored_rate = statistics.median(rates["stored"])
    store_cost = round_ratios(rates["stored"], rates["ours"])
    print(f"same, session store recording     : {fmt(stored_lat)}  burst {stored_rate:9.0f} updates/s")
    print(
        f"store on vs store off: latency {statistics.median(stored_lat) / statistics.median(ours_lat):.2f}x, "
        f"throughput {store_cost.median:.2f}x (median of rounds; {store_cost.spread()})"
    )
    # in practice the ceiling of the first ratio: what the update's size alone costs the SDK
    payload = round_ratios(rates["same"], rates["bare"])
    figures["store_on_vs_off_throughput"] = store_cost.median
    figures["sdk_same_vs_small_throughput"] = payload.median
    print(
        f"the SDK alone, same update vs small update: throughput {payload.median:.2f}x "
        f"(median of rounds; {payload.spread()})"
    )
    # a slow client: the tool's speed must not depend on it, and what the client holds stays fresh
    hold = not args.no_hold
    instant_times: list[float] = []
    slow_times: list[float] = []
    stale: list[float] = []
    delivered: list[int] = []
    ends_right = True
    for round_ in range(3):
        for slow in (round_ % 2 == 0, round_ % 2 != 0):
            gc.collect()
            run = await bench_slow_client(args.slow_reports, args.read_interval if slow else 0, hold)
            ends_right = ends_right and run.ends_right
            if slow:
                slow_times.append(run.took)
                stale.extend(run.staleness)
                delivered.append(run.delivered)
            else:
                instant_times.append(run.took)
    ratio = round_ratios(slow_times, instant_times)
    interval_ms = args.read_interval * 1000
    median_ms, p95_ms = statistics.median(stale or [0.0]) * 1000, percentile(stale, 0.95) * 1000
    print(
        f"slow client ({1 / args.read_interval:,.0f} lines/s, pull-driven line reader on a real pipe"
        f"{'' if hold else ', holding off'}), {args.slow_reports} reports: tool took "
        f"{statistics.median(slow_times) * 1000:.0f} ms vs {statistics.median(instant_times) * 1000:.0f} ms "
        f"with an instant client ({ratio.median:.2f}x; {ratio.spread()})"
    )
    print(
        f"  staleness of the client's value: median {median_ms:.2f} ms, p95 {p95_ms:.2f} ms "
        f"({median_ms / interval_ms:.1f} / {p95_ms / interval_ms:.1f} read intervals, "
        f"{len(stale)} samples); delivered {statistics.median(delivered):.0f} of {args.slow_reports}; "
        f"last value then terminal update: {'yes' if ends_right else 'NO'}"
    )
    push = await bench_push_client(args.slow_reports, args.read_interval, hold)
    push_median_ms = statistics.median(push.staleness or [0.0]) * 1000
    push_p95_ms = percentile(push.staleness, 0.95) * 1000
    print(
        f"push-reading asyncio client (its own buffer is invisible to the agent): staleness median "
        f"{push_median_ms:.1f} ms, p95 {push_p95_ms:.1f} ms "
        f"({push_median_ms / interval_ms:.0f} / {push_p95_ms / interval_ms:.0f} read intervals); "
        f"delivered {push.delivered}; last value then terminal update: {'yes' if push.ends_right else 'NO'}"
    )
    figures.update(
        slow_client_tool_time_ratio=ratio.median,
        staleness_median_ms=median_ms,
        staleness_p95_ms=p95_ms,
        staleness_median_intervals=median_ms / interval_ms,
        staleness_p95_intervals=p95_ms / interval_ms,
        staleness_samples=len(stale),
        delivered_median=statistics.median(delivered),
        ends_with_last_value_and_terminal=ends_right,
        push_client_staleness_median_intervals=push_median_ms / interval_ms,
        push_client_ends_with_last_value_and_terminal=push.ends_right,
        reports=args.slow_reports,
        holding=hold,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
