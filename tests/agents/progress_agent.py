"""An ACP agent whose one tool reports exactly the progress a test (or benchmark) asks for.

The real agent's tools always report a message with their counts; the AG-UI tests also need a
tool that reports *only* ``value``/``total`` (the shape other AG-UI hosts report), one that reports only a
message, and runs with thousands of updates or a card that stays open until cancelled. Its cards
and ``_meta.acpProgress`` come from this project's builders, so they look exactly like the real
agent's. The prompt text picks the behaviour (one process serves every case):

* ``count N [MS]`` — tool ``count``: N updates ``{value: i, total: N}``, MS ms apart, then done.
* ``note``         — tool ``note``: two message-only updates, then done.
* ``secret``       — tool ``secret``: one update whose message holds a raw token, sent the way a
  foreign agent would (no redactor on this side), so the endpoint's own redaction is what shows.
* ``burst N``      — tool ``burst``: N ``{value, total}`` updates as fast as possible (benchmarks).
* ``stamp N MS``   — tool ``stamp``: N updates MS ms apart whose message is ``t=<time.monotonic()>``
  taken just before the update is sent (one clock for every process on Linux: latency benchmarks).
* ``text N``       — an answer streamed in N chunks, no tool.
* ``hang``         — tool ``hang`` stays in progress until ``session/cancel``, then fails; the turn
  ends ``cancelled``.
* ``crash``        — one answer chunk, then the process exits with code 3 mid-turn.
* ``forget``       — answer, then forget the session: its next prompt gets invalid-params, as
  with a session the real agent freed while idle.
* anything else    — the answer ``echo: <prompt>``.

Every tool turn ends with a short answer, so clients see text after the tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import (
    RequestError,
    run_agent,
    update_tool_call,
)
from acp.schema import (
    PromptResponse,
)

from acp_adapter.tools import (
    build_tool_complete,
    build_tool_failed,
    build_tool_progress,
    build_tool_start,
)
from tests.agents.sdk_agent import SdkAgent

SECRET = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"


class ProgressAgent(SdkAgent):
    agent_name = "progress"
    agent_title = "Progress test agent"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.forgotten: set[str] = set()

    def _open(self, name: str) -> tuple[str, Any]:
        self.calls += 1
        call_id = f"{name}-{self.calls}"
        return call_id, build_tool_start(call_id, name.title(), "other", raw_input={}, meta={"toolId": name})

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if session_id in self.forgotten:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "this session was freed"})
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        words = text.split()
        mode = words[0].lower() if words else ""
        numbers = [float(w) for w in words[1:] if w.replace(".", "", 1).isdigit()]
        cancelled = self.cancelled[session_id] = asyncio.Event()
        if mode == "forget":
            self.forgotten.add(session_id)
            await self._say(session_id, "forgotten")
            return PromptResponse(stop_reason="end_turn")
        if mode == "crash":
            await self._say(session_id, "about to crash")
            await asyncio.sleep(0.05)
            os._exit(3)
        if mode not in ("count", "note", "secret", "burst", "stamp", "hang", "text"):
            await self._say(session_id, f"echo: {text}")
            return PromptResponse(stop_reason="end_turn")
        if mode == "text":
            for i in range(int(numbers[0]) if numbers else 10):
                await self._say(session_id, f"chunk {i} ")
            return PromptResponse(stop_reason="end_turn")
        call_id, start = self._open(mode)
        await self._send(session_id, start)
        if mode == "hang":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancelled.wait(), 30)
            await self._send(session_id, build_tool_failed(call_id, "cancelled"))
            return PromptResponse(stop_reason="cancelled")
        count = int(numbers[0]) if numbers else 3
        gap = (numbers[1] if len(numbers) > 1 else 0.0) / 1000
        if mode == "note":
            for message in ("warming up", "halfway there"):
                await self._send(session_id, build_tool_progress(call_id, message=message))
        elif mode == "secret":
            progress = {"value": 1, "message": f"token {SECRET}"}
            meta = {"acpProgress": {"phase": "progress", "progress": progress}}
            raw = update_tool_call(call_id, status="in_progress").model_copy(update={"field_meta": meta})
            await self._send(session_id, raw)
        else:
            for i in range(1, count + 1):
                if gap:
                    await asyncio.sleep(gap)
                stamp = f"t={time.monotonic()!r}" if mode == "stamp" else None
                update = build_tool_progress(call_id, value=i, total=count, message=stamp)
                await self._send(session_id, update)
        await self._send(session_id, build_tool_complete(call_id, f"{mode} finished"))
        await self._say(session_id, f"{mode} done")
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(ProgressAgent()))  # type: ignore[arg-type]
