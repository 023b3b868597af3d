"""A real ``acp-progress agui`` process on a free loopback port, for lifecycle tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE

CLI = [sys.executable, "-c", "import sys; from acp_adapter.cli import main; sys.exit(main())"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AguiProcess:
    """``acp-progress agui ARGS`` with its stderr in ``log``; :meth:`wait_healthy` before use.

    Without ``--token`` in ``ARGS`` it runs with ``--no-token``; ``--own-token`` (a marker, not a
    flag of the command) leaves the endpoint its own token. With ``agent_inside``, this project's
    agent (the default ``--agent``) runs inside the endpoint's process
    (:mod:`tests.helpers.cli_agent_inside`): for tests where the endpoint's process is the point,
    not the agent's."""

    def __init__(
        self,
        workspace: Path,
        *args: str,
        env: dict[str, str] | None = None,
        port: int = 0,
        agent_inside: bool = False,
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workspace / f"agui-{self.port}-{time.monotonic_ns()}.log"
        full_env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"), **(env or {})}
        full_env.pop("ACP_PROGRESS_AGUI_TOKEN", None)
        # the token gate has tests of its own; here an endpoint without one unless a test gives one
        gate = [] if "--token" in args or "--own-token" in args else ["--no-token"]
        args = tuple(a for a in args if a != "--own-token")
        cli = [sys.executable, "-m", CLI_AGENT_INSIDE] if agent_inside else CLI
        argv = [*cli, "agui", "--port", str(self.port), "--cwd", str(workspace), *gate, *args]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, env=full_env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while needle not in self.text():
            assert self.process.poll() is None, f"acp-progress agui exited:\n{self.text()}"
            assert time.monotonic() < deadline, f"no {needle!r} in {within} s:\n{self.text()}"
            time.sleep(0.02)

    def wait_healthy(self, within: float = 30.0) -> AguiProcess:
        deadline = time.monotonic() + within
        while True:
            assert self.process.poll() is None, f"acp-progress agui exited:\n{self.text()}"
            assert time.monotonic() < deadline, f"no /health answer in {within} s:\n{self.text()}"
            try:
                if httpx.get(self.url + "/health", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGINT, within: float = 10.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(within)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def run(self, thread_id: str, run_id: str, prompt: str, timeout: float = 20.0) -> list[dict[str, Any]]:
        body = {
            "threadId": thread_id,
            "runId": run_id,
            "messages": [{"id": f"m-{run_id}", "role": "user", "content": prompt}],
        }
        with httpx.stream("POST", self.url + "/", json=body, timeout=timeout) as response:
            assert response.status_code == 200, response.read()
            return list(sse_events(response.iter_lines()))


def sse_events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("data: "):
            yield json.loads(line[6:])


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of_type(events, "TEXT_MESSAGE_CONTENT"))
