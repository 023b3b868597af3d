#!/usr/bin/env python3
"""What durable sessions cost: the database size per 100 turns and the time to ``session/load``
a long session, next to the bare SDK sending the same updates.

A session of ``--turns`` realistic turns (a prompt, thought and answer text streamed in chunks,
one tool call with progress reports, usage) is recorded through the agent's own recorder and
SQLite store, exactly as ``serve`` records it. Then the agent answers ``session/load`` over the
SDK's connections on a real socket pair, replaying the stored conversation; the baseline, measured
in the same run, is the raw SDK sending the same replayed updates over the same kind of socket
pair (so the ratio is what reading, validating and replaying from the store adds to the wire
cost). Rounds alternate between the two paths; the ratio is the median of the rounds' ratios.

With ``--store postgres`` the same session is also recorded into and loaded from PostgreSQL
(``--database-url URL``, else ``ACP_PROGRESS_DATABASE_URL``, else a throw-away server started
with ``initdb`` as the tests do), in the same run, alternating with SQLite: the figures are the
recording time (the recorder's calls on the hot path, and until everything is written) and the
``session/load`` time of each, and their ratio (goal: PostgreSQL load ≤ 1.5x SQLite). ``--agui``
adds the replica figures (scripts/bench_replicas.py): 50 concurrent threads over 2 replicas vs 1.

Usage: python scripts/bench_sessions.py [--turns 500] [--rounds 5] [--store sqlite|postgres]
       [--agui [--agui-threads 50]]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import PROTOCOL_VERSION, start_tool_call, text_block, tool_content, update_tool_call  # noqa: E402
from acp.core import AgentSideConnection, ClientSideConnection  # noqa: E402
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UsageUpdate  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402

from acp_adapter.config import Settings, StoreSettings  # noqa: E402
from acp_adapter.protocol.meta import META_KEY  # noqa: E402
from acp_adapter.server import ProgressAgent  # noqa: E402
from acp_adapter.store import DATABASE_NAME, BackgroundWriter, SessionRecord, SqliteStore, open_store  # noqa: E402
from acp_adapter.store.recorder import ConversationRecorder  # noqa: E402
from run_agent import AIAgent  # noqa: E402

SESSION = "sess_bench"


class Counter:
    """The client side: counts the updates it receives."""

    def __init__(self) -> None:
        self.count = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.count += 1

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _turn_updates(n: int) -> list[Any]:
    """One realistic turn as the client sees it (what the recorder is fed)."""
    updates: list[Any] = []
    for i in range(20):
        updates.append(
            AgentThoughtChunk(session_update="agent_thought_chunk", content=text_block(f"thought {i} "))
        )
    card = f"call_{n}"
    updates.append(start_tool_call(card, f"Searching for item {n}", kind="search", status="in_progress"))
    for step in range(10):
        progress = update_tool_call(card, content=[tool_content(text_block(f"Scanned {step}/10 files"))])
        meta = {META_KEY: {"phase": "progress", "progress": {"value": step, "total": 10}}}
        updates.append(progress.model_copy(update={"field_meta": meta}))
    updates.append(
        update_tool_call(
            card, status="completed", content=[tool_content(text_block(f"3 matches in 2 files (turn {n})"))]
        )
    )
    for i in range(50):
        updates.append(
            AgentMessageChunk(session_update="agent_message_chunk", content=text_block(f"word{i} "))
        )
    updates.append(UsageUpdate(session_update="usage_update", used=1000 + n, size=128_000))
    return updates


def record_session(state: Path, turns: int, url: str | None = None) -> float:
    """Record the bench session; returns the seconds the recorder's calls took (the hot path:
    the writes themselves happen on the writer's thread)."""
    store: Any = SqliteStore(state) if url is None else open_store(None, retention_days=0, url=url)
    writer = BackgroundWriter(store)
    recorder = ConversationRecorder(store, writer)
    store.upsert_session(SessionRecord(SESSION, str(state), "bench", time.time(), time.time()))
    history: list[dict[str, Any]] = []
    hot = 0.0
    for n in range(turns):
        began = time.perf_counter()
        prompt = f"please look for item {n} in the workspace"
        recorder.begin_turn(SESSION, str(state), [text_block(prompt)], prompt)
        for update in _turn_updates(n):
            recorder.observe(SESSION, update)
        history += [{"role": "user", "content": prompt}, {"role": "assistant", "content": "done " * 50}]
        recorder.end_turn(SESSION, history[-200:])
        hot += time.perf_counter() - began
    writer.close()
    store.close()
    return hot


async def _pair(client: Counter, agent: Any) -> tuple[Any, Any, Any]:
    a, b = socket.socketpair()
    ar, aw = await asyncio.open_connection(sock=a)
    br, bw = await asyncio.open_connection(sock=b)
    agent_conn = AgentSideConnection(agent, aw, ar, listening=True)
    client_conn = ClientSideConnection(client, bw, br)
    return agent_conn, client_conn, (aw, bw)


async def load_once(state: Path, url: str | None = None) -> tuple[float, int]:
    settings = Settings(state_dir=str(state), heartbeat_disabled=True, store=StoreSettings(url=url))
    agent = ProgressAgent(settings, turn_runner=AIAgent)
    client = Counter()
    agent_conn, client_conn, _writers = await _pair(client, agent)
    await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
    started = time.perf_counter()
    await client_conn.load_session(cwd=str(state), session_id=SESSION, mcp_servers=[])
    took = time.perf_counter() - started
    await agent.outbox.aclose()
    await client_conn.close()
    await agent_conn.close()
    agent.shutdown()
    return took, client.count


class Sender:
    """The baseline's agent side: sends ``updates`` with the bare SDK when asked."""

    def __init__(self, updates: list[Any]) -> None:
        self.updates = updates
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> Any:
        from acp.schema import InitializeResponse

        return InitializeResponse(protocol_version=protocol_version)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> Any:
        from acp.schema import LoadSessionResponse

        for update in self.updates:
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse()


async def raw_once(updates: list[Any], cwd: str) -> float:
    sender = Sender(updates)
    client = Counter()
    agent_conn, client_conn, _w = await _pair(client, sender)
    await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
    started = time.perf_counter()
    await client_conn.load_session(cwd=cwd, session_id=SESSION, mcp_servers=[])
    took = time.perf_counter() - started
    assert client.count == len(updates)
    await client_conn.close()
    await agent_conn.close()
    return took


async def main_async(
    turns: int, rounds: int, json_path: str | None = None, url: str | None = None, agui: int = 0
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        started = time.perf_counter()
        record_hot_s = record_session(state, turns)
        record_s = time.perf_counter() - started
        size = sum(p.stat().st_size for p in state.iterdir() if p.name.startswith(DATABASE_NAME))
        store = SqliteStore(state)
        stored = store.load(SESSION)
        store.close()
        assert stored is not None
        from acp_adapter.store.recorder import replay_updates

        updates = replay_updates(SESSION, stored.events)
        ours: list[float] = []
        base: list[float] = []
        count = 0
        for r in range(rounds):
            for path in ("ours", "raw") if r % 2 == 0 else ("raw", "ours"):
                gc.collect()
                if path == "ours":
                    took, count = await load_once(state)
                    ours.append(took)
                else:
                    base.append(await raw_once(updates, str(state)))
        ratio = round_ratios(ours, base)
        print(f"session of {turns} turns: {len(stored.events)} stored entries, {count} updates replayed")
        print(f"recording it (recorder + background writer, all turns): {record_s:.2f} s")
        print(f"database size: {size / 1024:.0f} KiB, {size / 1024 / (turns / 100):.0f} KiB per 100 turns")
        print(f"session/load: median {statistics.median(ours) * 1000:.0f} ms")
        raw_ms = statistics.median(base) * 1000
        print(f"bare SDK sending the same {len(updates)} updates: median {raw_ms:.0f} ms")
        print(f"load / bare SDK: {ratio.median:.2f}x ({ratio.spread()})")
        extra: dict[str, Any] = {"record_s": record_s, "record_hot_s": record_hot_s}
        if url is not None:
            extra.update(await postgres_figures(state, turns, rounds, url, ours, record_s, record_hot_s))
        if agui and url is not None:
            from bench_replicas import replica_figures

            extra["agui"] = await asyncio.to_thread(replica_figures, url, agui)
        if json_path:
            figures = {
                **extra,
                "turns": turns,
                "stored_entries": len(stored.events),
                "replayed_updates": count,
                "database_kib": size / 1024,
                "kib_per_100_turns": size / 1024 / (turns / 100),
                "load_ms": statistics.median(ours) * 1000,
                "load_vs_bare_sdk": ratio.median,
            }
            Path(json_path).write_text(json.dumps(figures))


async def postgres_figures(
    state: Path, turns: int, rounds: int, url: str, sqlite_loads: list[float], record_s: float, hot_s: float
) -> dict[str, Any]:
    """The same session recorded into and loaded from PostgreSQL, loads alternating with SQLite's."""
    started = time.perf_counter()
    pg_hot_s = record_session(state, turns, url)
    pg_record_s = time.perf_counter() - started
    pg: list[float] = []
    lite: list[float] = []
    for r in range(rounds):
        for kind in ("pg", "sqlite") if r % 2 == 0 else ("sqlite", "pg"):
            gc.collect()
            took, _count = await load_once(state, url if kind == "pg" else None)
            (pg if kind == "pg" else lite).append(took)
    ratio = round_ratios(pg, lite)
    print(f"PostgreSQL: recording {turns} turns: {pg_record_s:.2f} s (SQLite {record_s:.2f} s)")
    print(f"  recorder calls on the hot path: {pg_hot_s * 1000:.0f} ms (SQLite {hot_s * 1000:.0f} ms)")
    print(
        f"  session/load: median {statistics.median(pg) * 1000:.0f} ms "
        f"(SQLite {statistics.median(lite) * 1000:.0f} ms in the same rounds)"
    )
    print(f"  load PostgreSQL / SQLite: {ratio.median:.2f}x ({ratio.spread()}); goal <= 1.5x")
    return {
        "pg_record_s": pg_record_s,
        "pg_record_hot_s": pg_hot_s,
        "pg_load_ms": statistics.median(pg) * 1000,
        "sqlite_load_ms_same_rounds": statistics.median(lite) * 1000,
        "pg_load_vs_sqlite": ratio.median,
    }


def _database_url(given: str | None) -> tuple[str, Any]:
    """The URL to bench against, and a throw-away server to stop after (None when given one)."""
    import os

    url = given or os.environ.get("ACP_PROGRESS_DATABASE_URL")
    if url:
        return url, None
    from tests.helpers.pg_server import PgServer

    server = PgServer()
    return server.create_database(), server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as one JSON object to FILE")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument(
        "--database-url", metavar="URL", help="PostgreSQL to bench (default: a throw-away one)"
    )
    parser.add_argument(
        "--agui", action="store_true", help="with --store postgres: AG-UI replica figures too"
    )
    parser.add_argument("--agui-threads", type=int, default=50, metavar="N", help="concurrent AG-UI threads")
    args = parser.parse_args()
    url, server = _database_url(args.database_url) if args.store == "postgres" else (None, None)
    try:
        asyncio.run(
            main_async(args.turns, args.rounds, args.json, url, args.agui_threads if args.agui else 0)
        )
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
