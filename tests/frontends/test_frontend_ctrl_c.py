"""Ctrl-C always works: ``watch``, ``chat`` and ``run`` as real processes, a real SIGINT the
instant their handler is in place (still importing) and during the turn (its agent starting, and
its tool running): each exits 130, with no traceback; a running turn ends ``⏹ cancelled`` (its
cards drained).

The wall-clock bound here is generous (a loaded CI machine must not miss it); what makes the 2 s
promise hold is shown by the mechanism tests: the handler is in place before the heavy imports, and
an interrupt that lands inside an import is still exit 130."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.acp_agent import agent_env
from tests.helpers.piped_agent import piped_progress_agent

COMMANDS = {
    "watch": ["watch", "--summary", "off", "wait 10 seconds"],
    "chat": ["chat", "--summary", "off"],
    "run": ["run", "wait 10 seconds"],
}


#: The wall-clock bound of the real-process tests: generous, so a loaded CI machine cannot miss it
#: (the promise is 2 s; the mechanism tests below show why it holds without timing anything).
BOUND = 10.0


def _loading_heavy_modules(pid: int) -> bool:
    """Whether the process has got as far as its heavy imports (pydantic's compiled core is mapped).

    Python's own SIGINT handler is in place from interpreter start, so the kernel's view cannot tell
    ours from it; but ours is installed before the heavy imports begin, so a signal sent once they
    have begun must find it. (A signal during interpreter start-up, before any line of ours runs, is
    Python's: it prints its own traceback.)"""
    try:
        return "_pydantic_core" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _until_the_turn_is_under_way(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """What the command printed once its turn is under way: its first line (``run``, whose agent is
    inside it), or the agent process it started for the turn loading its heavy modules (``watch``
    and ``chat``, whose first line comes only once that agent answers). Read straight from the
    pipe (no buffer of Python's in between), so the rest of the output is read after it."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    while b"\n" not in seen and not any(_loading_heavy_modules(c) for c in _children(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline, ("the turn never began", seen)
        if select.select([fd], [], [], 0.005)[0]:
            seen += os.read(fd, 65536)
    return seen


def _start(command: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.1")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter.cli", *COMMANDS[command]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert proc.stdin is not None
    if command == "chat":
        proc.stdin.write(b"wait 10 seconds\n")  # stdin stays open: the conversation goes on
        proc.stdin.flush()
    return proc


@pytest.mark.e2e
@pytest.mark.parametrize("when", ["importing", "turn"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigint_exits_130_without_a_traceback(tmp_path: Path, command: str, when: str) -> None:
    """A real SIGINT while the command is still importing (its handler comes before the heavy
    imports), or once its turn is under way: exit 130, no traceback."""
    proc = _start(command, tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not _loading_heavy_modules(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "never reached its imports"
            time.sleep(0.002)
        seen = _until_the_turn_is_under_way(proc, deadline) if when == "turn" else b""
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=BOUND + 5)
        took = time.monotonic() - sent
        out = (seen + proc.stdout.read()).decode() if proc.stdout else ""
        err = proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130, (code, out[-400:], err[-800:])
    assert took < BOUND, took
    assert "Traceback" not in err, err
    assert "wait` finished" not in out and "stop reason: end_turn" not in out, out


@pytest.mark.e2e
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_handler_is_installed_before_the_heavy_imports(command: str) -> None:
    """The mechanism behind 'from the first instant': the entry point (``main``), run with one of
    these commands, installs the press counter before the settings model or the protocol schema load
    (the command itself is replaced by a probe that reports what it finds)."""
    probe = (
        "import sys, signal\n"
        "import acp_adapter.cli as cli\n"
        "from acp_adapter.frontends.interrupt import interrupts\n"
        "def report(argv):\n"
        "    print(signal.getsignal(signal.SIGINT) == interrupts._press,"
        " sorted(m for m in ('acp', 'pydantic', 'acp_adapter.config', 'rich') if m in sys.modules))\n"
        "    return 0\n"
        "cli._main = report\n"
        "sys.argv = ['acp-progress', sys.argv[1], 'hi']\n"
        "sys.exit(cli.main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, command], capture_output=True, text=True, env=agent_env(), timeout=60
    )
    assert done.stdout.split(maxsplit=1) == ["True", "[]\n"], done.stdout + done.stderr


@pytest.mark.e2e
@pytest.mark.parametrize("argv0", ["acp-progress", "-m", "/usr/bin/acp-progress"])
def test_importing_the_command_line_leaves_the_sigint_handler_alone(argv0: str) -> None:
    """Signal handlers belong to the entry point: importing ``acp_adapter.cli`` — whatever
    ``sys.argv`` says, a counted command's included — leaves Python's own SIGINT handler in place."""
    probe = (
        "import sys, signal\n"
        "sys.argv = [sys.argv[1], 'watch', 'hi']\n"
        "before = signal.getsignal(signal.SIGINT)\n"
        "import acp_adapter.cli\n"
        "print(signal.getsignal(signal.SIGINT) is before is signal.default_int_handler)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, argv0],
        capture_output=True,
        text=True,
        env=agent_env(),
        timeout=60,
        preexec_fn=_sigint_as_a_shell_leaves_it,
    )
    assert done.stdout == "True\n", done.stdout + done.stderr


def _sigint_as_a_shell_leaves_it() -> None:
    """The child starts with SIGINT at its default, as a shell starts a command: a test runner's
    worker that ignores SIGINT would pass SIG_IGN on, and Python then keeps it instead of
    installing its own handler (the one this test expects to find left in place)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_ctrl_c_during_a_commands_import_exits_130(monkeypatch, capsys) -> None:
    """A KeyboardInterrupt raised while a command's module is being imported (the press came
    before any handler of the command's own) is exit 130, not a traceback."""
    import acp_adapter.cli as cli

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_command", interrupted)
    assert cli.main(["sessions"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_a_ctrl_c_wrapped_by_a_library_at_import_exits_130(monkeypatch) -> None:
    """pydantic and class creation wrap an interrupt in their own errors; it is still a Ctrl-C."""
    import acp_adapter.cli as cli

    def wrapped(name: str) -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__") from exc

    monkeypatch.setattr(cli, "_command", wrapped)
    assert cli.main(["sessions"]) == 130


@pytest.mark.e2e
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sigint_during_the_tool_cancels_the_turn_and_closes_its_cards(tmp_path, command: str) -> None:
    """Signalled once the tool's card is on the screen: the turn is cancelled (the card ends ❌ or
    the printer's line is closed), nothing after it runs, and the exit is 130 within 2 s. The agent
    watch and chat spawn is a process that pipes its bytes to this project's agent served in the
    test's process (the front-end's process and its Ctrl-C are the point; the agent's process
    starting is the point of the turn test above); run's agent is inside it."""
    agent_settings = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.1")
    with contextlib.ExitStack() as stack:
        args = list(COMMANDS[command])
        if command != "run":
            agent = stack.enter_context(piped_progress_agent(agent_settings))
            at = len(args) - 1 if command == "watch" else len(args)  # before watch's prompt
            args[at:at] = ["--agent", agent]
        _sigint_during_the_tool(tmp_path, command, args, {**os.environ, **agent_settings})


def _sigint_during_the_tool(tmp_path: Path, command: str, args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter.cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        if command == "chat":
            proc.stdin.write(b"wait 10 seconds\n")
            proc.stdin.flush()
        seen = b""
        while b"step 1 of" not in seen:  # the tool runs and reports progress
            line = proc.stdout.readline()
            assert line, seen
            seen += line
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=5)
        took = time.monotonic() - sent
        out = (seen + proc.stdout.read()).decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130 and took < BOUND, (code, took, out)
    assert "wait` finished" not in out and "step 3 of" not in out, out
    if command != "run":
        assert "❌ ⏳ Working on long task" in out and "⏹  cancelled" in out, out
