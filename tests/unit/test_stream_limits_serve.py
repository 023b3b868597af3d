"""``serve`` against hostile lines, on real pipes: every bad line is answered, none is
fatal, nothing non-strict is echoed, and a client that never reads cannot grow our memory.

The tests that only send lines and read the answers share one ``serve`` process (the ``shared``
fixture): each waits for the answer to its own last request, so what it reads is what its lines
caused, and a process that keeps serving after every other test's lines is the point anyway. The
exit after hostile lines, a limit of its own and a client that never reads get their own process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.acp_agent import agent_env
from tests.helpers.rawpipes import RawProcess, answers, asleep_cpu_ticks, request, rss_mb

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-m", "acp_adapter"]
DEEP = "[" * 973 + "]" * 973  # 1,947 bytes with the newline: was a RecursionError that killed serve
INIT = {"protocolVersion": 1}


def _serve(tmp_path: Any, **env: str) -> RawProcess:
    return RawProcess(SERVE, agent_env(**env), str(tmp_path))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawProcess]:
    """One ``serve`` (default settings) for the module's tests that only send and read."""
    agent = _serve(tmp_path_factory.mktemp("serve"))
    yield agent
    assert agent.finish() == 0, "serve ends cleanly after every test's hostile lines"


def _errors(messages: list[Any]) -> list[Any]:
    return [m for m in messages if isinstance(m, dict) and "error" in m]


NESTED = {
    "top-level": DEEP,
    "in-params": '{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + DEEP + "}",
    "in-id": '{"jsonrpc":"2.0","id":' + DEEP + ',"method":"initialize"}',
    "in-notification": '{"jsonrpc":"2.0","method":"session/cancel","params":' + DEEP + "}",
}


def test_nested_lines_are_answered_unparsed_and_serve_goes_on(tmp_path):
    agent = _serve(tmp_path)
    try:
        for number, line in enumerate(NESTED.values(), start=10):
            agent.send(line.encode() + b"\n")
            agent.send(request(number, "initialize", INIT))  # served after each one
        seen = agent.messages_until(answers(13))
    finally:
        code = agent.finish()
    assert code == 0
    # each could not be parsed, so its id is unknown: null, as JSON-RPC prescribes (notification too)
    refusals = _errors(seen)
    assert [(r["id"], r["error"]["code"]) for r in refusals] == [(None, -32600)] * len(NESTED)
    assert all("nested deeper than 256 levels" in r["error"]["data"]["details"] for r in refusals)
    served = [m["id"] for m in seen if "result" in m]
    assert served == [10, 11, 12, 13]


def test_an_over_long_line_is_skipped_whole_and_its_tail_is_not_executed(tmp_path):
    agent = _serve(tmp_path, ACP_PROGRESS_MAX_LINE_BYTES="65536")
    try:
        # the spaces-then-request trick: a reader that cut the line at its limit would run the tail
        agent.send(b" " * 200_000 + request(666, "initialize", INIT))
        agent.send(request(2, "initialize", INIT))
        seen = agent.messages_until(answers(2))
    finally:
        agent.finish()
    assert not any(m.get("id") == 666 for m in seen if isinstance(m, dict)), seen
    (refusal,) = _errors(seen)  # answered once
    assert refusal["id"] is None and refusal["error"]["code"] == -32700
    assert "message too long" in refusal["error"]["data"]["details"]


def test_a_line_past_the_real_default_limit_is_skipped_whole(shared: RawProcess) -> None:
    agent = shared
    started = time.monotonic()
    block = b" " * (1024 * 1024)
    for _ in range(51):  # 51 MiB of spaces: past the 50 MiB default
        agent.send(block)
    agent.send(request(666, "initialize", INIT))
    agent.send(request(2, "initialize", INIT))
    seen = agent.messages_until(answers(2), timeout=30)
    took = time.monotonic() - started
    assert not any(m.get("id") == 666 for m in seen if isinstance(m, dict))
    assert [e["error"]["code"] for e in _errors(seen)] == [-32700]
    assert took < 10, f"streaming 51 MiB through the reader took {took:.1f}s"


BAD_IDS = ["NaN", "Infinity", "-Infinity", "1e999", "1.5", "true", "[1]", '{"a":1}']


def test_ids_that_are_not_strings_integers_or_null_are_refused_and_never_echoed(shared: RawProcess) -> None:
    agent = shared
    for bad_id in BAD_IDS:
        agent.send(b'{"jsonrpc":"2.0","id":' + bad_id.encode() + b',"method":"initialize","params":{}}\n')
    agent.send(request(2, "initialize", INIT))
    seen = agent.messages_until(answers(2))  # every line is parsed strictly by RawProcess
    refusals = _errors(seen)
    assert len(refusals) == len(BAD_IDS)
    assert all(r["id"] is None and r["error"]["code"] in (-32600, -32700) for r in refusals)
    for bad_id in BAD_IDS:
        assert not any(b'"id":' + bad_id.encode() in line for line in agent.raw)  # never echoed


def test_utf16_bom_and_invalid_utf8_lines_are_refused(shared: RawProcess) -> None:
    agent = shared
    agent.send(
        '{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1}}'.encode("utf-16")
    )
    agent.send(b"\n")
    agent.send(b"\xef\xbb\xbf" + request(6, "initialize", INIT))  # a UTF-8 BOM
    agent.send(b'{"jsonrpc":"2.0","id":7,"method":"x\xff"}\n')
    agent.send(request(2, "initialize", INIT))
    seen = agent.messages_until(answers(2))
    assert all(m.get("id") not in (5, 6, 7) for m in seen if isinstance(m, dict))
    assert {e["error"]["code"] for e in _errors(seen)} == {-32700}
    assert len(_errors(seen)) >= 3


def test_a_lone_surrogate_id_is_answered_as_an_ascii_escape(shared: RawProcess) -> None:
    agent = shared
    agent.send(b'{"jsonrpc":"2.0","id":"\\ud800","method":"initialize","params":{"protocolVersion":1}}\n')
    seen = agent.messages_until(answers("\ud800"))
    assert seen[-1]["result"]["protocolVersion"] == 1
    assert b'"\\ud800"' in agent.raw[-1]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_a_client_that_never_reads_cannot_grow_serve(tmp_path):
    """300,000 initialize requests from a client that never read stdout grew serve to 1.23 GB."""
    proc = subprocess.Popen(
        SERVE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read
        stderr=subprocess.DEVNULL,
        env={**os.environ, **agent_env(ACP_PROGRESS_LOG_LEVEL="ERROR")},
        cwd=str(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    line = request(1, "initialize", INIT)
    proc.stdin.write(line)
    proc.stdin.flush()
    proc.stdout.readline()  # serve is up and answering; from now on its client never reads
    base = rss_mb(proc.pid)
    os.set_blocking(proc.stdin.fileno(), False)
    batch = line * 2000
    sent = 0
    peak = 0.0
    deadline = time.monotonic() + 8
    pending = memoryview(b"")
    blocked_since: float | None = None
    asleep: tuple[float, int] | None = None  # since when serve sat asleep with these CPU ticks
    try:
        while time.monotonic() < deadline:
            if not pending:
                pending = memoryview(batch)
            try:
                written = os.write(proc.stdin.fileno(), pending)
            except BlockingIOError:
                time.sleep(0.05)  # serve stopped reading: what backpressure looks like
                peak = max(peak, rss_mb(proc.pid))
                now = time.monotonic()
                blocked_since = now if blocked_since is None else blocked_since
                ticks = asleep_cpu_ticks(proc.pid)
                if ticks is None or asleep is None or asleep[1] != ticks:
                    asleep = None if ticks is None else (now, ticks)
                elif now - asleep[0] > 0.5:
                    # its input waiting, serve sat asleep for 0.5 s without a tick of CPU: it holds
                    # what it has and takes nothing more (a serve that queues without bound reads
                    # what waits: it runs or waits for a CPU, never sleeps with input to read)
                    break
                if now - blocked_since > 3:
                    # not a byte read for 3 s: serve holds what it has and takes nothing more (a
                    # serve that queues without bound keeps reading, so it is still written to
                    # until the deadline and grows)
                    break
                continue
            blocked_since = asleep = None
            sent += written
            pending = pending[written:]
        peak = max(peak, rss_mb(proc.pid))
        assert proc.poll() is None, "serve must still be running"
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert sent > len(line) * 1000, "the test must actually have pushed requests"
    # unbounded, serve grows ~97 MB in these 8 s on a loaded 2-core machine (1.23 GB after 40 s)
    assert peak - base < 40, f"serve grew from {base:.0f} to {peak:.0f} MB ({sent / 1e6:.1f} MB sent)"
    assert peak < 200, f"serve grew to {peak:.0f} MB while its client did not read ({sent / 1e6:.1f} MB sent)"
