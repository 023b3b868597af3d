"""The agent as an operating-system process: its command line, started in a process group of its
own, its stderr kept (the last lines, and the ``--agent-log`` file), its exit explained, and its
group ended (EOF on stdin, then SIGTERM, then SIGKILL).

Why a module of its own: :class:`~acp_adapter.client.driver.AgentDriver` speaks ACP to the agent;
what happens to the process underneath — a command that is not found, a log file that cannot be
written, an agent that exits before answering and what it said on stderr as it died — is a job
apart, and the one place every front-end's "the agent exited with code 3: …" comes from.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import IO

from acp_adapter.client.agent_errors import AgentLogError, AgentStartError
from acp_adapter.client.procgroup import end_process_group, exit_status_within
from acp_adapter.protocol import CHUNK_BYTES
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.secret_env import agent_environment

#: Lines of the agent's stderr kept for error messages.
STDERR_TAIL_LINES = 12
#: Longest wait for the agent's last stderr lines once it has exited: with its group ended they
#: arrive at once; a process outside the group still holding the pipe must not hold a close.
STDERR_DRAIN_S = 0.25


def default_agent_command() -> list[str]:
    """This project's agent, run by the same interpreter (works without the console script)."""
    return [sys.executable, "-m", "acp_adapter"]


def parse_agent_command(command: str | Sequence[str] | None) -> list[str]:
    """Turn an ``--agent`` value into argv, with a clear error for unbalanced quotes."""
    if command is None:
        return default_agent_command()
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise AgentStartError(f"cannot parse the agent command {command!r}: {exc}") from None
    else:
        argv = [str(part) for part in command]
    if not argv:
        raise AgentStartError("the agent command is empty")
    return argv


class AgentProcess:
    """One agent process: spawned once by :meth:`spawn`, ended once by :meth:`end`."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.process: asyncio.subprocess.Process | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_task: asyncio.Task[None] | None = None
        self._log_file: IO[bytes] | None = None

    async def spawn(
        self, extra_env: Mapping[str, str], cwd: str | None, stderr_log: str | os.PathLike[str] | None
    ) -> asyncio.subprocess.Process:
        """Start the agent with pipes on stdin, stdout and stderr; raise :class:`AgentLogError`
        or :class:`AgentStartError` saying why it could not be started."""
        # the front-end's own secrets (bot token, endpoint token) are never the agent's
        env = agent_environment(os.environ, extra_env)
        if stderr_log is not None:  # before the agent starts: a bad path must not leave it running
            try:
                self._log_file = open(stderr_log, "ab")  # noqa: SIM115, ASYNC230 - tiny; closed in end()
            except OSError as exc:
                raise AgentLogError(
                    f"cannot write the agent log {os.fspath(stderr_log)}: {exc.strerror or exc}"
                ) from None
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                limit=CHUNK_BYTES,  # the line reader enforces the line limit; this only sizes the pipe buffer
                start_new_session=True,  # its own process group: shutdown reaches its children too
            )
        except FileNotFoundError:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: command not found") from None
        except PermissionError:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: permission denied") from None
        except OSError as exc:
            raise AgentStartError(f"cannot start the agent {self.argv[0]!r}: {exc.strerror or exc}") from None
        self._stderr_task = asyncio.create_task(self._pump_stderr(), name="acp-agent-stderr")
        return self.process

    async def _pump_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        stream = self.process.stderr
        while True:
            try:
                line = await stream.readline()
            except (asyncio.LimitOverrunError, ValueError):
                continue
            if not line:
                return
            if self._log_file is not None:
                with contextlib.suppress(OSError):
                    self._log_file.write(line)
                    self._log_file.flush()
            text = line.decode(errors="replace").rstrip()
            if text:
                self._stderr_tail.append(text)

    async def exit_code_within(self, wait: float = 1.0) -> int | None:
        """The exit status once the process ends within ``wait`` seconds (None if it still runs),
        after its last stderr lines have arrived for the message that quotes them."""
        if self.process is None:
            return None
        code = await exit_status_within(self.process, wait)
        if self._stderr_task is not None:  # let the last stderr lines arrive for the message
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 0.5)
        return code

    def stderr_hint(self) -> str:
        """``; its stderr ends: …`` (its last three lines, redacted) for an error message, or ""."""
        if not self._stderr_tail:
            return ""
        tail = " | ".join(list(self._stderr_tail)[-3:])
        return f"; its stderr ends: {redact_text(tail)}"

    @property
    def returncode(self) -> int | None:
        """The exit status once the process ended; None while it runs (or before it started)."""
        return self.process.returncode if self.process is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the agent wrote on stderr, redacted."""
        return [redact_text(line) for line in self._stderr_tail]

    async def end(self, grace: float) -> None:
        """End the process group (EOF on stdin, then SIGTERM, then SIGKILL), then its stderr
        reader and the log file."""
        if self.process is not None:
            await end_process_group(self.process, grace)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, STDERR_DRAIN_S)
        if self.process is not None:
            _close_pipes(self.process)
        if self._log_file is not None:
            self._log_file.close()


def _close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close our ends of the agent's pipes now, on the running loop. A process outside its group
    may still hold the other ends; left open, the transport would be closed by the garbage
    collector, perhaps after the loop is gone. (asyncio's ``Process`` has no public close.)"""
    transport = getattr(process, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()
