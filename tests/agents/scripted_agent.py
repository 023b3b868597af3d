"""A foreign ACP agent for tests: it has no spinner of its own and behaves as argv says.

``python tests/agents/scripted_agent.py MODE [ARG]`` where MODE is one of

* ``silent S``  — on prompt, say nothing for S seconds (cancellable), then answer.
* ``gaps S``    — answer chunk, S seconds of silence, chunk, S seconds of silence, chunk.
* ``stream``    — answer at once in three chunks.
* ``crash``     — send one chunk, write to stderr, exit with code 3 mid-turn.
* ``fs``        — call ``fs/read_text_file`` and ``session/request_permission`` on the client, then
  report both answers as message text; also sends an extension notification and ``_meta``.
* ``garbage``   — write a non-JSON line on stdout, then answer.
* ``burst N``   — send N tool-call updates as fast as it can, then answer (for benchmarks).
* ``invalid N`` — send N notifications a client must refuse, of four kinds (a ``session/update``
  with no update, one of an unknown ``sessionUpdate``, a tool call whose id is a number, and a
  method no client has), then answer.
* ``paced N MS`` — send N tool-call updates MS milliseconds apart, each stamped with the sender's
  ``time.monotonic()`` in ``rawOutput.t`` (one clock for every process on Linux: latency benchmarks).
* ``prompted``  — each prompt's words are the MODE and its arguments (``paced 300 2``), so one
  process serves several modes (a benchmark's burst and paced runs).

It is written on the SDK's agent side, like any third-party agent would be.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import (
    RequestError,
    run_agent,
    start_tool_call,
    update_tool_call,
)
from acp.schema import (
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

from tests.agents.sdk_agent import SdkAgent


class ScriptedAgent(SdkAgent):
    agent_name = "scripted"
    agent_title = "Scripted test agent"

    def __init__(self, mode: str, arg: str | None, extra: str | None = None) -> None:
        super().__init__()
        self.mode = mode
        self.arg = arg
        self.extra = extra

    def initialize_meta(self) -> dict[str, Any]:
        return {"scripted": {"mode": self.mode}}

    async def _quiet(self, session_id: str, seconds: float) -> bool:
        """Stay silent; True when cancelled meanwhile."""
        event = self.cancelled.setdefault(session_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        mode, arg, extra = self.mode, self.arg, self.extra
        if mode == "prompted":  # the prompt's words name the mode and its arguments, as argv does
            words = [*" ".join(str(getattr(block, "text", "")) for block in prompt).split(), "", ""]
            mode, arg, extra = words[0], words[1] or None, words[2] or None
        self.cancelled[session_id] = asyncio.Event()
        seconds = float(arg or 1)
        if mode == "silent":
            print("scripted agent: prompt received", file=sys.stderr, flush=True)  # tests wait on it
            if await self._quiet(session_id, seconds):
                return PromptResponse(stop_reason="cancelled")
            await self._say(session_id, "done after silence")
        elif mode == "gaps":
            for i in range(3):
                if i and await self._quiet(session_id, seconds):
                    return PromptResponse(stop_reason="cancelled")
                await self._say(session_id, f"part {i} ")
        elif mode == "stream":
            for word in ("streamed ", "right ", "away"):
                await self._say(session_id, word)
        elif mode == "crash":
            await self._say(session_id, "about to crash")
            await asyncio.sleep(0.05)
            sys.stderr.write("scripted agent: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(3)
        elif mode == "fs":
            try:
                read_text = (
                    await self.conn.read_text_file(session_id=session_id, path="/tmp/relay-test.txt")
                ).content
            except RequestError as exc:
                read_text = f"error {exc.code}"
            await self.conn.ext_notification("scripted/hello", {"from": "agent"})
            tool = start_tool_call("perm-1", "Running rm -rf build", kind="execute", status="pending")
            await self.conn.session_update(session_id, tool)
            answer = await self.conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id="perm-1", title="Running rm -rf build"),
                options=[
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="no", name="Deny", kind="reject_once"),
                ],
            )
            outcome = answer.outcome
            chosen = getattr(outcome, "option_id", outcome.outcome)
            await self.conn.session_update(session_id, update_tool_call("perm-1", status="completed"))
            await self._say(session_id, f"read={read_text!r} permission={chosen}")
        elif mode == "garbage":
            os.write(1, b"this is not json\n")
            await self._say(session_id, "answer after garbage")
        elif mode == "paced":
            count, gap = int(arg or 100), float(extra or 2) / 1000
            await self.conn.session_update(session_id, start_tool_call("paced", "Paced", kind="other"))
            for i in range(count):
                await asyncio.sleep(gap)
                stamp = {"i": i, "t": time.monotonic()}
                await self.conn.session_update(
                    session_id, update_tool_call("paced", status="in_progress", raw_output=stamp)
                )
            await self.conn.session_update(session_id, update_tool_call("paced", status="completed"))
        elif mode == "burst":
            count = int(arg or 1000)
            await self.conn.session_update(session_id, start_tool_call("burst", "Burst", kind="other"))
            for i in range(count):
                await self.conn.session_update(
                    session_id, update_tool_call("burst", status="in_progress", raw_output={"i": i})
                )
            await self.conn.session_update(session_id, update_tool_call("burst", status="completed"))
            await self._say(session_id, "burst done")
        elif mode == "invalid":
            await self._invalid_updates(session_id, int(arg or 2000))
            await self._say(session_id, "after the invalid updates")
        return PromptResponse(stop_reason="end_turn")

    async def _invalid_updates(self, session_id: str, count: int) -> None:
        """What a broken agent sends: notifications the SDK's own methods would never build."""
        kinds: list[tuple[str, dict[str, Any]]] = [
            ("session/update", {"sessionId": session_id}),
            ("session/update", {"sessionId": session_id, "update": {"sessionUpdate": "no_such_update"}}),
            (
                "session/update",
                {"sessionId": session_id, "update": {"sessionUpdate": "tool_call", "toolCallId": 7}},
            ),
            ("session/no_such_method", {"sessionId": session_id}),
        ]
        raw = self.conn._conn  # the SDK connection under the typed methods: it sends what it is given
        for i in range(count):
            await raw.send_notification(*kinds[i % len(kinds)])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stream"
    arg = sys.argv[2] if len(sys.argv) > 2 else None
    extra = sys.argv[3] if len(sys.argv) > 3 else None
    asyncio.run(run_agent(ScriptedAgent(mode, arg, extra)))  # type: ignore[arg-type]
