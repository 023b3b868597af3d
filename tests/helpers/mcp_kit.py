"""The real MCP servers the tests hand to ``session/new`` (or write into an ``mcp.json``): the
``mcp`` SDK's test kit (``tests/mcp_servers/kit.py``) over stdio or streamable HTTP, the tasks
server (``tests/mcp_servers/tasks.py``) and the reference ``@modelcontextprotocol/server-everything``
(npm, pinned in ``tests/mcp_everything``), and whether a server's process still runs."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from acp.schema import EnvVariable, McpServerStdio

from acp_adapter.mcp.trust import trusted_meta
from tests.helpers.acp_agent import ROOT
from tests.helpers.http_servers import http_server

#: the secret the kit gets in its environment (a test checks it never shows)
SECRET = "kit-secret-value-Zq8r7T6y5U4i3O2p"


def kit(
    name: str = "kit",
    *args: str,
    marker: Path | None = None,
    cancelled: Path | None = None,
    garbage: int = 0,
    trusted: bool = True,
) -> McpServerStdio:
    """The kit server, marked trusted unless asked (its ``peek`` then runs unasked, as its
    ``readOnlyHint`` says; what an untrusted kit does is the point of the tests that pass False)."""
    env = [EnvVariable(name="PYTHONPATH", value=str(ROOT)), EnvVariable(name="KIT_SECRET", value=SECRET)]
    if marker is not None:
        env.append(EnvVariable(name="MCP_KIT_MARKER", value=str(marker)))
    if cancelled is not None:
        env.append(EnvVariable(name="MCP_KIT_CANCELLED", value=str(cancelled)))
    if garbage:
        env.append(EnvVariable(name="MCP_KIT_GARBAGE", value=str(garbage)))
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=["-m", "tests.mcp_servers.kit", *args],
        env=env,
        field_meta=trusted_meta(trusted),
    )


def alive(pid: int) -> bool:
    """Whether the process ``pid`` (an MCP server the agent started) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def http_kit() -> Iterator[int]:
    """The SDK's test kit over streamable HTTP in its own process; yields its port."""
    with http_server("tests.mcp_servers.kit", "http") as port:
        yield port


def tasks_server(name: str = "jobs", *, poll_ms: int = 200, cancelled: Path | None = None) -> McpServerStdio:
    """The tasks server over stdio (its tools run as MCP tasks, polled every ``poll_ms``)."""
    env = [
        EnvVariable(name="PYTHONPATH", value=str(ROOT)),
        EnvVariable(name="MCP_TASKS_POLL_MS", value=str(poll_ms)),
    ]
    if cancelled is not None:
        env.append(EnvVariable(name="MCP_TASKS_CANCELLED", value=str(cancelled)))
    return McpServerStdio(name=name, command=sys.executable, args=["-m", "tests.mcp_servers.tasks"], env=env)


@contextlib.contextmanager
def http_tasks_server() -> Iterator[str]:
    """The tasks server over streamable HTTP, in its own process, and its URL: it outlives the
    agents, and every session one starts talks to it (over stdio each session starts its own)."""
    with http_server("tests.mcp_servers.tasks", "http") as port:
        yield f"http://127.0.0.1:{port}/mcp"


def mcp_config(path: Path, url: str | None = None) -> Path:
    """An ``mcp.json`` in ``path`` naming the tasks server, as a front-end's ``--mcp-config`` reads
    it: over stdio, or at ``url`` (:func:`http_tasks_server`)."""
    spec = tasks_server()
    env = {e.name: e.value for e in spec.env}
    entry = {"url": url} if url else {"command": spec.command, "args": spec.args, "env": env}
    config = {"mcpServers": {spec.name: entry}}
    target = path / "mcp.json"
    target.write_text(json.dumps(config))
    return target


EVERYTHING_DIR = ROOT / "tests/mcp_everything"
ENTRY = EVERYTHING_DIR / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
#: preloaded into server-everything to run its timers faster (see :func:`everything`)
FAST_CLOCK = EVERYTHING_DIR / "fast_clock.cjs"
#: the secret server-everything gets in its environment (a test checks it never shows)
EVERYTHING_TOKEN = "evr-token-1a2b3c4d5e6f7a8b9c0d"


def node_with_everything() -> str:
    """node, with server-everything installed from tests/mcp_everything's lock file when missing
    (test workers may get here together: one installs under the lock, the others wait)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are required for this test (install Node.js >= 18 with npm)")
    with open(EVERYTHING_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ENTRY.is_file():
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-save"],
                cwd=EVERYTHING_DIR,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
    return node


def everything(clock_scale: float | None = None) -> McpServerStdio:
    """server-everything, marked trusted: its read-only tools (``echo``) run unasked. With
    ``clock_scale`` (below 1) its timers run that much faster (tests/mcp_everything/fast_clock.cjs):
    for a test that would only wait out one of its fixed delays."""
    env = [EnvVariable(name="EVERYTHING_API_TOKEN", value=EVERYTHING_TOKEN)]
    preload: list[str] = []
    if clock_scale is not None:
        env.append(EnvVariable(name="FAST_CLOCK_SCALE", value=str(clock_scale)))
        preload = ["--require", str(FAST_CLOCK)]
    return McpServerStdio(
        name="everything",
        command=node_with_everything(),
        args=[*preload, str(ENTRY), "stdio"],
        env=env,
        field_meta=trusted_meta(True),
    )
