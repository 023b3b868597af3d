"""Two ways a bridge could stall or interleave: typing outside the route's ordered queue, and a
hanging summary generator starving ``asyncio.to_thread`` for everybody."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest
from acp import update_agent_thought_text

from acp_adapter.frontends.bridges.config import new_instance
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.runner import BridgeRunner
from acp_adapter.summary import ProgressSummary
from acp_adapter.summary.generators import SUMMARY_THREADS, BoundedThreads, GeneratorBusy
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.bridge_fakes import RecordingSink
from tests.helpers.shared_servers import use_in_process_agents

pytestmark = pytest.mark.anyio


class OneAtATimeSink(RecordingSink):
    """A chat whose every call takes a while and which notices two calls in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.overlaps: list[tuple[Any, ...]] = []

    async def _slow(self, op: tuple[Any, ...]) -> None:
        self.in_flight += 1
        if self.in_flight > 1:
            self.overlaps.append(op)
        try:
            await asyncio.sleep(0.03)
        finally:
            self.in_flight -= 1

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
        await self._slow(("post", text))
        return await super().post(text, silent=silent, exactly_once=exactly_once)

    async def edit(self, message_id: int, text: str) -> None:
        await self._slow(("edit", text))
        await super().edit(message_id, text)

    async def typing(self, on: bool) -> None:
        await self._slow(("typing", on))
        await super().typing(on)

    async def react(self, target: int, kind: str) -> None:
        await self._slow(("react", kind))
        await super().react(target, kind)


async def test_typing_goes_through_the_routes_ordered_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """Typing is a queued event: one platform call of a chat at a time, in queue order. A turn that
    called ``set_typing`` itself would run a typing call while the route worker is in the middle of
    a post (two platform calls of one chat at once), and typing could follow the answer. The
    bridge's agent runs in this process (the route's queue is the point, not the agent's process)
    and thinks 0.05 s a step: its updates come closer together, which only tests the queue harder."""
    use_in_process_agents(monkeypatch)
    instance = new_instance("c", "console", cwd=str(ROOT))
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    runner = BridgeRunner(instance, BridgeOptions(agent_env=env, window=0.05))
    sink = OneAtATimeSink()
    try:
        await asyncio.wait_for(runner.handle_message("c", "search for TODO", sink, 1), 60)
    finally:
        await runner.close()
    assert any(op[0] == "typing" and op[1] is True for op in sink.ops), "typing was shown"
    assert sink.overlaps == []
    answers = [i for i, op in enumerate(sink.ops) if op[0] == "post" and "searched" in op[2]]
    assert answers, sink.ops
    after = sink.ops[answers[0] + 1 :]
    assert not any(op[0] == "typing" and op[1] is True for op in after), "typing after the answer"


async def test_a_hanging_summary_generator_does_not_starve_to_thread() -> None:
    """Sync generators share at most ``SUMMARY_THREADS`` threads of their own and busy ticks are
    skipped. One more ``asyncio.to_thread`` call of a hung function per tick would leave the default
    executor no thread, and every ``to_thread`` (the console bridge's stdin reader included) would
    wait forever."""
    loop = asyncio.get_running_loop()
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=4)
    loop.set_default_executor(executor)
    gate = threading.Event()
    started: list[int] = []

    def hang(request: Any) -> str:
        started.append(threading.get_ident())
        gate.wait(10)
        return "never in time"

    summaries = [ProgressSummary(hang, interval=0.01, timeout=0.01) for _ in range(3)]
    try:
        for summary in summaries:
            summary.start()
            summary.observe(update_agent_thought_text("thinking about it"))
        await asyncio.sleep(0.5)  # ~50 ticks each
        assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), 2.0) == 42
        assert len(started) <= SUMMARY_THREADS
        assert sum(s.stats.skipped_ticks for s in summaries) > 10
    finally:
        for summary in summaries:
            summary.stop("finished")
        gate.set()
        executor.shutdown(wait=False)


async def test_bounded_threads_refuse_instead_of_queueing() -> None:
    threads = BoundedThreads(limit=1)
    gate = threading.Event()
    first = asyncio.create_task(threads.run(gate.wait, 5))
    await asyncio.sleep(0.05)
    try:
        await threads.run(lambda: 1)
    except GeneratorBusy:
        pass
    else:
        raise AssertionError("a second call ran while the only thread was busy")
    gate.set()
    assert await first is True
    for _ in range(100):
        if threads.busy == 0:
            break
        await asyncio.sleep(0.01)
    assert await threads.run(lambda: 7) == 7
