#!/usr/bin/env python3
"""Peak memory of the agent when an HTTP MCP server answers a call with 300 MB, against a small
answer, in the same run.

The server is the tests' hostile one (``tests/mcp_servers/hostile_http.py``): it streams its
answer a megabyte at a time and never holds it, so only the agent's side is measured. The agent
(``python -m acp_adapter``, the default size limit unless ``--limit`` is given) is spawned through
the ACP SDK; for each transport mode it first calls the ``small`` tool (the baseline: the agent's
peak resident memory, VmHWM, with an MCP server connected and one call done), then ``huge`` with
``--mb`` megabytes. Printed: both peaks in MiB, their growth and ratio, and how the call ended
(it must fail, cut off at the limit, with the agent still serving).

Usage: python scripts/bench_mcp_answer_memory.py [--mb 300] [--modes json,events,gzip,sse]
       [--limit BYTES] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AllowedOutcome,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    RequestPermissionResponse,
    SseMcpServer,
)


class Client:
    """Allows every call and keeps the last tool card's status and text (think cards aside)."""

    def __init__(self) -> None:
        self.cards: dict[str, dict[str, str]] = {}
        self.last = ""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = getattr(update, "session_update", None)
        if kind == "tool_call" and update.kind != "think":
            self.cards[update.tool_call_id] = {"status": "", "text": ""}
            self.last = update.tool_call_id
        card = self.cards.get(getattr(update, "tool_call_id", ""))
        if card is None or kind not in ("tool_call", "tool_call_update"):
            return
        card["status"] = update.status or card["status"]
        for item in getattr(update, "content", None) or []:
            card["text"] = getattr(getattr(item, "content", None), "text", "") or card["text"]

    @property
    def status(self) -> str:
        return self.cards.get(self.last, {}).get("status", "")

    @property
    def text(self) -> str:
        return self.cards.get(self.last, {}).get("text", "")

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        option = next(o for o in options if o.kind.startswith("allow"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def hostile(mode: str) -> Iterator[int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_servers.hostile_http", mode, str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        for _ in range(400):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def peak_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


async def measure(mode: str, mb: int, limit: int | None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ACP_PROGRESS_EMBEDDED_DELAY": "0"}
    env.pop("ACP_PROGRESS_MCP_MAX_LINE", None)
    if limit is not None:
        env["ACP_PROGRESS_MCP_MAX_LINE"] = str(limit)
    env["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="bench-mcp-mem-")
    client = Client()
    with hostile(mode) as port, tempfile.TemporaryDirectory() as cwd:
        if mode == "sse":
            server: Any = SseMcpServer(name="big", url=f"http://127.0.0.1:{port}/sse", headers=[], type="sse")
        else:
            server = HttpMcpServer(name="big", url=f"http://127.0.0.1:{port}/mcp", headers=[], type="http")
        spawn = spawn_agent_process(client, sys.executable, "-m", "acp_adapter", env=env, cwd=str(ROOT))  # type: ignore[arg-type]
        async with spawn as (conn, process):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="bench", version="0"),
            )
            sid = (await conn.new_session(cwd=cwd, mcp_servers=[server])).session_id
            await conn.prompt(session_id=sid, prompt=[text_block("call small {}")])
            baseline = peak_mib(process.pid)
            started = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=[text_block(f'call huge {{"mb": {mb}}}')])
            seconds = time.perf_counter() - started
            peak = peak_mib(process.pid)
            status, text = client.status, client.text
            await conn.prompt(session_id=sid, prompt=[text_block("call small {}")])
            serving = client.status == "completed"
    return {
        "mode": mode,
        "answer_mb": mb,
        "baseline_peak_mib": round(baseline, 1),
        "peak_mib": round(peak, 1),
        "growth_mib": round(peak - baseline, 1),
        "ratio": round(peak / baseline, 2),
        "seconds": round(seconds, 2),
        "call": status,
        "said": text[:160],
        "still_serving": serving,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--modes", default="json,events,gzip,sse")
    parser.add_argument(
        "--limit", type=int, default=None, help="ACP_PROGRESS_MCP_MAX_LINE (default: the agent's)"
    )
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()
    rows = [await measure(mode, args.mb, args.limit) for mode in args.modes.split(",")]
    for row in rows:
        print(
            f"{row['mode']:>6}: {row['answer_mb']} MB answer → peak {row['peak_mib']} MiB "
            f"(baseline {row['baseline_peak_mib']} MiB, +{row['growth_mib']} MiB, ×{row['ratio']}) "
            f"in {row['seconds']} s; call {row['call']}, agent still serving: {row['still_serving']}"
        )
        print(f"        {row['said']}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
