#!/usr/bin/env python3
"""What ``session/fork`` of a long session costs next to ``session/load`` of it, same run.

A session of ``--turns`` realistic turns is recorded through the agent's own recorder and store
(the session of scripts/bench_sessions.py). Then, in alternating rounds, a fresh agent answers
``session/load`` of it (the stored conversation read and replayed to the client) and another fresh
agent answers ``session/fork`` of it (the conversation copied inside the store, nothing replayed),
each over the connection ``serve`` builds on a real socket pair. The figure is the median of the
rounds' fork / load ratios (below 1: forking is cheaper than loading), with each path's median time.

With ``--store postgres`` the session is recorded into PostgreSQL (``--database-url URL``, else
``ACP_PROGRESS_DATABASE_URL``, else a throw-away server started with ``initdb`` as the tests do).

Usage: python scripts/bench_fork.py [--turns 500] [--rounds 5] [--store sqlite|postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from acp import PROTOCOL_VERSION  # noqa: E402
from acp.core import ClientSideConnection  # noqa: E402
from bench_sessions import SESSION, Counter, _database_url, record_session  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402

from acp_adapter.agent.routes import agent_connection  # noqa: E402
from acp_adapter.config import Settings, StoreSettings  # noqa: E402
from acp_adapter.protocol import JsonRpcStream  # noqa: E402
from acp_adapter.server import ProgressAgent  # noqa: E402
from run_agent import AIAgent  # noqa: E402


@contextlib.asynccontextmanager
async def served(state: Path, url: str | None) -> AsyncIterator[tuple[ClientSideConnection, Counter]]:
    """A fresh agent on ``state`` served as ``serve`` serves it, over a socket pair."""
    settings = Settings(state_dir=str(state), heartbeat_disabled=True, store=StoreSettings(url=url))
    agent = ProgressAgent(settings, turn_runner=AIAgent)
    a, b = socket.socketpair()
    ar, aw = await asyncio.open_connection(sock=a)
    br, bw = await asyncio.open_connection(sock=b)
    agent_conn = agent_connection(agent, JsonRpcStream(ar, aw))
    listening = asyncio.ensure_future(agent_conn.listen())
    client = Counter()
    client_conn = ClientSideConnection(client, bw, br)
    try:
        await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield client_conn, client
    finally:
        await agent.outbox.aclose()
        await client_conn.close()
        listening.cancel()
        with contextlib.suppress(BaseException):
            await listening
        await agent_conn.close()
        agent.shutdown()


async def load_once(state: Path, url: str | None) -> tuple[float, int]:
    async with served(state, url) as (conn, client):
        started = time.perf_counter()
        await conn.load_session(cwd=str(state), session_id=SESSION, mcp_servers=[])
        return time.perf_counter() - started, client.count


async def fork_once(state: Path, url: str | None) -> tuple[float, str]:
    async with served(state, url) as (conn, _client):
        started = time.perf_counter()
        forked = await conn.fork_session(session_id=SESSION, cwd=str(state), mcp_servers=[])
        return time.perf_counter() - started, forked.session_id


async def main_async(turns: int, rounds: int, json_path: str | None, url: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        record_session(state, turns, url)
        loads: list[float] = []
        forks: list[float] = []
        replayed = 0
        fork_id = ""
        for r in range(rounds):
            for path in ("load", "fork") if r % 2 == 0 else ("fork", "load"):
                gc.collect()
                if path == "load":
                    took, replayed = await load_once(state, url)
                    loads.append(took)
                else:
                    took, fork_id = await fork_once(state, url)
                    forks.append(took)
        # the last fork is a whole copy: its load replays what the source's does
        _took, fork_replayed = await _load_of(state, url, fork_id)
        assert fork_replayed == replayed, (fork_replayed, replayed)
        ratio = round_ratios(forks, loads)
        store = "PostgreSQL" if url else "SQLite"
        print(f"session of {turns} turns ({store}): a load replays {replayed} updates")
        print(f"session/load: median {statistics.median(loads) * 1000:.1f} ms")
        fork_ms = statistics.median(forks) * 1000
        print(f"session/fork: median {fork_ms:.1f} ms (a load of the fork replays the same)")
        print(f"fork / load: {ratio.median:.3f}x ({ratio.spread()})")
        if json_path:
            figures = {
                "turns": turns,
                "store": store,
                "replayed_updates": replayed,
                "load_ms": statistics.median(loads) * 1000,
                "fork_ms": statistics.median(forks) * 1000,
                "fork_vs_load": ratio.median,
            }
            Path(json_path).write_text(json.dumps(figures))


async def _load_of(state: Path, url: str | None, session_id: str) -> tuple[float, int]:
    async with served(state, url) as (conn, client):
        started = time.perf_counter()
        await conn.load_session(cwd=str(state), session_id=session_id, mcp_servers=[])
        return time.perf_counter() - started, client.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as one JSON object to FILE")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--database-url", metavar="URL", help="PostgreSQL to bench (default: a throw-away one)"
    )
    args = parser.parse_args()
    url, server = _database_url(args.database_url) if args.store == "postgres" else (None, None)
    try:
        asyncio.run(main_async(args.turns, args.rounds, args.json, url))
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
