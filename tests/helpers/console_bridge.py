"""``acp-progress bridge run NAME`` of a console bridge in this process, its input typed from a
string: for tests of what the chat shows and what the store keeps, where the bridge's own process
proves nothing (its signals, exit on a closed pipe and stdio are tested with real processes); and
the stdin and stdout stand-ins of a console bridge run by a test's own code."""

from __future__ import annotations

import asyncio
import io
import queue
import sys
import time
from dataclasses import dataclass
from typing import Any

from tests.helpers.shared_servers import cli_in_process


@dataclass(frozen=True)
class ConsoleRun:
    """What ``bridge run`` returned and wrote."""

    returncode: int
    stdout: str
    stderr: str


def run_console_bridge(
    name: str, typed: str, monkeypatch: Any, capsys: Any, env: dict[str, str] | None = None
) -> ConsoleRun:
    """Run console bridge ``name`` until the end of ``typed`` (its lines are the messages), with
    ``env`` set as a spawned bridge would have it in its environment."""
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    capsys.readouterr()
    with cli_in_process() as main:
        code = main(["bridge", "run", name])
    out, err = capsys.readouterr()
    return ConsoleRun(code, out, err)


class ScriptedInput:
    """stdin stand-in: ``readline`` blocks until the test feeds a line (or ends the input)."""

    def __init__(self) -> None:
        self._lines: queue.Queue[str] = queue.Queue()

    def feed(self, line: str) -> None:
        self._lines.put(line + "\n")

    def end(self) -> None:
        self._lines.put("")

    def readline(self) -> str:
        return self._lines.get(timeout=60)


class WatchedOutput(io.StringIO):
    """stdout stand-in the test can wait on."""

    def __init__(self) -> None:
        super().__init__()

    async def wait_for(self, text: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while text not in self.getvalue():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared in:\n{self.getvalue()}")
            await asyncio.sleep(0.02)
