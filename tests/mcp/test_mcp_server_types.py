"""An ``mcpServers`` entry the agent cannot use is refused with invalid params naming it, never
dropped by the SDK's lenient parsing: in-process over the SDK's connection (raw requests, since a
client built on the SDK would not send such an entry), with Hypothesis over any JSON value, and
once over a real agent process's stdin."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError
from acp.schema import ForkSessionRequest, LoadSessionRequest, NewSessionRequest, ResumeSessionRequest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from acp_adapter.protocol.mcp_server_types import MAX_PROBLEMS, entry_problem, mcp_server_problems
from tests.helpers.acp_agent import RecordingClient, agent_env, fast_settings
from tests.helpers.rawpipes import RawProcess, answers, request
from tests.helpers.shared_agent import progress_agent, served_inprocess

STDIO = {"name": "files", "command": "/bin/true", "args": [], "env": []}
WS = {"type": "ws", "name": "live", "url": "ws://127.0.0.1:9/mcp"}

#: each method that takes MCP servers, with the rest of a request that would otherwise be served
REQUESTS: dict[str, type[Any]] = {
    "session/new": NewSessionRequest,
    "session/load": LoadSessionRequest,
    "session/resume": ResumeSessionRequest,
    "session/fork": ForkSessionRequest,
}


def _params(method: str, cwd: str, servers: list[Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"cwd": cwd, "mcpServers": servers}
    if method != "session/new":
        params["sessionId"] = "no-such-session"
    return params


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        (WS, "MCP server 'live' (mcpServers[0]): the type 'ws' is not supported (use stdio, http or sse)"),
        # stdio's fields under another type: the SDK would start it as a stdio server
        ({**STDIO, "type": "websocket"}, "the type 'websocket' is not supported"),
        # an http entry without its url: the SDK would take it for stdio (its fields are there)
        (
            {**STDIO, "type": "http"},
            "MCP server 'files' (mcpServers[0]): not a valid http server: url: Field",
        ),
        ({"type": "sse", "name": "s"}, "not a valid sse server: url: Field required"),
        ({"name": "n", "url": "http://x"}, "not a valid stdio (an entry without a type) server: command"),
        ({"type": 7, "name": "n"}, "the type (a number) is not supported"),
        ({"type": "acp"}, "MCP server mcpServers[0]: the type 'acp' is not supported"),
        ("stdio", "mcpServers[0] is a string, not an MCP server object"),
        (None, "mcpServers[0] is null, not an MCP server object"),
        ([STDIO], "mcpServers[0] is an array, not an MCP server object"),
    ],
)
def test_each_unusable_entry_is_named_with_what_is_wrong(entry: Any, said: str) -> None:
    problem = entry_problem(0, entry)
    assert problem is not None and said in problem, problem


@pytest.mark.parametrize(
    "entry",
    [
        STDIO,
        {**STDIO, "type": "stdio"},
        {"type": "http", "name": "h", "url": "http://127.0.0.1:1/mcp", "headers": []},
        {"type": "sse", "name": "s", "url": "http://127.0.0.1:1/sse", "headers": []},
        {"type": "acp", "name": "inline", "serverId": "x"},  # parses: the agent refuses it itself
    ],
)
def test_entries_the_sdk_parses_pass(entry: Any) -> None:
    assert entry_problem(0, entry) is None


def test_names_and_types_are_sanitised_and_bounded() -> None:
    token = "ghp_" + "a1B2" * 10
    entry = {"type": "\x1b]0;owned\x07" + "w" * 1_000_000, "name": f"\x1b[2J {token}" + "n" * 1_000_000}
    started = time.monotonic()
    problem = entry_problem(0, entry)
    assert time.monotonic() - started < 0.5
    assert problem is not None and len(problem) < 400
    assert "\x1b" not in problem and "\x07" not in problem and token not in problem
    assert "…" in problem


def test_ten_thousand_usable_entries_or_a_megabyte_one_cost_little() -> None:
    started = time.monotonic()
    assert mcp_server_problems({"mcpServers": [STDIO] * 10_000}) == []  # about 0.1 s here
    (problem,) = mcp_server_problems(
        {"mcpServers": [{"type": "http", "name": "n" * 2**20, "url": "u" * 2**20}]}
    )
    assert time.monotonic() - started < 3
    assert "headers: Field required" in problem and len(problem) < 200


def test_a_huge_list_is_checked_up_to_a_few_problems() -> None:
    mcp_server_problems({"mcpServers": [WS]})  # the redactor's patterns compile on first use
    started = time.monotonic()
    problems = mcp_server_problems({"mcpServers": [WS] * 10_000})
    assert time.monotonic() - started < 0.5
    assert len(problems) == MAX_PROBLEMS + 1 and "checking stopped" in problems[-1]
    assert [p.split(")")[0] for p in problems[:2]] == [
        "MCP server 'live' (mcpServers[0]",
        "MCP server 'live' (mcpServers[1]",
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELD = st.sampled_from(["name", "command", "args", "env", "url", "headers", "serverId", "_meta"])
#: entries near the real shapes, so the property reaches every model and not only "not an object"
NEAR = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["stdio", "http", "sse", "acp", "ws", "", "HTTP"]) | JSON,
        "name": st.text(max_size=10) | JSON,
        "command": st.text(max_size=10),
        "args": st.lists(st.text(max_size=5), max_size=2) | JSON,
        "env": st.lists(st.fixed_dictionaries({"name": st.text(max_size=4), "value": st.text(max_size=4)}))
        | JSON,
        "url": st.text(max_size=10),
        "headers": st.lists(
            st.fixed_dictionaries({"name": st.text(max_size=4), "value": st.text(max_size=4)})
        )
        | JSON,
        "serverId": st.text(max_size=5),
    },
)
PAIRS = st.lists(
    st.fixed_dictionaries({"name": st.text(max_size=4), "value": st.text(max_size=4)}), max_size=2
)
#: entries of the right shape (with a stray key now and then), so the "kept" side is reached too
USABLE = st.one_of(
    st.fixed_dictionaries(
        {
            "name": st.text(max_size=8),
            "command": st.text(max_size=8),
            "args": st.lists(st.text(max_size=4)),
            "env": PAIRS,
        },
        optional={"type": st.just("stdio")},
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["http", "sse"]),
            "name": st.text(max_size=8),
            "url": st.text(max_size=8),
            "headers": PAIRS,
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("acp"), "name": st.text(max_size=8), "serverId": st.text(max_size=4)}
    ),
).flatmap(
    lambda entry: st.dictionaries(st.sampled_from(["extra", "type", "url"]), JSON, max_size=1).map(
        lambda more: {**entry, **more}
    )
)
ENTRY = JSON | NEAR | USABLE | st.dictionaries(FIELD, JSON, max_size=6)


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(ENTRY, min_size=1, max_size=4), method=st.sampled_from(sorted(REQUESTS)))
def test_any_entry_is_refused_or_kept_by_the_sdk_never_dropped(entries: list[Any], method: str) -> None:
    params = _params(method, "/tmp", entries)
    problems = mcp_server_problems(params)
    if problems:
        assert all(p.startswith(("MCP server", "mcpServers[", "(checking")) for p in problems)
        return
    parsed = REQUESTS[method].model_validate(params).mcp_servers
    assert parsed is not None and len(parsed) == len(entries)  # not one silently dropped
    for given_entry, server in zip(entries, parsed, strict=True):  # nor taken for another type
        assert getattr(server, "type", "stdio") == (given_entry.get("type") or "stdio")


@pytest.mark.anyio
@pytest.mark.parametrize("method", sorted(REQUESTS))
async def test_every_method_with_mcp_servers_refuses_an_unknown_type(method: str, tmp_path: Path) -> None:
    agent = progress_agent(fast_settings(state_dir=str(tmp_path / "state")))
    async with served_inprocess(RecordingClient(), agent) as conn:
        with pytest.raises(RequestError) as refused:
            await conn._conn.send_request(method, _params(method, str(tmp_path), [STDIO, WS]))
        assert refused.value.code == -32602
        said = refused.value.data["mcpServers"]
        assert (
            said
            == "MCP server 'live' (mcpServers[1]): the type 'ws' is not supported (use stdio, http or sse)"
        )
        # the agent serves on, and the same request without the bad entry is not refused for it
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        assert session.session_id


async def _refused_over_the_connection(tmp_path: Path, entries: list[Any]) -> None:
    agent = progress_agent(fast_settings(state_dir=str(tmp_path / "state")))
    async with served_inprocess(RecordingClient(), agent) as conn:
        for entry in entries:
            with pytest.raises(RequestError) as refused:
                with anyio.fail_after(10):
                    await conn._conn.send_request(
                        "session/new", _params("session/new", str(tmp_path), [entry])
                    )
            assert refused.value.code == -32602, refused.value
            assert "mcpServers[0]" in refused.value.data["mcpServers"], refused.value.data
        assert (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(ENTRY, min_size=1, max_size=30))
def test_any_unusable_entry_is_answered_with_invalid_params_over_the_connection(
    entries: list[Any], tmp_path: Path
) -> None:
    bad = [e for e in entries if entry_problem(0, e) is not None]  # usable ones: the property above
    assume(bad)
    anyio.run(_refused_over_the_connection, tmp_path, bad)


@pytest.mark.e2e
def test_a_raw_line_with_an_unknown_type_is_refused_by_the_agent_process(tmp_path: Path) -> None:
    agent = RawProcess([sys.executable, "-m", "acp_adapter"], agent_env(), str(tmp_path))
    try:
        agent.send(request(1, "initialize", {"protocolVersion": 1}))
        agent.send(request(2, "session/new", {"cwd": str(tmp_path), "mcpServers": [WS]}))
        agent.send(request(3, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        seen = agent.messages_until(answers(3), timeout=30)
    finally:
        assert agent.finish() == 0
    (refusal,) = [m for m in seen if m.get("id") == 2]
    assert refusal["error"]["code"] == -32602
    assert "the type 'ws' is not supported (use stdio, http or sse)" in refusal["error"]["data"]["mcpServers"]
    (served,) = [m for m in seen if m.get("id") == 3]
    assert served["result"]["sessionId"]
