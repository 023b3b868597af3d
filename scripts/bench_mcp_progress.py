#!/usr/bin/env python3
"""Latency of MCP tool progress against built-in tool progress, in the same run.

The agent (``ProgressAgent`` with the embedded model and the real turn loop) and an ACP client run
in this process over the SDK's in-memory transport, so one clock times the client side. The MCP
server is the test kit (``tests/mcp_servers/kit.py``, a real stdio subprocess) whose ``stamped``
tool sends each ``notifications/progress`` with the server's ``time.monotonic()`` in its message
(CLOCK_MONOTONIC is one clock for every process of the machine). The built-in side is a tool on
the toolbox path every built-in tool uses (``Toolbox.execute`` → ``ctx.progress`` → card), which
notes the time of each ``ctx.progress`` call. For both, the latency is the time until the client's
``session_update`` handler receives that progress. Rounds alternate MCP and built-in turns; the
medians and their ratio are printed (goal: MCP ≤ 2× built-in).

Usage: python scripts/bench_mcp_progress.py [--rounds 5] [--steps 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import text_block  # noqa: E402
from acp.schema import EnvVariable, McpServerStdio  # noqa: E402
from inmemory_agent import allow_once, serve_in_memory  # noqa: E402

import acp_adapter.server as server_module  # noqa: E402
from acp_adapter.mcp.trust import trusted_meta  # noqa: E402
from acp_adapter.protocol.meta import META_KEY  # noqa: E402
from acp_adapter.tooling.builtin import BUILTIN_TOOLS  # noqa: E402
from acp_adapter.tooling.toolbox import Tool, ToolContext, ToolReturn  # noqa: E402

SENT: dict[str, float] = {}


def local_steps(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
    """A tool on the built-in path: progress like ``wait`` does, each send time noted."""
    steps, delay = int(args.get("steps", 20)), float(args.get("delay", 0.01))
    for i in range(1, steps + 1):
        time.sleep(delay)
        key = f"local {ctx.call.id} {i}"
        SENT[key] = time.monotonic()
        ctx.progress(i, steps, key)
    return ToolReturn(f"local {steps}")


LOCAL = Tool(
    "local_steps",
    "Progress steps on the built-in tool path.",
    {"type": "object", "properties": {"steps": {"type": "integer"}, "delay": {"type": "number"}}},
    local_steps,
)


class Client:
    def __init__(self) -> None:
        self.mcp: list[float] = []
        self.local: list[float] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        now = time.monotonic()
        progress = ((getattr(update, "field_meta", None) or {}).get(META_KEY) or {}).get("progress")
        if not progress or "message" not in progress:
            return
        message = progress["message"]
        if message.startswith("t="):
            self.mcp.append(now - float(message[2:]))
        elif message in SENT:
            self.local.append(now - SENT.pop(message))

    request_permission = staticmethod(allow_once)


async def raw_sdk(kit: McpServerStdio, rounds: int, steps: int) -> list[float]:
    """The same server and tool through the bare ``mcp`` SDK client (no agent): the transport's
    own share of the MCP latency, which no agent can remove without leaving the SDK."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=kit.command, args=list(kit.args), env={e.name: e.value for e in kit.env}
    )
    seen: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("t="):
            seen.append(time.monotonic() - float(message[2:]))

    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(rounds):
                await session.call_tool(
                    "stamped", {"steps": steps, "delay": 0.01}, progress_callback=progress
                )
    return seen


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    from acp_adapter.agent import session_mcp

    # the built-in tool of this benchmark joins the session's toolbox, which a session with MCP
    # servers builds in session_mcp (one without, in the server)
    server_module.BUILTIN_TOOLS = (*BUILTIN_TOOLS, LOCAL)  # type: ignore[attr-defined]
    session_mcp.BUILTIN_TOOLS = (*BUILTIN_TOOLS, LOCAL)  # type: ignore[misc]
    client = Client()
    agent, conn = await serve_in_memory(client)
    kit = McpServerStdio(
        name="kit",
        command=sys.executable,
        args=["-m", "tests.mcp_servers.kit"],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
        field_meta=trusted_meta(True),  # trusted: read-only tools run unasked, so only progress is timed
    )
    with tempfile.TemporaryDirectory() as cwd:
        session = await conn.new_session(cwd=cwd, mcp_servers=[kit])
        sid = session.session_id
        steps = args.steps
        for _ in range(args.rounds):
            for line in (
                f'call stamped {{"steps": {steps}, "delay": 0.01}}',
                f'call local_steps {{"steps": {steps}, "delay": 0.01}}',
            ):
                await conn.prompt(session_id=sid, prompt=[text_block(line)])
    await agent.mcp.stop_all()
    agent.shutdown()
    raw = await raw_sdk(kit, args.rounds, args.steps)
    if not client.mcp or not client.local:
        raise SystemExit(f"no progress measured (mcp {len(client.mcp)}, built-in {len(client.local)})")
    mcp_ms = statistics.median(client.mcp) * 1000
    local_ms = statistics.median(client.local) * 1000
    ratio = mcp_ms / local_ms if local_ms > 0 else float("inf")
    raw_ms = statistics.median(raw) * 1000 if raw else float("nan")
    own_ratio = (mcp_ms - raw_ms) / local_ms if local_ms > 0 else float("inf")
    figures = {
        "raw_sdk_median_ms": round(raw_ms, 3),
        "agent_share_ratio": round(own_ratio, 2),
        "mcp_median_ms": round(mcp_ms, 3),
        "builtin_median_ms": round(local_ms, 3),
        "mcp_samples": len(client.mcp),
        "builtin_samples": len(client.local),
        "ratio": round(ratio, 2),
        "goal": "<= 2",
    }
    print(f"MCP progress → client handler:      median {mcp_ms:.3f} ms ({len(client.mcp)} samples)")
    print(f"built-in progress → client handler: median {local_ms:.3f} ms ({len(client.local)} samples)")
    print(f"the bare mcp SDK client, same server:  median {raw_ms:.3f} ms (the transport's own share)")
    print(f"ratio MCP / built-in: {ratio:.2f}× (goal ≤ 2×)")
    print(f"ratio of what the agent adds to MCP progress / built-in: {own_ratio:.2f}×")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
