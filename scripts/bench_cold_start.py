#!/usr/bin/env python3
"""Cold start of the agent, against a bare SDK agent started the same way in the same run.

What an editor waits for before it can show anything: spawn the process, ``initialize``, and
``session/new`` answered. Each round starts the bare agent (the ACP SDK's ``run_agent`` with a
class that answers ``initialize`` and ``session/new`` and nothing else) and then ``python -m
acp_adapter`` (its settings, session store in a fresh private state directory, everything ``serve``
does before the first request), both through the SDK's ``spawn_agent_process``; the ratio is the
median of the rounds' ratios (scripts/paired_rounds.py), so load that changes between rounds does
not move it.

Both start from bytecode, as an installed package does (scripts/bytecode.py says why).

Usage: python scripts/bench_cold_start.py [--rounds 15] [--json FILE]
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

from acp import PROTOCOL_VERSION, spawn_agent_process  # noqa: E402
from acp.schema import ClientCapabilities, Implementation  # noqa: E402
from bytecode import compile_package  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402

BARE_AGENT = textwrap.dedent(
    """
    import asyncio
    from acp import run_agent
    from acp.schema import InitializeResponse, NewSessionResponse

    class Bare:
        def on_connect(self, conn):
            self.conn = conn
        async def initialize(self, protocol_version, **kwargs):
            return InitializeResponse(protocol_version=protocol_version)
        async def new_session(self, cwd, mcp_servers=None, **kwargs):
            return NewSessionResponse(session_id="s1")
        async def cancel(self, session_id, **kwargs):
            return None

    asyncio.run(run_agent(Bare()))
    """
)


class _Quiet:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("not asked in this benchmark")


async def _cold_start(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Seconds from spawning ``argv`` to its ``session/new`` answer."""
    started = time.perf_counter()
    async with spawn_agent_process(_Quiet(), *argv, env=env, cwd=cwd) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        await conn.new_session(cwd=cwd, mcp_servers=[])
        took = time.perf_counter() - started
    return took


async def measure(rounds: int) -> dict[str, Any]:
    compile_package()
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as home:
        os.chmod(home, 0o700)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "XDG_STATE_HOME": home,
            "ACP_PROGRESS_CONFIG_DIR": home,
        }
        env.pop("ACP_PROGRESS_STATE_DIR", None)
        bare: list[float] = []
        ours: list[float] = []
        for _ in range(rounds):
            bare.append(await _cold_start([sys.executable, "-c", BARE_AGENT], env, home))
            ours.append(await _cold_start([sys.executable, "-m", "acp_adapter"], env, home))
    ratio = round_ratios(ours, bare)
    return {
        "bare_median_ms": statistics.median(bare) * 1000,
        "ours_median_ms": statistics.median(ours) * 1000,
        "ratio": ratio.median,
        "ratio_low": ratio.low,
        "ratio_high": ratio.high,
        "rounds": rounds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.rounds))
    print(
        f"cold start (spawn, initialize, session/new): bare SDK agent {figures['bare_median_ms']:.0f} ms, "
        f"acp-progress {figures['ours_median_ms']:.0f} ms (medians)"
    )
    print(
        f"ratio vs the bare SDK agent: {figures['ratio']:.2f}x "
        f"(rounds {figures['ratio_low']:.2f}–{figures['ratio_high']:.2f}, n={figures['rounds']})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
