"""A child process on a pseudo-terminal, for the tests of what a person sees and types.

The pty is the child's controlling terminal (so ``^C`` is SIGINT and ``isatty()`` is true); the
test reads every byte the child writes on the master side, and types there. Subclasses decide
what a chunk of output becomes (raw bytes, a pyte screen).
"""

from __future__ import annotations

import os
import pty
import select
import time
from collections.abc import Mapping


class PtyChild:
    def __init__(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            os.chdir(cwd)
            os.execvpe(argv[0], argv, dict(env))
        self.output = b""

    def on_output(self, chunk: bytes) -> None:
        """Called with every chunk the child writes (after it is added to ``output``)."""

    def read_once(self, timeout: float = 0.02) -> bool:
        """Read what is there within ``timeout``; False once the child's side is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        self.output += chunk
        self.on_output(chunk)
        return True

    def read_while(self, seconds: float, done: object = None) -> None:
        """Read for up to ``seconds``, or until ``done()`` is true or the output ends."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.read_once():
                break
            if callable(done) and done():
                break

    def type(self, keys: bytes) -> None:
        os.write(self.fd, keys)

    def wait(self, timeout: float) -> int | None:
        """The child's exit code once it exits within ``timeout`` (reading meanwhile), else None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read_while(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.read_while(0.1)
                return os.waitstatus_to_exitcode(status)
        return None

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
