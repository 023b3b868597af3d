#!/usr/bin/env python3
"""Time from sending ``session/prompt`` to the think card's arrival at the client.

Spawns the real agent (``python -m acp_adapter``) over stdio and drives it with the SDK's client
side, N prompts per mode, and reports the median and p95 latency to the first ``tool_call`` with
``kind="think"``. The baseline, measured in the same run because these machines are shared and
noisy, is a bare SDK agent process that sends one ``session_update`` as soon as it gets the prompt.

Two modes, each a fresh set of processes (``--same-processes``: one set for both, a quicker run):

* **after idle** (the figure the goal is about): every side's prompts come ``--idle`` seconds
  apart, as a person's do in an editor. Every side then starts each prompt from the same state.
* **back to back**: each prompt is sent the moment the last one is answered. Only our turn idles
  here (its model takes 20 ms, as a real back-end waits on its socket), and on these VMs a process
  pair that sat idle for even 20 ms handles the next message far slower than one that never
  idled, so this mode mostly compares idle processes with busy ones. A second baseline shows it:
  the same bare agent whose turn also waits 20 ms on a worker thread, the shape of our turn.

In each mode all processes stay up and are prompted in alternating rounds, so a change in the
machine's load during the run falls on every side alike; the ratios are the median of the rounds'
own ratios, with their spread.

``--store on|off|both`` (default both): our agent with the session store on (SQLite, the default)
and/or off (``ACP_PROGRESS_STATE=off``); with both, the two run side by side in the same rounds and
their ratio is reported, the store's cost on the time to the spinner. The store always lives in a
temporary directory (``ACP_PROGRESS_STATE_DIR``, ``XDG_STATE_HOME``), never the user's own.

Usage: python scripts/bench_spinner_latency.py [--runs 200] [--rounds 10] [--idle 0.05] [--store both]
       [--same-processes]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ToolCallStart
from paired_rounds import round_medians, round_ratios

ROOT = Path(__file__).resolve().parent.parent

BARE_AGENT = textwrap.dedent(
    """
    import asyncio
    import sys
    import time
    from typing import Any
    from acp import run_agent, update_agent_message_text
    from acp.schema import InitializeResponse, NewSessionResponse, PromptResponse

    class Bare:
        def on_connect(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
            return InitializeResponse(protocol_version=protocol_version)

        async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
            return NewSessionResponse(session_id="bare")

        async def prompt(self, session_id: str, prompt: list, **kwargs: Any) -> PromptResponse:
            await self.conn.session_update(session_id=session_id, update=update_agent_message_text("hi"))
            if WORKER_THREAD:  # the turn's 20 ms, on a worker thread like a synchronous agent loop
                await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0.02)
            return PromptResponse(stop_reason="end_turn")

        async def cancel(self, session_id: str, **kwargs: Any) -> None:
            return None

    WORKER_THREAD = "--worker-thread" in sys.argv
    asyncio.run(run_agent(Bare()))
    """
)


class FirstUpdateClock:
    """Records when the first interesting update of the current prompt arrives."""

    def __init__(self, want_think: bool) -> None:
        self.want_think = want_think
        self.arrived: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.arrived is not None:
            return
        if not self.want_think or (isinstance(update, ToolCallStart) and update.kind == "think"):
            self.arrived = time.perf_counter()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class Side:
    """One agent process kept running for a whole mode (or the whole benchmark), prompted in rounds."""

    def __init__(self, command: list[str], env: dict[str, str], want_think: bool) -> None:
        self.command, self.env, self.want_think = command, env, want_think
        self.clock = FirstUpdateClock(want_think)
        self.samples: list[float] = []
        self._conn: Any = None
        self._session_id = ""

    async def start(self, stack: contextlib.AsyncExitStack, stderr: Any) -> None:
        """Spawn the process (its start-up and warm-up are :meth:`warm`'s, run side by side)."""
        self._conn, _process = await stack.enter_async_context(
            spawn_agent_process(
                self.clock,
                self.command[0],
                *self.command[1:],
                env=self.env,
                cwd=str(ROOT),
                transport_kwargs={"stderr": stderr},
            )
        )

    async def warm(self) -> None:
        await self._conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await self._conn.new_session(cwd=str(ROOT), mcp_servers=[])
        self._session_id = session.session_id
        for _warm in range(5):
            await self._prompt()

    async def _prompt(self) -> None:
        await self._conn.prompt(session_id=self._session_id, prompt=[text_block("hi")])

    async def run(
        self, rounds: list[asyncio.Event], turn: list[asyncio.Event], per_round: int, idle: float
    ) -> None:
        for mine, done in zip(rounds, turn, strict=True):
            await mine.wait()
            for _ in range(per_round):
                if idle:
                    await asyncio.sleep(idle)
                self.clock.arrived = None
                sent = time.perf_counter()
                await self._prompt()
                if self.clock.arrived is None:
                    raise RuntimeError("no matching update arrived")
                self.samples.append(self.clock.arrived - sent)
            done.set()


@contextlib.asynccontextmanager
async def running(sides: list[Side]) -> AsyncIterator[list[Side]]:
    """Every side's process up and warmed (side by side), stopped on the way out."""
    with open(os.devnull, "wb") as devnull:
        async with contextlib.AsyncExitStack() as stack:
            for side in sides:
                await side.start(stack, devnull)
            await asyncio.gather(*(side.warm() for side in sides))
            yield sides


async def measure_interleaved(sides: list[Side], runs: int, rounds: int, idle: float) -> list[list[float]]:
    """Every agent stays up; their rounds alternate, so a change in the machine's load hits all."""
    for side in sides:
        side.samples = []
    per_round = max(1, runs // rounds)
    go = [[asyncio.Event() for _ in range(rounds)] for _ in sides]
    done = [[asyncio.Event() for _ in range(rounds)] for _ in sides]

    async def conduct() -> None:
        for i in range(rounds):
            for side in range(len(sides)):
                go[side][i].set()
                await done[side][i].wait()

    await asyncio.gather(
        *(side.run(go[k], done[k], per_round, idle) for k, side in enumerate(sides)), conduct()
    )
    return [side.samples for side in sides]


def describe(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(samples) * 1000:7.3f} ms   p95 {p95 * 1000:7.3f} ms"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=10, help="alternating rounds per side")
    parser.add_argument(
        "--idle", type=float, default=0.05, help="seconds between prompts in the after-idle mode"
    )
    parser.add_argument(
        "--store",
        choices=("on", "off", "both"),
        default="both",
        help="our agent with its session store on, off, or both side by side (default both)",
    )
    parser.add_argument(
        "--same-processes",
        action="store_true",
        help="run both modes on one set of processes instead of a fresh set each (a quicker run)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as one JSON object to FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="acp-bench-state-") as state:
        return await bench(args, Path(state))


async def bench(args: argparse.Namespace, state: Path) -> int:
    env = {
        "PYTHONPATH": str(ROOT),
        # the model "thinks" 20 ms, as a real back-end waits on its socket: the worker thread
        # blocks right after hook A, exactly when the card must reach the client
        "ACP_PROGRESS_EMBEDDED_DELAY": "0.02",
        "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY": "0",
        "ACP_PROGRESS_HEARTBEAT_DISABLED": "1",
        # never the user's state or configuration: everything in this run's temporary directory
        "ACP_PROGRESS_STATE_DIR": str(state / "sessions"),
        "XDG_STATE_HOME": str(state / "xdg-state"),
        "ACP_PROGRESS_CONFIG_DIR": str(state / "config"),
    }
    stores = ("on", "off") if args.store == "both" else (args.store,)
    with tempfile.NamedTemporaryFile("w", suffix="_bare_agent.py", delete=False) as handle:
        handle.write(BARE_AGENT)
        bare_path = handle.name
    figures: dict[str, dict[str, float]] = {}

    def fresh_sides() -> list[Side]:
        return [
            Side([sys.executable, bare_path], env, want_think=False),
            Side([sys.executable, bare_path, "--worker-thread"], env, want_think=False),
        ] + [
            Side([sys.executable, "-m", "acp_adapter"], {**env, "ACP_PROGRESS_STATE": store}, want_think=True)
            for store in stores
        ]

    modes = (
        ("after_idle", f"after idle ({args.idle * 1000:g} ms between prompts)", args.idle),
        ("back_to_back", "back to back", 0.0),
    )
    try:
        if args.same_processes:
            async with running(fresh_sides()) as sides:
                for key, mode, idle in modes:
                    samples = await measure_interleaved(sides, args.runs, args.rounds, idle)
                    figures[key] = report(mode, samples, args.rounds, stores)
        else:
            for key, mode, idle in modes:
                async with running(fresh_sides()) as sides:
                    samples = await measure_interleaved(sides, args.runs, args.rounds, idle)
                figures[key] = report(mode, samples, args.rounds, stores)
    finally:
        os.unlink(bare_path)
    if args.json:
        Path(args.json).write_text(json.dumps(figures))
    return 0


def compare(name: str, ours: list[float], base: list[float], per_round: int) -> tuple[str, float]:
    """The comparison's line, and the median of the rounds' own ratios."""
    shares = round_ratios(round_medians(ours, per_round), round_medians(base, per_round))
    line = (
        f"{name}: ratio of medians {statistics.median(ours) / statistics.median(base):.2f}x,"
        f" median of the rounds' own ratios {shares.median:.2f}x ({shares.spread()})"
    )
    return line, shares.median


def report(mode: str, samples: list[list[float]], rounds: int, stores: tuple[str, ...]) -> dict[str, float]:
    baseline, threaded, *ours_by_store = samples
    by_store = dict(zip(stores, ours_by_store, strict=True))
    ours = by_store.get("on", ours_by_store[0])  # the product as shipped: store on
    per_round = max(1, len(ours) // rounds)
    print(f"{mode}: {len(ours)} prompts per side, in {rounds} alternating rounds")
    print(f"  bare SDK  prompt → first notification : {describe(baseline)}")
    print(f"    same, with a worker-thread turn     : {describe(threaded)}")
    for store, samples_of in by_store.items():
        print(f"  acp-progress prompt → think card, store {store:3s}: {describe(samples_of)}")
    label = f" (store {stores[0]})" if len(stores) == 1 else " (store on)"
    print(f"  acp-progress{label}")
    figures = {"prompts": float(len(ours)), "ours_median_ms": statistics.median(ours) * 1000}
    for key, name, base in (
        ("vs_bare_sdk", "bare SDK", baseline),
        ("vs_bare_sdk_worker_thread", "bare SDK with a worker-thread turn", threaded),
    ):
        line, figures[key] = compare(f"vs {name}", ours, base, per_round)
        print("  " + line)
    if len(by_store) == 2:
        line, figures["store_on_vs_off"] = compare(
            "store on vs store off", by_store["on"], by_store["off"], per_round
        )
        print("  " + line)
    return figures


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
