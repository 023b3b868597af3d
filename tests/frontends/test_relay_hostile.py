"""The relay between a raw editor and raw (hostile or broken) agents, on real pipes (every input
is bounded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.rawpipes import RawProcess, answers, request, rss_mb

pytestmark = pytest.mark.e2e

RAW_AGENT = [sys.executable, str(ROOT / "tests" / "agents" / "raw_agent.py")]
DEEP = b"[" * 973 + b"]" * 973
#: A relay that refuses the editor's bytes this long without growing by SETTLED_GROWTH_MB has
#: stopped moving (backpressure on both sides); one that grows slower (0.67 MB/s) would not reach
#: the test's 40 MB bound in its 8 s either.
SETTLED = 0.75
SETTLED_GROWTH_MB = 0.5


def _relay(
    tmp_path: Path, *agent_args: str, think_after: str = "0.3", **env: str
) -> tuple[RawProcess, Path, Path]:
    record = tmp_path / "agent-received.jsonl"
    stderr = tmp_path / "relay-stderr.log"
    argv = [
        sys.executable, "-m", "acp_adapter.cli", "relay",
        "--think-after", think_after, "--heartbeat-interval", "0.2",
        "--", *RAW_AGENT, str(record), *agent_args,
    ]  # fmt: skip
    proc = RawProcess(argv, agent_env(**env), str(tmp_path), stderr=stderr.open("wb"))
    return proc, record, stderr


def _received(record: Path) -> list[bytes]:
    return record.read_bytes().splitlines() if record.exists() else []


def test_lines_the_editor_may_not_send_are_answered_to_it_and_never_forwarded(tmp_path):
    relay, record, _ = _relay(tmp_path, ACP_PROGRESS_MAX_LINE_BYTES="65536")
    try:
        relay.send(DEEP + b"\n")
        relay.send(b'{"jsonrpc":"2.0","id":' + DEEP + b',"method":"echo"}\n')
        relay.send(b'{"jsonrpc":"2.0","id":NaN,"method":"echo"}\n')
        relay.send(b'{"jsonrpc":"2.0","id":3,"method":"echo","params":{"x":1e999}}\n')
        relay.send('{"jsonrpc":"2.0","id":4,"method":"echo"}\n'.encode("utf-16"))
        relay.send(b" " * 100_000 + request(666, "echo", {"tail": True}))  # over-long: its tail must not run
        relay.send(request(1, "echo", {"ok": True}))
        seen = relay.messages_until(answers(1))
    finally:
        code = relay.finish()
    assert code == 0
    assert seen[-1]["result"] == {"echo": {"ok": True}}
    refusals = [m for m in seen if "error" in m]
    assert len(refusals) >= 6 and all(r["id"] is None for r in refusals)
    forwarded = _received(record)
    assert [json.loads(line)["id"] for line in forwarded] == [1], forwarded  # only the good line


def test_lines_the_agent_may_not_send_never_reach_the_editor(tmp_path):
    relay, _, stderr = _relay(tmp_path, ACP_PROGRESS_MAX_LINE_BYTES="65536", RAW_AGENT_LONG="100000")
    try:
        relay.send(request(1, "hostile"))
        seen = relay.messages_until(answers(1))
        relay.send(request(2, "nested"))  # a nested line is not "the wrapped agent exited"
        seen += relay.messages_until(answers(2))
    finally:
        code = relay.finish()
    assert code == 0
    assert [m.get("result") for m in seen] == [{"echo": "after hostile"}, {"echo": "after nested"}]
    assert not any(b"TAIL" in line or b"Infinity" in line or b"utf16" in line for line in relay.raw)
    log = stderr.read_text()
    assert "dropped a non-JSON-RPC line from the agent" in log and "exited" not in log


def test_a_non_strict_answer_from_the_agent_becomes_an_error_for_that_request(tmp_path):
    relay, _, _ = _relay(tmp_path)
    try:
        relay.send(request(7, "nan"))
        (answer,) = relay.messages_until(answers(7))
        relay.send(request(8, "echo"))
        relay.messages_until(answers(8))
    finally:
        relay.finish()
    assert answer["error"]["code"] == -32603
    assert "refused" in answer["error"]["data"]["details"]
    assert not any(b":NaN" in line for line in relay.raw)  # never forwarded


def test_when_the_agent_dies_every_pending_request_is_answered_and_the_relay_exits_1(tmp_path):
    relay, _, stderr = _relay(tmp_path)
    try:
        # a lone-surrogate id in flight crashed the relay when its agent died
        relay.send(b'{"jsonrpc":"2.0","id":"\\ud800","method":"never-answered"}\n')
        relay.send(request(5, "die"))
        seen = [relay.next_message(), relay.next_message()]
        code = relay.proc.wait(timeout=15)
    finally:
        relay.finish()
    errors = {m["id"]: m["error"] for m in seen if "error" in m}
    assert set(errors) == {5, "\ud800"}
    assert all("the wrapped agent exited with code 3" in e["data"]["details"] for e in errors.values())
    assert code == 1
    lines = [line for line in stderr.read_text().splitlines() if "the relay stops" in line]
    assert len(lines) == 1 and "the wrapped agent exited with code 3" in lines[0]


def test_a_broken_pipe_to_the_agent_is_its_failure_not_the_editor_hanging_up(tmp_path):
    # the agent stays alive with its stdin closed: the relay ends it after half its stop grace
    relay, _, stderr = _relay(tmp_path, ACP_PROGRESS_RELAY_STOP_GRACE="0.1")
    try:
        relay.send(request(1, "close_stdin"))
        relay.messages_until(answers(1))
        time.sleep(0.2)
        relay.send(request(2, "echo"))  # writing this to the agent fails: EPIPE
        (answer,) = relay.messages_until(answers(2))
        answered = time.monotonic()
        code = relay.proc.wait(timeout=15)
        ended = time.monotonic() - answered
    finally:
        relay.finish()
    assert code == 1  # before: exit 0, request 2 never answered
    # 0.05 s for the agent to exit by itself, then SIGTERM (the default grace waits 1 s first)
    assert ended < 0.8, f"the relay took {ended:.2f} s to end an agent that ignores its closed stdin"
    assert "cannot write to the wrapped agent" in answer["error"]["data"]["details"]
    assert "cannot write to the wrapped agent" in stderr.read_text()


def test_after_the_editor_half_closes_the_answers_in_flight_are_still_delivered(tmp_path):
    relay, _, _ = _relay(tmp_path)
    relay.send(request(1, "slow"))  # answered 0.5 s later
    relay.close_stdin()
    code = relay.proc.wait(timeout=15)
    seen = relay.messages_until(answers(1), timeout=1)
    assert code == 0
    assert seen[-1]["result"] == {"echo": "slow"}  # before: dropped


def _card_starts(messages: list[Any]) -> list[Any]:
    return [
        m
        for m in messages
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") == "tool_call"
        and m["params"]["update"]["toolCallId"].startswith("relay-think-")
    ]


def test_turns_are_keyed_by_the_prompt_id_so_an_old_answer_does_not_end_the_new_turn(tmp_path):
    relay, _, _ = _relay(tmp_path, think_after="0.15")
    prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}
    try:
        relay.send(request(10, "session/prompt", prompt))
        first = relay.messages_until(lambda m: bool(_card_starts([m])))  # silent: a card opens
        relay.send(
            json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}).encode()
            + b"\n"
        )
        relay.send(request(11, "session/prompt", prompt))
        # the agent answers prompt 10 (cancelled) at once, is silent 0.6 s (four times think-after),
        # then answers prompt 11
        seen = relay.messages_until(answers(11))
    finally:
        relay.finish()
    assert _card_starts(first)
    old_answer = next(i for i, m in enumerate(seen) if answers(10)(m))
    late = [m for m in seen[old_answer:] if _card_starts([m])]
    assert late, "the new turn must get its think card during the silence after the old answer"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_an_editor_that_never_reads_cannot_grow_the_relay(tmp_path):
    """Memory stays bounded whatever the peer does (every input is bounded). An editor that stops
    reading while the agent floods it (400,000 notifications, ~100 MB) and while it keeps sending
    requests whose answers it never reads: the relay stops reading the agent, the agent blocks, the
    relay stops reading the editor — nothing piles up in the relay.

    The watch ends once nothing moves any more (the relay has refused the editor's bytes for
    ``SETTLED`` seconds and its memory did not grow meanwhile) or after 8 s: a relay that keeps
    reading, or keeps growing, runs the whole 8 s and is measured at its peak."""
    argv = [sys.executable, "-m", "acp_adapter.cli", "relay", "--", *RAW_AGENT]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # read for the first answer only
        stderr=subprocess.DEVNULL,
        env={**os.environ, **agent_env(ACP_PROGRESS_LOG_LEVEL="ERROR")},
        cwd=str(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request(1, "echo", {"up": True}))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # the relay and its agent are up
    base = rss_mb(proc.pid)
    os.set_blocking(proc.stdin.fileno(), False)
    flood = request(2, "flood", {"count": 400_000, "size": 250})
    batch = flood + b"".join(request(100 + i, "echo", {"pad": "p" * 200}) for i in range(2000))
    sent = 0
    peak = 0.0
    deadline = time.monotonic() + 8
    refused_since: tuple[float, float] | None = None  # (when, rss) the relay last began refusing
    pending = memoryview(batch)
    try:
        while time.monotonic() < deadline:
            if not pending:
                pending = memoryview(request(3, "echo", {"pad": "p" * 200}) * 2000)
            try:
                written = os.write(proc.stdin.fileno(), pending)
            except BlockingIOError:
                time.sleep(0.05)  # the relay stopped reading: what backpressure looks like
                rss = rss_mb(proc.pid)
                peak = max(peak, rss)
                if refused_since is None or rss - refused_since[1] >= SETTLED_GROWTH_MB:
                    refused_since = (time.monotonic(), rss)
                elif time.monotonic() - refused_since[0] >= SETTLED:
                    break  # still refusing, no growth: a fixed point, nothing more can pile up
                continue
            refused_since = None
            sent += written
            pending = pending[written:]
        peak = max(peak, rss_mb(proc.pid))
        assert proc.poll() is None, "the relay must still be running"
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert sent > len(flood), "the test must actually have pushed requests"
    assert peak - base < 40, f"the relay grew from {base:.0f} to {peak:.0f} MB ({sent / 1e6:.1f} MB sent)"
