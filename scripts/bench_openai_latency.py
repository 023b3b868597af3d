"""Latency of the OpenAI-compatible back-end, end to end through the real stdio agent.

Runs the fake OpenAI server (tests/helpers/fake_openai.py) in this process and spawns ``python -m
acp_adapter`` with ``ACP_PROGRESS_MODEL=openai`` pointing at it; the client is the ACP SDK's
``spawn_agent_process`` with a small class that stamps every update with ``time.monotonic()``.
The server stamps its first SSE byte with the same clock (same process), so the numbers span the
whole path: socket → HTTP client → SSE parsing → agent loop → hook B → outbox → JSON-RPC → client.

Measured:

(a) first SSE byte written by the server → the think card's ``completed`` update at the client
    (and, for reference, → the first answer chunk), with tokens paced 5 ms apart as a fast real
    server sends them, and again with the whole response sent in one burst (the worst case: the
    agent's worker thread then keeps the GIL while it parses the rest, delaying the event loop);
(b) ``session/cancel`` sent while the server withholds the first token → the prompt response
    (and → the server seeing the HTTP request aborted).

Baseline, measured in the same run: a tiny agent written with the bare SDK that answers a prompt by
sending one ``agent_message_chunk`` stamped with ``time.monotonic()`` (CLOCK_MONOTONIC is shared by
the processes of one machine): the SDK's one-way notification latency, and its no-op prompt round
trip. The ratios compare (a) with the one-way notification and (b) with the round trip.

Usage (from the project root): ``python scripts/bench_openai_latency.py [--runs N] [--cancels M]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402
from acp.schema import (  # noqa: E402
    AgentMessageChunk,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
)

from tests.helpers.fake_openai import FakeOpenAI, text_reply  # noqa: E402

BENCH_KEY = "sk-bench-0000000000000000"


class TimingClient:
    """Records, per session, when the think card started/completed and when answer text arrived."""

    def __init__(self) -> None:
        self.think_ids: set[str] = set()
        self.think_started: dict[str, float] = {}
        self.think_completed: dict[str, float] = {}
        self.first_chunk: dict[str, float] = {}
        self.chunks: list[tuple[float, str]] = []
        self.started = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        now = time.monotonic()
        if isinstance(update, ToolCallStart) and update.kind == "think":
            self.think_ids.add(update.tool_call_id)
            self.think_started.setdefault(session_id, now)
            self.started.set()
        elif isinstance(update, ToolCallProgress) and update.tool_call_id in self.think_ids:
            if update.status == "completed":
                self.think_completed.setdefault(session_id, now)
        elif isinstance(update, AgentMessageChunk):
            self.first_chunk.setdefault(session_id, now)
            self.chunks.append((now, getattr(update.content, "text", "")))

    async def request_permission(self, *args: Any, **kwargs: Any) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


TINY_AGENT = textwrap.dedent(
    """
    import asyncio, time
    from acp import run_agent, update_agent_message_text
    from acp.schema import InitializeResponse, NewSessionResponse, PromptResponse

    class Tiny:
        def on_connect(self, conn):
            self.conn = conn
        async def initialize(self, protocol_version, **kwargs):
            return InitializeResponse(protocol_version=protocol_version)
        async def new_session(self, cwd, mcp_servers=None, **kwargs):
            return NewSessionResponse(session_id="s1")
        async def prompt(self, prompt, session_id, **kwargs):
            await self.conn.session_update(
                session_id=session_id, update=update_agent_message_text(repr(time.monotonic()))
            )
            return PromptResponse(stop_reason="end_turn")
        async def cancel(self, session_id, **kwargs):
            return None

    asyncio.run(run_agent(Tiny()))
    """
)


def stats(values: list[float]) -> tuple[float, float]:
    """(median, p95) in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return statistics.median(ordered) * 1000, p95 * 1000


def line(label: str, values: list[float]) -> str:
    median, p95 = stats(values)
    return f"{label:<52} median {median:8.2f} ms   p95 {p95:8.2f} ms   (n={len(values)})"


async def _initialize(conn: Any) -> None:
    await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="bench", version="0"),
    )


async def bench_agent(server: FakeOpenAI, runs: int, cancels: int, workspace: str) -> dict[str, list[float]]:
    env = {
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PATH": os.environ.get("PATH", ""),
        "ACP_PROGRESS_MODEL": "openai",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": BENCH_KEY,
        "ACP_PROGRESS_OPENAI_MODEL": "bench-model",
        "ACP_PROGRESS_HEARTBEAT_INTERVAL": "1",
        "ACP_PROGRESS_LOG_LEVEL": "WARNING",
    }
    client = TimingClient()
    out: dict[str, list[float]] = {
        "complete": [],
        "chunk": [],
        "burst_complete": [],
        "burst_chunk": [],
        "cancel": [],
        "abort": [],
    }
    with tempfile.TemporaryFile() as stderr:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "acp_adapter",
            env=env,
            cwd=str(ROOT),
            transport_kwargs={"stderr": stderr},
        ) as (conn, _process):
            await _initialize(conn)
            warmup = 5
            # paced: tokens 5 ms apart (faster than real servers, which send them one by one);
            # burst: the whole response in one go (the worst case for the agent's threads)
            for prefix, chunk_delay in (("", 0.005), ("burst_", 0.0)):
                for i in range(warmup + runs):
                    server.script(
                        text_reply("Hello", " world", "!", first_byte_delay=0.005, chunk_delay=chunk_delay)
                    )
                    session = await conn.new_session(cwd=workspace, mcp_servers=[])
                    sid = session.session_id
                    response = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
                    assert response.stop_reason == "end_turn", response
                    first_byte = server.responses[-1].first_byte_at
                    assert first_byte is not None and sid in client.think_completed, (
                        "no think card completion"
                    )
                    if i >= warmup:
                        out[prefix + "complete"].append(client.think_completed[sid] - first_byte)
                        out[prefix + "chunk"].append(client.first_chunk[sid] - first_byte)
            for _ in range(cancels):
                server.script(text_reply("never", delay=60))
                session = await conn.new_session(cwd=workspace, mcp_servers=[])
                sid = session.session_id
                expected = len(server.requests) + 1
                client.started.clear()
                task = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("cancel me")]))
                await asyncio.wait_for(client.started.wait(), 10)
                assert await asyncio.to_thread(server.wait_for_requests, expected, 10), "no request"
                await asyncio.sleep(0.02)
                cancelled_at = time.monotonic()
                await conn.cancel(session_id=sid)
                response = await task
                answered_at = time.monotonic()
                assert response.stop_reason == "cancelled", response
                out["cancel"].append(answered_at - cancelled_at)
                disconnected = await asyncio.to_thread(server.wait_for_disconnect, -1, 2.0)
                if disconnected is not None:
                    out["abort"].append(disconnected - cancelled_at)
    return out


async def bench_baseline(runs: int, workspace: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"notify": [], "roundtrip": []}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "tiny_agent.py"
        script.write_text(TINY_AGENT)
        client = TimingClient()
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        async with spawn_agent_process(client, sys.executable, str(script), env=env, cwd=workspace) as (
            conn,
            _p,
        ):
            await _initialize(conn)
            session = await conn.new_session(cwd=workspace, mcp_servers=[])
            warmup = 5
            for i in range(warmup + runs):
                before = len(client.chunks)
                sent = time.monotonic()
                await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
                returned = time.monotonic()
                arrived, text = client.chunks[before]
                if i >= warmup:
                    out["roundtrip"].append(returned - sent)
                    out["notify"].append(arrived - float(text))
    return out


async def main_async(runs: int, cancels: int) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as workspace, FakeOpenAI(api_key=BENCH_KEY) as server:
        agent = await bench_agent(server, runs, cancels, workspace)
        base = await bench_baseline(runs, workspace)
    print(f"OpenAI back-end latency through the stdio agent ({runs} prompts per pacing, {cancels} cancels)")
    print(line("(a) first SSE byte -> think card completed", agent["complete"]))
    print(line("    first SSE byte -> first answer chunk (*)", agent["chunk"]))
    print(line("(a, burst) first SSE byte -> think card completed", agent["burst_complete"]))
    print(line("    burst: first SSE byte -> first answer chunk (*)", agent["burst_chunk"]))
    print(line("(b) session/cancel -> prompt response", agent["cancel"]))
    if agent["abort"]:
        print(line("    session/cancel -> HTTP request aborted (server)", agent["abort"]))
    print(line("baseline: bare SDK notification, agent -> client", base["notify"]))
    print(line("baseline: bare SDK no-op prompt round trip", base["roundtrip"]))
    n_med, n_p95 = stats(base["notify"])
    r_med, r_p95 = stats(base["roundtrip"])
    for label, key, (b_med, b_p95) in (
        ("(a) / notification baseline", "complete", (n_med, n_p95)),
        ("(a, burst) / notification baseline", "burst_complete", (n_med, n_p95)),
        ("(b) / round-trip baseline", "cancel", (r_med, r_p95)),
    ):
        med, p95 = stats(agent[key])
        print(f"ratio {label:<36} median {med / b_med:6.2f}x   p95 {p95 / b_p95:6.2f}x")
    print("(*) the agent's streaming redaction holds answer text back to a safe boundary (the next token)")
    print(f"(total {time.monotonic() - started:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="prompts measured for (a) and the baseline")
    parser.add_argument("--cancels", type=int, default=50, help="cancellations measured for (b)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.cancels < 1:
        parser.error("--runs and --cancels must be >= 1")
    asyncio.run(main_async(args.runs, args.cancels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
