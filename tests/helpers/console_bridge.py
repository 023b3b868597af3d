"""``acp-progress bridge run NAME`` of a console bridge in this process, its input typed from a
string: for tests of what the chat shows and what the store keeps, where the bridge's own process
proves nothing (its signals, exit on a closed pipe and stdio are tested with real processes)."""

from __future__ import annotations

import io
import sys
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
