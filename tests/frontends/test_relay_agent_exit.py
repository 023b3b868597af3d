"""The relay reports a wrapped agent's exit as soon as the agent has exited, even while a child it
left behind still holds the relay's stderr pipe (the child is killed with the agent's group)."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from tests.helpers.acp_agent import RecordingClient
from tests.helpers.relay_inside import relay_inside

pytestmark = pytest.mark.anyio

# an agent that answers initialize, starts a child that inherits only its stderr, closes its
# output and exits with 3
LEAVES_A_CHILD = """
import asyncio, os, subprocess, sys, time
from acp import run_agent
from acp.schema import InitializeResponse

def leave():  # the relay sees the end of the agent's output first, then its exit
    os.close(1)
    time.sleep(0.3)
    os._exit(3)

class LeavesAChild:
    async def initialize(self, protocol_version, **kwargs):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL)
        asyncio.get_running_loop().call_later(0.2, leave)
        return InitializeResponse(protocol_version=protocol_version)

asyncio.run(run_agent(LeavesAChild()))
"""


@pytest.mark.e2e
async def test_an_agent_whose_child_holds_stderr_is_reported_gone_at_once(caplog):
    argv = ["-m", "acp_adapter.cli", "relay", "--no-heartbeat", "--", sys.executable, "-c", LEAVES_A_CHILD]
    async with relay_inside(RecordingClient(), argv=argv) as (_conn, relay):
        started = time.monotonic()
        code = await asyncio.wait_for(asyncio.shield(relay), 10)
        elapsed = time.monotonic() - started
    assert code == 1
    assert "the wrapped agent exited with code 3; the relay stops" in caplog.text
    # the agent exits 0.5 s after initialize; waiting on the pipes the child holds took 2 s more
    assert elapsed < 1.5, f"the relay took {elapsed:.2f} s to see its agent gone"
