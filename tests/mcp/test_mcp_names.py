"""MCP tool names offered to the model stay in the OpenAI function-name charset."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.mcp.names import MAX_TOOLS_PER_SERVER, offered_names, tool_name

_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@given(st.text(max_size=200), st.text(max_size=200))
def test_any_name_is_valid(server: str, tool: str) -> None:
    assert _OK.match(tool_name(server, tool))


def test_plain_names_kept() -> None:
    assert tool_name("everything", "echo") == "mcp__everything__echo"
    assert tool_name("ev il", "\x1b[2Jrm -rf") == "mcp__ev_il__2Jrm_-rf"


def test_limit_and_collisions() -> None:
    mapping, dropped = offered_names("s", [f"t{i}" for i in range(5000)])
    assert len(mapping) == MAX_TOOLS_PER_SERVER and dropped == 4000
    mapping, dropped = offered_names("s", ["a b", "a_b"])
    assert mapping == {"mcp__s__a_b": "a b"} and dropped == 1
