"""MCP tool names offered to the model stay in the OpenAI function-name charset."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.mcp.names import (
    MAX_NAME,
    MAX_TOOLS_PER_SERVER,
    offered_names,
    server_name_problem,
    servers_problems,
    tool_name,
)

_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@given(st.text(max_size=200), st.text(max_size=200))
def test_any_name_is_valid(server: str, tool: str) -> None:
    assert _OK.match(tool_name(server, tool))


def test_plain_names_kept() -> None:
    assert tool_name("everything", "echo") == "mcp__everything__echo"
    assert tool_name("ev il", "\x1b[2Jrm -rf") == "mcp__ev_il__2Jrm_-rf"


def test_limit_and_collisions() -> None:
    offered = offered_names("s", [f"t{i}" for i in range(5000)])
    assert len(offered.mapping) == MAX_TOOLS_PER_SERVER and offered.over_limit == 4000
    offered = offered_names("s", ["a b", "a_b"])
    assert offered.mapping == {"mcp__s__a_b": "a b"} and offered.collided == [("a_b", "s/a b")]


def test_a_server_name_with_the_separator_is_refused_and_says_why() -> None:
    """Server ``s`` tool ``a__b`` and server ``s__a`` tool ``b`` would both be ``mcp__s__a__b``."""
    assert tool_name("s", "a__b") == tool_name("s__a", "b")
    for bad in ("s__a", "s._a", "s.._a", "a_.b"):
        problem = server_name_problem(bad)
        assert problem is not None and "contains '__'" in problem and repr(bad) in problem
    assert server_name_problem("s_a") is None and server_name_problem("my-server.v2") is None
    assert servers_problems(["s", "s_"]) == ["MCP server name 's_' and 's' both give tool names mcp__s__…"]
    assert servers_problems(["s", "s__a"])[0].startswith("MCP server name 's__a' contains")


def test_a_name_another_server_already_offers_is_left_out_and_names_its_holder() -> None:
    first = offered_names("docs", ["read"])
    taken = {name: f"docs/{tool}" for name, tool in first.mapping.items()}
    second = offered_names("docs", ["read", "write"], taken)  # e.g. the same part from a front-end list
    assert second.mapping == {"mcp__docs__write": "write"} and second.collided == [("read", "docs/read")]


_PART = st.text(alphabet="ab_.-", min_size=1, max_size=8)


@given(_PART, _PART, _PART, _PART)
def test_servers_accepted_together_never_share_a_tool_name(s1: str, s2: str, t1: str, t2: str) -> None:
    if servers_problems([s1, s2]):
        return
    n1, n2 = tool_name(s1, t1), tool_name(s2, t2)
    assert len(n1) <= MAX_NAME and n1 != n2
