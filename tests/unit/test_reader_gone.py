"""Nobody reading, nothing running: when the reader of stdout goes away
(``watch … | head -3``) the turn is cancelled and the agent and its tools stop; two Ctrl-Cs that
arrive in one instant are two presses (the second exits)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from acp_adapter.frontends.interrupt import Interrupts
from acp_adapter.frontends.reader_gone import can_lose_its_reader, reader_is_gone, when_reader_gone
from tests.helpers.acp_agent import agent_env

#: generous: a loaded CI machine cannot miss it (the mechanism is shown by the unit tests)
BOUND = 10.0


def test_a_pipe_whose_reader_closed_is_noticed_without_writing(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        assert can_lose_its_reader(write_end) and not reader_is_gone(write_end)
        os.close(read_end)
        assert reader_is_gone(write_end)
    finally:
        os.close(write_end)
    with (tmp_path / "f").open("w") as regular:  # a file (or a terminal) never loses its reader
        assert not can_lose_its_reader(regular.fileno())


@pytest.mark.anyio
async def test_when_reader_gone_calls_once_and_can_be_cancelled() -> None:
    read_end, write_end = os.pipe()
    calls: list[float] = []
    try:
        task = asyncio.ensure_future(when_reader_gone(write_end, lambda: calls.append(1), interval=0.01))
        await asyncio.sleep(0.05)
        assert not calls and not task.done()
        os.close(read_end)
        await asyncio.wait_for(task, 2)
        assert calls == [1]
        idle = asyncio.ensure_future(when_reader_gone(-1, lambda: calls.append(2)))
        await asyncio.wait_for(idle, 1)  # no descriptor: nothing to watch, returns at once
        assert calls == [1]
    finally:
        os.close(write_end)


@pytest.mark.anyio
async def test_two_presses_in_one_instant_are_a_cancel_and_a_second_press() -> None:
    """A second press that arrives with the first is not lost: a cancel that took "presses so far"
    as seen would leave chat sitting at its prompt."""
    from acp_adapter.frontends.watch.watcher import _cancel

    presses = Interrupts()
    presses.attach()
    try:
        seen = presses.count
        presses.press()
        presses.press()  # the same write: ``\x03\x03``

        class SlowTurn:
            async def cancel(self) -> None:
                await asyncio.sleep(0)

        consumer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        end = await asyncio.wait_for(_cancel(SlowTurn(), consumer, presses, seen + 1), 5)  # type: ignore[arg-type]
        assert end.cancelled and end.interrupted_again
    finally:
        presses.detach()


def _with_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["watch", "chat"])
def test_when_the_reader_goes_away_the_turn_and_the_agent_stop(tmp_path: Path, command: str) -> None:
    """``watch "wait 10 seconds" | head -3`` stops with its reader, not running on (with its
    agent's tool) to 15 s."""
    marker = f"ACP_READER_TEST_{uuid.uuid4().hex}"
    env = {
        **os.environ,
        **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.1", ACP_PROGRESS_SUMMARY="off"),
        marker: "1",
    }
    # 20 steps of 0.75 s: the first shows the tool running, the 14 s left outlast BOUND
    argv = ["watch", "--no-animation", "wait 15 seconds"] if command == "watch" else ["chat"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter.cli", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        if command == "chat":
            proc.stdin.write(b"wait 15 seconds\n")  # stdin stays open
            proc.stdin.flush()
        seen = b""
        while b"step 1 of" not in seen:  # the tool is running
            line = proc.stdout.readline()
            assert line, (seen, proc.stderr.read() if proc.poll() is not None else b"")
            seen += line
        closed = time.monotonic()
        proc.stdout.close()  # `head` had its lines and exited
        proc.wait(timeout=BOUND + 5)
        took = time.monotonic() - closed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert took < BOUND, f"ran on for {took:.1f}s after its reader left"
    deadline = time.monotonic() + 5
    while _with_marker(marker):  # the agent (and its tool) went with it
        assert time.monotonic() < deadline, f"still running: {_with_marker(marker)}"
        time.sleep(0.05)
    assert b"Traceback" not in (proc.stderr.read() if proc.stderr else b"")
