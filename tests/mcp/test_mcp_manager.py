"""The MCP manager on its own (no agent), with the kit server as a real stdio process: a crashed
server is started again at most once per turn, and closing leaves no process behind."""

from __future__ import annotations

import pytest

from acp_adapter.mcp.clean import ServerCrashed
from acp_adapter.mcp.manager import McpManager
from tests.helpers.mcp_kit import alive, kit

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def _ignore(value: float, total: float | None, message: str | None) -> None:
    return None


async def test_a_crashed_server_is_restarted_at_most_once_per_turn(tmp_path):
    marker = tmp_path / "started"
    manager = McpManager([kit(marker=marker)], str(tmp_path))
    manager.start()
    try:
        await manager.prepare_turn()
        server = manager.server("kit")
        assert server is not None and server.state == "ready"
        with pytest.raises(ServerCrashed):
            await server.call("crash", {}, _ignore)
        fresh = await manager.restart(server)
        assert fresh is not None and fresh.state == "ready"
        assert (await fresh.call("peek", {"text": "a"}, _ignore)).content[0].text == "peek: a"
        with pytest.raises(ServerCrashed):
            await fresh.call("crash", {}, _ignore)
        assert await manager.restart(fresh) is None  # the turn's one restart is spent
        await manager.prepare_turn()  # the next turn starts it again
        again = manager.server("kit")
        assert again is not None and again.state == "ready"
        pids = [int(x) for x in marker.read_text().split()]
        assert len(pids) == 3
    finally:
        await manager.aclose()
    assert not alive(pids[-1])
