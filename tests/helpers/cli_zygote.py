"""Command lines ``acp-progress ARGS`` (with the agent inside, :mod:`tests.helpers.cli_agent_inside`)
each in a process of its own, forked from one process that imported the command line once.

For the checks of what documented commands print (``scripts/readme_examples.py --forked``), which
run ten command lines at once: each is still its own process — its own stdin, stdout and stderr
pipes or its own terminal as controlling terminal, its own session and process group, environment,
working directory, ``sys.argv`` and exit status — but it starts as a fork of a process that has
already imported the command line, its agent and their libraries, instead of an interpreter that
imports them again (about 0.7 s of CPU each).

The forking process (``python -m tests.helpers.cli_zygote FD``) stays single-threaded, so a fork
copies nothing half-done; it takes requests on the socket ``FD``: a JSON request with the
descriptors the command gets as 0, 1 and 2 and a socket of its own to answer on (the process id,
then its exit status once it ends, as :func:`os.waitstatus_to_exitcode` gives it).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.helpers.pty_child import PtyChild

__all__ = ["ForkedCommand", "ForkedPtyChild", "Zygote", "run_forked_pipe"]

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.helpers.cli_zygote"
#: what a command line imports, imported once before the first fork (anything else is imported
#: by the command that needs it, as it would be)
PRELOAD = (
    "acp_adapter.cli",
    "acp_adapter.cli.watch",
    "acp_adapter.cli.chat",
    "acp_adapter.cli.config",
    "acp_adapter.cli.descriptor",
    "acp_adapter.cli.bridge",
    "acp_adapter.server",
    "acp_adapter.agent.routes",
    "acp_adapter.client.driver",
    "acp_adapter.frontends.watch",
    "acp_adapter.models.embedded",
    "acp_adapter.tooling.builtin",
    "acp_adapter.summary.factory",
    "run_agent",
    "tests.helpers.cli_agent_inside",
    "tests.helpers.shared_servers",
)


class ForkedCommand:
    """One command line's process as the requester sees it: its id (and process group) and,
    once it ends, its exit status."""

    def __init__(self, pid: int, answers: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._answers = answers
        self._pending = b""

    def wait(self, timeout: float) -> int | None:
        """The exit status once the process ends within ``timeout`` seconds, else None."""
        deadline = time.monotonic() + timeout
        while self.returncode is None:
            left = max(0.0, deadline - time.monotonic())
            if not select.select([self._answers], [], [], left)[0]:
                return None
            chunk = self._answers.recv(64)
            if not chunk:
                raise RuntimeError(f"the forking process went away before {self.pid} ended")
            self._pending += chunk
            if self._pending.endswith(b"\n"):
                self.returncode = int(self._pending)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL to its process group (it leads its own session, as ``start_new_session``)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        self._answers.close()


class Zygote:
    """The forking process, started with ``env`` (its imports see no other environment)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.process = subprocess.Popen(
            [sys.executable, "-m", MODULE, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            env=dict(env),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._requests = mine
        self._lock = threading.Lock()

    def start(
        self, args: Sequence[str], env: Mapping[str, str], cwd: Path, fds: Sequence[int], tty: bool = False
    ) -> ForkedCommand:
        """Fork ``acp-progress ARGS`` with ``fds`` as its 0, 1 and 2 (``tty``: ``fds[0]`` is a
        terminal's slave side, to be its controlling terminal)."""
        answers, theirs = socket.socketpair()
        request = json.dumps({"args": list(args), "env": dict(env), "cwd": str(cwd), "tty": tty}).encode()
        try:
            with self._lock:
                socket.send_fds(self._requests, [request], [theirs.fileno(), *fds])
        finally:
            theirs.close()
        line = b""
        while not line.endswith(b"\n"):
            chunk = answers.recv(1)
            if not chunk:
                answers.close()
                raise RuntimeError("the forking process did not start the command")
            line += chunk
        return ForkedCommand(int(line), answers)

    def close(self) -> None:
        self._requests.close()  # its end of the socket reads EOF: it exits
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_forked_pipe(
    zygote: Zygote,
    args: Sequence[str],
    stdin: bytes | None,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    merge_stderr: bool = False,
) -> tuple[int, bytes, bytes]:
    """``acp-progress ARGS`` to its end with ``stdin`` (else ``/dev/null``) and stdout and stderr
    on pipes (one pipe with ``merge_stderr``): its exit status and what it wrote. Past ``timeout``
    its process group is killed and :class:`TimeoutError` says what it had written."""
    in_read, in_write = os.pipe() if stdin is not None else (os.open(os.devnull, os.O_RDONLY), -1)
    out_read, out_write = os.pipe()
    err_read, err_write = (-1, out_write) if merge_stderr else os.pipe()
    try:
        command = zygote.start(args, env, cwd, [in_read, out_write, err_write])
    finally:
        for fd in {in_read, out_write, err_write}:
            os.close(fd)
    deadline = time.monotonic() + timeout
    outputs = {fd: bytearray() for fd in (out_read, err_read) if fd >= 0}
    try:
        if stdin is not None:
            # a thread: a command that reads its input late must not block the reading below
            def feed() -> None:
                with contextlib.suppress(BrokenPipeError), open(in_write, "wb") as pipe:
                    pipe.write(stdin)

            threading.Thread(target=feed, daemon=True).start()
        open_fds = set(outputs)
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                command.kill()
                raise TimeoutError(
                    f"timed out after {timeout:.0f}s; stdout ends: {bytes(outputs[out_read])[-500:]!r}"
                )
            for fd in select.select(list(open_fds), [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if chunk:
                    outputs[fd] += chunk
                else:
                    open_fds.discard(fd)
        code = command.wait(max(0.0, deadline - time.monotonic()))
        if code is None:
            command.kill()
            raise TimeoutError(f"did not exit within {timeout:.0f}s after closing its output")
        return code, bytes(outputs[out_read]), bytes(outputs.get(err_read, b""))
    finally:
        command.close()
        for fd in outputs:
            os.close(fd)


class ForkedPtyChild(PtyChild):
    """:class:`PtyChild` whose process is a forked command line with the terminal as its
    controlling terminal; ``on_output`` gets every chunk it writes."""

    def __init__(
        self,
        zygote: Zygote,
        args: Sequence[str],
        cwd: Path,
        env: Mapping[str, str],
        on_output: Callable[[bytes], object],
    ) -> None:
        self.fd, slave = pty.openpty()
        try:
            self.command = zygote.start(args, env, cwd, [slave, slave, slave], tty=True)
        finally:
            os.close(slave)
        self.pid = self.command.pid
        self.output = b""
        self._on_output = on_output

    def on_output(self, chunk: bytes) -> None:
        self._on_output(chunk)

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read_while(0.05)
            code = self.command.wait(0)
            if code is not None:
                self.read_while(0.1)
                return code
        return None

    def close(self) -> None:
        if self.command.returncode is None:
            self.command.kill()
            self.command.wait(10)
        self.command.close()
        os.close(self.fd)


# --- the forking process ------------------------------------------------------------------------


def _stdio(fd: int, writing: bool) -> io.TextIOWrapper:
    """A standard stream on ``fd`` as the interpreter makes it at start-up (UTF-8: the examples
    run with ``LC_ALL=C.UTF-8``)."""
    unbuffered = writing and bool(os.environ.get("PYTHONUNBUFFERED"))
    buffer: Any = open(fd, "wb" if writing else "rb", buffering=0 if unbuffered else -1, closefd=False)  # noqa: SIM115
    line_buffering = writing and not unbuffered and (fd == 2 or os.isatty(fd))
    return io.TextIOWrapper(
        buffer,
        encoding="utf-8",
        errors="backslashreplace" if fd == 2 else "strict",
        newline="\n",
        line_buffering=line_buffering,
        write_through=unbuffered,
    )


def _run_command(request: dict[str, Any], fds: list[int]) -> int:
    """In the forked child: become the command line and run it; its exit status."""
    os.setsid()
    if request["tty"]:
        fcntl.ioctl(fds[0], termios.TIOCSCTTY, 0)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from tests.helpers import cli_agent_inside

    sys.argv = [str(cli_agent_inside.__file__), *request["args"]]
    sys.path[0] = request["cwd"]  # ``python -m`` puts the working directory first
    sys.stdin = sys.__stdin__ = _stdio(0, writing=False)  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = _stdio(1, writing=True)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = _stdio(2, writing=True)  # type: ignore[misc]
    code: Any = 0
    try:
        code = cli_agent_inside.main()
    except SystemExit as exit_:
        code = exit_.code
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    # as the interpreter ends: its threads that are not daemons finish, then the exit functions run
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    return 0 if code is None else int(code)


def _serve(requests: socket.socket) -> None:
    answers: dict[int, socket.socket] = {}
    while True:
        ready = select.select([requests], [], [], 0.02)[0]
        while answers:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            answer = answers.pop(pid)
            with contextlib.suppress(OSError):
                answer.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
            answer.close()
        if not ready:
            continue
        message, fds, _flags, _address = socket.recv_fds(requests, 1 << 20, 4)
        if not message:
            break
        request = json.loads(message)
        answer = socket.socket(fileno=fds[0])
        given = fds[1:]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _run_command(request, given)
            except BaseException:  # it could not become the command: say why on its stderr
                traceback.print_exc()
            finally:
                os._exit(code)
        for fd in given:
            os.close(fd)
        answer.sendall(b"%d\n" % pid)
        answers[pid] = answer
    for pid in list(answers):  # the requester went away: nothing is left behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def main() -> int:
    import importlib

    requests = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a fork copies only the thread that forks
        raise RuntimeError(f"the forking process must stay single-threaded: {threading.enumerate()}")
    _serve(requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
