"""A process on plain pipes, to send what no SDK client would and read every byte it answers."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any


def strict_loads(line: bytes) -> Any:
    """What a strict JSON.parse accepts: UTF-8, no NaN/Infinity."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(line.decode("utf-8"), parse_constant=refuse)


def request(id_: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


class RawProcess:
    """``argv`` with stdin/stdout pipes; stdout lines are parsed strictly as they arrive."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: str, stderr: Any = None) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env={**os.environ, **env},
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(line)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def next_message(self, timeout: float = 15) -> Any:
        return strict_loads(self.lines.get(timeout=timeout))

    def messages_until(self, done: Callable[[Any], bool], timeout: float = 20) -> list[Any]:
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            out.append(message)
            if done(message):
                return out
        raise AssertionError(f"no matching message in {out}")

    def finish(self, timeout: float = 15) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=timeout)


def answers(id_: Any) -> Callable[[Any], bool]:
    return lambda m: isinstance(m, dict) and m.get("id") == id_ and ("result" in m or "error" in m)


def asleep_cpu_ticks(pid: int) -> int | None:
    """The CPU time (clock ticks) process ``pid`` has used, when none of its threads is running or
    waiting to run (Linux ``/proc``), else None: the same ticks seen twice apart mean it did nothing
    in between though it could have — not a process the scheduler kept waiting."""
    ticks = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as stat:
                text = stat.read()
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        state, *fields = text[text.rindex(")") + 2 :].split()
        if state == "R":
            return None
        ticks += int(fields[10]) + int(fields[11])  # utime and stime
    return ticks


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MB (Linux ``/proc``), for the memory-bound tests."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")
