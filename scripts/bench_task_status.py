#!/usr/bin/env python3
"""Latency of an MCP task's status change against an MCP progress notification, same server, same run.

The agent (``ProgressAgent`` with the embedded model and the real turn loop) and an ACP client run
in this process over the SDK's in-memory transport, so one clock times the client side. The MCP
server is the task test server (``tests/mcp_servers/tasks.py``, a real stdio subprocess) whose
``stamped`` tool runs as an MCP task and, at every step, sends one ``notifications/tasks/status``
and one ``notifications/progress``, each stamped with the server's ``time.monotonic()``
(CLOCK_MONOTONIC is one clock for every process of the machine). For both, the latency is the time
until the client's ``session_update`` handler receives it on the task's card. The baseline is the
progress notification: it takes the path every MCP tool's progress takes. Printed: the medians
(of ``--samples`` status changes at least), their ratio, and the bare ``mcp`` SDK client's own
share for the progress path.

Usage: python scripts/bench_task_status.py [--samples 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import text_block  # noqa: E402
from acp.schema import EnvVariable, McpServerStdio  # noqa: E402
from inmemory_agent import allow_once, serve_in_memory  # noqa: E402

from acp_adapter.protocol.meta import META_KEY  # noqa: E402

STAMP = re.compile(r"t=([0-9]+\.[0-9]+)")


class Client:
    def __init__(self) -> None:
        self.status: list[float] = []
        self.progress: list[float] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        now = time.monotonic()
        progress = ((getattr(update, "field_meta", None) or {}).get(META_KEY) or {}).get("progress")
        if not progress or "message" not in progress:
            return
        message = progress["message"]
        found = STAMP.search(message)
        if found is None:
            return
        if message.startswith("task working: status"):
            self.status.append(now - float(found.group(1)))
        elif message.startswith("progress"):
            self.progress.append(now - float(found.group(1)))

    request_permission = staticmethod(allow_once)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    client = Client()
    agent, conn = await serve_in_memory(client)
    server = McpServerStdio(
        name="jobs",
        command=sys.executable,
        args=["-m", "tests.mcp_servers.tasks"],
        env=[EnvVariable(name="PYTHONPATH", value=str(ROOT))],
    )
    with tempfile.TemporaryDirectory() as cwd:
        sid = (await conn.new_session(cwd=cwd, mcp_servers=[server])).session_id
        for _ in range(60):  # rounds of 25 steps until enough of both were seen
            if len(client.status) >= args.samples and len(client.progress) >= args.samples:
                break
            line = 'call stamped {"steps": 25, "delay": 0.01}'
            await conn.prompt(session_id=sid, prompt=[text_block(line)])
    await agent.mcp.stop_all()
    agent.shutdown()
    if not client.status or not client.progress:
        raise SystemExit(f"nothing measured (status {len(client.status)}, progress {len(client.progress)})")
    status_ms = statistics.median(client.status) * 1000
    progress_ms = statistics.median(client.progress) * 1000
    ratio = status_ms / progress_ms if progress_ms > 0 else float("inf")
    figures = {
        "status_median_ms": round(status_ms, 3),
        "progress_median_ms": round(progress_ms, 3),
        "status_samples": len(client.status),
        "progress_samples": len(client.progress),
        "ratio": round(ratio, 2),
    }
    print(f"task status change → client handler:   median {status_ms:.3f} ms ({len(client.status)} samples)")
    count = len(client.progress)
    print(f"MCP progress (same server) → handler:  median {progress_ms:.3f} ms ({count} samples)")
    print(f"ratio status / progress: {ratio:.2f}×")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
