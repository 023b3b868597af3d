"""MCP servers on loopback HTTP for the tests, each in its own process: the ``mcp`` SDK's test kit
(``tests/mcp_servers/kit.py`` in ``http``, ``http-json`` or ``sse`` mode) and the hostile server
(``tests/mcp_servers/hostile_http.py``)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

from tests.helpers.acp_agent import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def http_server(module: str, *args: str, env: dict[str, str] | None = None) -> Iterator[int]:
    """Run ``python -m MODULE *ARGS PORT`` on a free loopback port until the block ends; yields the
    port once it accepts connections."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args, str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
