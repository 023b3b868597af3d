#!/usr/bin/env python3
"""AG-UI replicas on one PostgreSQL store: 50 concurrent threads over 2 replicas vs 1.

Each thread has ``--runs`` runs, one after the other (so the conversation has to follow the
thread). Every run is raced: it is sent to both replicas at once (with one replica: twice to it),
as a client that retries too early or a load balancer that hedges would. One of the pair runs at
a time; the other gets 409 (or, arriving after the first ended, runs after it). The figures: wall
time for all runs, runs completed, 409s, and — from the replicas' own logs (each run's start and
end) — how many runs of one thread overlapped on two replicas (must be 0).

Usage: python scripts/bench_replicas.py --database-url URL [--threads 50] [--runs 2]
(``scripts/bench_sessions.py --store postgres --agui`` runs it with its own database.)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(\S+ \S+) INFO acp_progress\.agui\.\w+: run (\S+) on thread (\S+) (started|ended)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Replica:
    """One ``acp-progress agui`` process with its log in ``workdir``."""

    def __init__(self, workdir: Path, url: str, instance: str, index: int) -> None:
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"replica-{instance}-{index}.log"
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "ACP_PROGRESS_DATABASE_URL": url,
            "ACP_PROGRESS_EMBEDDED_DELAY": "0.2",
            "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
            "ACP_PROGRESS_LOG_LEVEL": "INFO",
            "ACP_PROGRESS_SUMMARY": "off",
            "ACP_PROGRESS_AGUI_MAX_RUNS": "1000",  # every raced attempt is admitted: 409, never 503
            "ACP_PROGRESS_STATE_DIR": str(workdir / f"state-{index}"),
            "ACP_PROGRESS_CONFIG_DIR": str(workdir / "config"),
        }
        env.pop("ACP_PROGRESS_AGUI_TOKEN", None)
        argv = [sys.executable, "-m", "acp_adapter.cli", "agui", "--no-token", "--port", str(self.port)]
        argv += ["--cwd", str(workdir), "--instance", instance]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

    def wait_healthy(self, within: float = 60.0) -> None:
        import httpx

        deadline = time.monotonic() + within
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the replica exited:\n{self.log.read_text(errors='replace')}")
            try:
                if httpx.get(self.base + "/health", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the replica never answered /health")
            time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def intervals(self) -> list[tuple[str, str, float, float]]:
        """(thread, run, started, ended) of every run this replica served, from its log."""
        began: dict[str, tuple[str, float]] = {}
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            match = LINE.match(line)
            if not match:
                continue
            stamp = dt.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if match[4] == "started":
                began[match[2]] = (match[3], stamp)
            elif match[2] in began:
                thread, start = began.pop(match[2])
                out.append((thread, match[2], start, stamp))
        return out


async def _attempt(client: Any, replica: Replica, thread: str, run: str, prompt: str) -> str:
    body = {
        "threadId": thread,
        "runId": run,
        "messages": [{"id": f"m-{run}", "role": "user", "content": prompt}],
    }
    async with client.stream("POST", replica.base + "/", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return str(response.status_code)
        finished = False
        async for line in response.aiter_lines():
            if '"RUN_FINISHED"' in line:
                finished = True
        return "finished" if finished else "unfinished"


async def _thread(
    client: Any, replicas: list[Replica], thread: str, runs: int, tally: dict[str, int]
) -> None:
    for k in range(runs):
        first, second = replicas[k % len(replicas)], replicas[(k + 1) % len(replicas)]
        prompt = f"what is {k}+{k}"
        outcomes = await asyncio.gather(
            _attempt(client, first, thread, f"{thread}-{k}-a", prompt),
            _attempt(client, second, thread, f"{thread}-{k}-b", prompt),
        )
        for outcome in outcomes:
            tally[outcome] = tally.get(outcome, 0) + 1
        tally["runs"] = tally.get("runs", 0) + 1
        tally["completed"] = tally.get("completed", 0) + (outcomes.count("finished") >= 1)


def _overlaps(spans: list[tuple[str, int, float, float]]) -> int:
    """Runs of one thread that overlapped in time on two different replicas."""
    count = 0
    for a in range(len(spans)):
        for b in range(a + 1, len(spans)):
            ta, ia, sa, ea = spans[a]
            tb, ib, sb, eb = spans[b]
            if ta == tb and ia != ib and sa < eb and sb < ea:
                count += 1
    return count


def _drive(made: list[Replica], tag: str, threads: int, runs: int) -> tuple[dict[str, int], float]:
    """Every thread's runs, raced over ``made``: the outcomes' tally and the wall time."""
    import httpx

    tally: dict[str, int] = {}

    async def drive() -> float:
        limits = httpx.Limits(max_connections=4 * threads)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:
            started = time.perf_counter()
            await asyncio.gather(*(_thread(client, made, f"{tag}-t{i}", runs, tally) for i in range(threads)))
            return time.perf_counter() - started

    return tally, asyncio.run(drive())


def _figures(
    made: list[Replica], tag: str, threads: int, tally: dict[str, int], wall: float
) -> dict[str, Any]:
    """A scenario's figures: its tally, and from the replicas' logs the runs of its own threads."""
    spans = [
        (thread, i, start, end)
        for i, r in enumerate(made)
        for thread, _run, start, end in r.intervals()
        if thread.startswith(f"{tag}-")
    ]
    return {
        "replicas": len(made),
        "threads": threads,
        "runs": tally.get("runs", 0),
        "completed": tally.get("completed", 0),
        "refused_409": tally.get("409", 0),
        # both attempts of a run served, one after the other (the second arrived after the first
        # ended: a slow connection on a loaded machine); never at once (the overlap count)
        "ran_twice": tally.get("finished", 0) - tally.get("completed", 0),
        "other": {k: v for k, v in tally.items() if k not in ("runs", "completed", "409", "finished")},
        "served_per_replica": [sum(1 for span in spans if span[1] == i) for i in range(len(made))],
        "overlapping_runs_on_two_replicas": _overlaps(spans),
        "wall_s": wall,
    }


def replica_figures(url: str, threads: int = 50, runs: int = 2) -> dict[str, Any]:
    """One replica, then two: the two replicas start together once, and the one-replica scenario
    sends every run to the first of them (the second sits idle). Each scenario has threads of its
    own, so neither continues the other's conversations."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "config").mkdir(mode=0o700)
        made = [Replica(workdir, url, f"bench-{os.getpid()}", i) for i in range(2)]
        try:
            for replica in made:
                replica.wait_healthy()
            one = _drive(made[:1], "one", threads, runs)
            two = _drive(made, "two", threads, runs)
        finally:
            for replica in made:
                replica.stop()
        figures = {
            "one_replica": _figures(made[:1], "one", threads, *one),
            "two_replicas": _figures(made, "two", threads, *two),
        }
    for name, fig in (("1 replica", figures["one_replica"]), ("2 replicas", figures["two_replicas"])):
        print(
            f"AG-UI, {name}: {fig['threads']} concurrent threads x {runs} runs (each raced at 2 endpoints): "
            f"{fig['completed']}/{fig['runs']} completed, {fig['refused_409']} refused with 409, "
            f"{fig['ran_twice']} served one after the other, served per replica {fig['served_per_replica']}, "
            f"{fig['overlapping_runs_on_two_replicas']} overlapping on two replicas, {fig['wall_s']:.1f} s"
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--database-url", metavar="URL", default=os.environ.get("ACP_PROGRESS_DATABASE_URL"))
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if not args.database_url:
        parser.error("give --database-url (or set ACP_PROGRESS_DATABASE_URL)")
    figures = replica_figures(args.database_url, args.threads, args.runs)
    if args.json:
        Path(args.json).write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
