"""A console ``acp-progress bridge run`` as a real process whose stdin stays open, for tests of
its signals and of what it prints; its agent runs inside that process."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.acp_progress_command import AGENT_INSIDE


class Bridge:
    """A console ``bridge run`` whose stdin stays open; its stdout is collected as it comes."""

    def __init__(self, cfg: Path) -> None:
        env = {
            **os.environ,
            **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"),  # what is timed here is the stop
            "ACP_PROGRESS_CONFIG_DIR": str(cfg / "config"),
            "ACP_PROGRESS_STATE_DIR": str(cfg / "state"),
            "ACP_PROGRESS_SUMMARY": "off",
        }
        self.proc = subprocess.Popen(
            [*AGENT_INSIDE, "bridge", "run", "con"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def say(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def wait_for(self, needle: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while not any(needle in line for line in self.lines):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{needle!r} never appeared in:\n" + "\n".join(self.lines))
            time.sleep(0.02)

    def stop(self, sig: signal.Signals) -> tuple[float, str]:
        """Send ``sig`` (stdin still open) and return how long the process took to exit, and its stderr."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        took = time.monotonic() - t0
        self._reader.join(timeout=5)
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return took, err
