"""The agent survives any line of input and goes away promptly when the editor hangs up."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from acp.schema import ToolCallStart

from acp_adapter.protocol import Accepted, MessageReader, StreamLimits, classify_line
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, prompt_text, spawn_agent


class RawAgent:
    """``python -m acp_adapter`` on plain pipes, to send what no SDK client would."""

    def __init__(self, cwd: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acp_adapter"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **agent_env()},
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, id_: int, method: str, params: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}))

    def next_message(self, timeout: float = 15) -> Any:
        return json.loads(self.lines.get(timeout=timeout))

    def messages_until(self, done: Any, timeout: float = 20) -> list[Any]:
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.next_message(deadline - time.monotonic())
            out.append(message)
            if done(message):
                return out
        raise AssertionError(f"no matching message in {out}")


def _is_response(id_: Any) -> Any:
    return lambda m: isinstance(m, dict) and m.get("id") == id_ and ("result" in m or "error" in m)


@pytest.mark.e2e
def test_lines_that_are_not_one_object_get_errors_and_the_agent_keeps_serving(tmp_path):
    agent = RawAgent(str(tmp_path))
    try:
        agent.request(1, "initialize", {"protocolVersion": 1})
        assert agent.messages_until(_is_response(1))[-1]["result"]["protocolVersion"] == 1
        agent.request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = agent.messages_until(_is_response(2))[-1]["result"]["sessionId"]
        # a prompt in flight while the garbage arrives must still be answered
        text = [{"type": "text", "text": "what is 2+3"}]
        agent.request(3, "session/prompt", {"sessionId": session_id, "prompt": text})
        for bad in ("42", '"s"', "true", "[1,2,3]", "null", "{not json", '{"jsonrpc": "2.0", "id": '):
            agent.send(bad)
        agent.send('[{"jsonrpc": "2.0", "id": 9, "method": "initialize"}, {"jsonrpc": "2.0", "method": "x"}]')
        agent.send("[]")
        agent.request(4, "initialize", {"protocolVersion": 1})
        seen: list[Any] = []
        while not (any(_is_response(3)(m) for m in seen) and any(_is_response(4)(m) for m in seen)):
            seen.append(agent.next_message(timeout=30))
    finally:
        assert agent.proc.stdin is not None
        agent.proc.stdin.close()
        code = agent.proc.wait(timeout=10)
    assert code == 0
    errors = [m for m in seen if isinstance(m, dict) and "error" in m]
    codes = [e["error"]["code"] for e in errors]
    assert codes.count(-32700) == 2, errors  # the two invalid JSON lines
    assert codes.count(-32600) == 5, errors  # 42, "s", true, null, []
    numbers, batch = [m for m in seen if isinstance(m, list)]
    assert [(e["id"], e["error"]["code"]) for e in numbers] == [(None, -32600)] * 3  # [1,2,3]
    # the batch: one error for the request with id 9, none for the notification
    assert [(e["id"], e["error"]["code"]) for e in batch] == [(9, -32600)]
    assert all(e["id"] is None for e in errors)
    prompt = next(m for m in seen if _is_response(3)(m))
    assert prompt["result"]["stopReason"] == "end_turn"
    assert next(m for m in seen if _is_response(4)(m))["result"]["protocolVersion"] == 1


@pytest.mark.parametrize(
    ("line", "passes", "code"),
    [
        (b'{"jsonrpc": "2.0", "method": "x"}\n', True, None),
        (b"42\n", False, -32600),
        (b"null\n", False, -32600),
        (b"\xff\xfe\n", False, -32700),
        (b"{\n", False, -32700),
        (b"   \n", False, None),
    ],
)
def test_classify_line(line, passes, code):
    result = classify_line(line.rstrip(b"\n"))
    assert isinstance(result, Accepted) is passes
    answer = getattr(result, "answer", None)
    assert (answer["error"]["code"] if answer else None) == code


@pytest.mark.e2e
@pytest.mark.anyio
async def test_agent_exits_within_two_seconds_of_a_hang_up_whatever_the_turn_does(tmp_path):
    client = RecordingClient()
    started = asyncio.Event()
    client.on_update = lambda r: started.set() if isinstance(r.update, ToolCallStart) else None
    argv = [str(ROOT / "tests" / "agents" / "stubborn_agent.py")]
    async with spawn_agent(client, argv=argv) as (conn, process, _log):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        turn = asyncio.create_task(prompt_text(conn, session.session_id, "think hard"))
        await asyncio.wait_for(started.wait(), 10)
        hung_up = time.monotonic()
        process.stdin.close()  # the editor hangs up mid-turn
        await asyncio.wait_for(process.wait(), 10)
        took = time.monotonic() - hung_up
        turn.cancel()
    assert took < 2.0, f"the agent took {took:.1f}s to exit after the hang-up"


@pytest.mark.anyio
async def test_an_over_long_line_is_skipped_whole_answered_once_and_reading_goes_on():
    source = asyncio.StreamReader()
    reader = MessageReader(source, StreamLimits(max_line_bytes=1024))
    source.feed_data(b'{"jsonrpc": "2.0", "method": "a"}\n')
    # an over-long line whose tail is a request: the tail must not be read as a line of its own
    tail = b'{"jsonrpc": "2.0", "method": "tail"}'
    source.feed_data(b" " * 5000 + tail + b"\n")
    source.feed_data(b'{"jsonrpc": "2.0", "method": "b"}\n')
    source.feed_eof()
    items = []
    while (item := await asyncio.wait_for(reader.next(), 5)) is not None:
        items.append(item)
    methods = [i.message["method"] for i in items if isinstance(i, Accepted)]
    assert methods == ["a", "b"]
    refused = [i for i in items if not isinstance(i, Accepted)]
    assert len(refused) == 1 and refused[0].answer["error"]["code"] == -32700
    assert "too long" in refused[0].answer["error"]["data"]["details"]


@pytest.mark.e2e
@pytest.mark.parametrize("command", [["-m", "acp_adapter"], ["-m", "acp_adapter.cli", "relay", "--"]])
@pytest.mark.parametrize("stdout", ["pipe", "devnull"])
def test_an_agent_started_on_dev_null_reads_its_end_and_exits(tmp_path, command, stdout):
    """``< /dev/null`` is a character device epoll refuses: it must read as an empty input (exit 0
    at once), not leave the agent (or the relay in front of one) waiting for ever."""
    argv = [sys.executable, *command]
    if command[-1] == "--":
        # the relay is what reads /dev/null here; behind it, an agent that ends with its input (this
        # project's agent doing so is the other case), without a second start of the ACP SDK
        argv += [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout == "pipe" else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **agent_env()},
        cwd=tmp_path,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"ERROR" not in done.stderr, done.stderr


SERVE_THRICE = """
import functools, gc, sys
import anyio
from acp_adapter.config import Settings
from acp_adapter.server import ProgressAgent, exit_if_turns_stuck, serve
from run_agent import AIAgent

for _ in range(3):
    served = anyio.run(functools.partial(serve, Settings.from_env(), turn_runner=AIAgent), backend="asyncio")
    exit_if_turns_stuck(served)  # nothing stuck: returns
    del served
gc.collect()
print("alive", sum(isinstance(o, ProgressAgent) for o in gc.get_objects()), file=sys.stderr)
"""


@pytest.mark.e2e
def test_serving_again_keeps_no_agent_of_an_earlier_serve_alive():
    """No growing module-level state: ``serve`` hands the agent that served to its caller (for the
    stuck-turn check) instead of keeping it in a registry, so serving three times (each client
    hanging up at once) leaves no agent, and none of its sessions, behind."""
    done = subprocess.run(
        [sys.executable, "-c", SERVE_THRICE],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, **agent_env()},
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stderr.strip().splitlines()[-1] == "alive 0", done.stderr[-800:]
