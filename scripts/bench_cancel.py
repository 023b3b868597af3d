#!/usr/bin/env python3
"""``session/cancel`` → the prompt's ``cancelled`` answer, under load, against a bare SDK agent.

The load is the fault soak's: while one session is cancelled again and again, ``--busy`` other
sessions of the same agent keep long turns running (a ``wait`` tool whose heartbeat and progress
stream every ``--interval`` seconds) and the client sends a malformed line now and then (answered
with a JSON-RPC error, never fatal). Each measured turn is a ``wait 30 seconds`` prompt cancelled
once its tool card runs; the figure is the time from writing ``session/cancel`` to the prompt's
response arriving (the client's own clock, one process).

Baseline, in the same run: an agent written with the bare SDK whose prompt waits for its cancel and
answers ``cancelled``, with the same number of busy sessions streaming an update every
``--interval`` seconds. Agents run one after the other, in alternating rounds; the ratio is the
median of the rounds' ratios of medians (scripts/paired_rounds.py).

Usage: python scripts/bench_cancel.py [--cancels 40] [--rounds 3] [--busy 4] [--interval 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)
from paired_rounds import round_ratios  # noqa: E402

BARE_AGENT = textwrap.dedent(
    """
    import asyncio, sys
    from acp import run_agent, update_agent_message_text
    from acp.schema import InitializeResponse, NewSessionResponse, PromptResponse

    INTERVAL = float(sys.argv[1])

    class Bare:
        def __init__(self):
            self.events = {}
            self.count = 0
        def on_connect(self, conn):
            self.conn = conn
        async def initialize(self, protocol_version, **kwargs):
            return InitializeResponse(protocol_version=protocol_version)
        async def new_session(self, cwd, mcp_servers=None, **kwargs):
            self.count += 1
            return NewSessionResponse(session_id=f"s{self.count}")
        async def prompt(self, prompt, session_id, **kwargs):
            event = self.events[session_id] = asyncio.Event()
            busy = prompt[0].text.startswith("busy")
            while not event.is_set():
                if busy:
                    await self.conn.session_update(session_id, update_agent_message_text("."))
                    try:
                        await asyncio.wait_for(event.wait(), INTERVAL)
                    except asyncio.TimeoutError:
                        pass
                else:
                    await self.conn.session_update(session_id, update_agent_message_text("go"))
                    await event.wait()
            return PromptResponse(stop_reason="cancelled")
        async def cancel(self, session_id, **kwargs):
            if session_id in self.events:
                self.events[session_id].set()

    asyncio.run(run_agent(Bare()))
    """
)


class _Client:
    """Sets ``started`` when the measured session's turn is running (its tool card, or for the
    bare agent its first update)."""

    def __init__(self) -> None:
        self.watch: str | None = None
        self.started = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if session_id != self.watch:
            return
        if isinstance(update, ToolCallStart | ToolCallProgress) and update.kind == "think":
            return
        if (
            isinstance(update, ToolCallStart)
            or getattr(update, "session_update", "") == "agent_message_chunk"
        ):
            self.started.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))


async def _measure(argv: list[str], env: dict[str, str], cwd: str, cancels: int, busy: int) -> list[float]:
    client = _Client()
    samples: list[float] = []
    async with spawn_agent_process(client, *argv, env=env, cwd=cwd) as (conn, process):  # type: ignore[arg-type]
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        load = []
        for _ in range(busy):
            sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
            load.append(
                (
                    sid,
                    asyncio.ensure_future(
                        conn.prompt(session_id=sid, prompt=[text_block("busy: wait 600 seconds")])
                    ),
                )
            )
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
        client.watch = sid
        for n in range(cancels):
            client.started.clear()
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait 30 seconds")]))
            answered: list[float] = []
            turn.add_done_callback(lambda _t, into=answered: into.append(time.perf_counter()))
            await asyncio.wait_for(client.started.wait(), 30)
            await asyncio.sleep(0.02)
            if n % 5 == 0 and process.stdin is not None:  # a fault: a malformed line, answered, never fatal
                process.stdin.write(b'{"jsonrpc": "2.0", "id": 99, "method": \n')
            sent = time.perf_counter()
            await conn.cancel(session_id=sid)
            response = await asyncio.wait_for(turn, 30)
            assert response.stop_reason == "cancelled", response
            samples.append(answered[0] - sent)
        for other, task in load:
            await conn.cancel(session_id=other)
            await asyncio.wait_for(task, 30)
    return samples


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]


async def measure(cancels: int, rounds: int, busy: int, interval: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-cancel-") as home:
        os.chmod(home, 0o700)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "XDG_STATE_HOME": home,
            "ACP_PROGRESS_CONFIG_DIR": home,
            "ACP_PROGRESS_EMBEDDED_DELAY": "0",
            "ACP_PROGRESS_HEARTBEAT_INTERVAL": str(interval),
        }
        env.pop("ACP_PROGRESS_STATE_DIR", None)
        bare: list[list[float]] = []
        ours: list[list[float]] = []
        for _ in range(rounds):
            bare.append(
                await _measure([sys.executable, "-c", BARE_AGENT, str(interval)], env, home, cancels, busy)
            )
            ours.append(await _measure([sys.executable, "-m", "acp_adapter"], env, home, cancels, busy))
    every_bare = [s for r in bare for s in r]
    every_ours = [s for r in ours for s in r]
    ratio = round_ratios([statistics.median(r) for r in ours], [statistics.median(r) for r in bare])
    return {
        "bare_median_ms": statistics.median(every_bare) * 1000,
        "bare_p99_ms": _p99(every_bare) * 1000,
        "ours_median_ms": statistics.median(every_ours) * 1000,
        "ours_p99_ms": _p99(every_ours) * 1000,
        "ratio": ratio.median,
        "ratio_low": ratio.low,
        "ratio_high": ratio.high,
        "cancels": len(every_ours),
        "busy_sessions": busy,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cancels", type=int, default=40, help="cancelled turns per agent and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=4, help="other sessions running turns meanwhile")
    parser.add_argument("--interval", type=float, default=0.02, help="their heartbeat / update interval (s)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    f = asyncio.run(measure(args.cancels, args.rounds, args.busy, args.interval))
    print(
        f"cancel -> cancelled answer, {f['busy_sessions']} busy sessions, n={f['cancels']}: "
        f"acp-progress median {f['ours_median_ms']:.2f} ms, p99 {f['ours_p99_ms']:.2f} ms; "
        f"bare SDK agent median {f['bare_median_ms']:.2f} ms, p99 {f['bare_p99_ms']:.2f} ms"
    )
    print(
        f"ratio of medians vs the bare SDK agent: {f['ratio']:.2f}x "
        f"(rounds {f['ratio_low']:.2f}–{f['ratio_high']:.2f})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(f, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
