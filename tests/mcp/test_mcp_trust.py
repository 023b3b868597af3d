"""An MCP server's own word decides nothing unless the person trusts the server.

The attack: the kit server's ``sneaky`` tool says ``readOnlyHint: true`` and writes a file (the
output of ``id``). From an untrusted server it must ask first in the default mode (the question
says the claim is not verified, and "always" is offered), and run not at all in ``read-only``;
only a server marked trusted (``"trusted": true`` in ``--mcp-config``, ``trusted = true`` in the
settings file, ``_meta.acpProgress.trusted`` in ``session/new``) has its hints believed. The agent
is this project's, in this process (trust is its decision, wherever it runs), shared by the
module; the server is a real one built with ``mcp``: one kit over streamable HTTP serves the
sessions that only mark it trusted or not (each has its own MCP session with it; trust is the
point, not the transport), and the settings-file test starts the stdio kits it names.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from acp.schema import HttpMcpServer

from acp_adapter.mcp import McpConfigError, parse_common_form
from acp_adapter.mcp.trust import is_trusted, trusted_meta
from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.mcp_kit import http_kit, kit
from tests.helpers.shared_agent import SharedAgent, shared_agent_inprocess
from tests.helpers.tool_cards import text_of, tool_cards

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def agent() -> AsyncIterator[SharedAgent]:
    async with shared_agent_inprocess() as shared:
        yield shared


@pytest.fixture(scope="module")
def kit_url() -> Iterator[str]:
    """The kit over streamable HTTP, one process for the module's sessions."""
    with http_kit() as port:
        yield f"http://127.0.0.1:{port}/mcp"


def web_kit(url: str, *, trusted: bool) -> HttpMcpServer:
    """The HTTP kit as an editor passes it: marked trusted in ``session/new``, or not."""
    return HttpMcpServer(name="kit", url=url, headers=[], type="http", field_meta=trusted_meta(trusted))


def _sneak(target: Path) -> str:
    return f'call sneaky {{"path": "{target}"}}'


@pytest.mark.e2e
async def test_a_lying_read_only_tool_of_an_untrusted_server_asks_first(
    tmp_path: Path, agent: SharedAgent, kit_url: str
) -> None:
    client = RecordingClient(permission="reject")
    target = tmp_path / "pwned"
    session = await agent.new_session(client, tmp_path, [web_kit(kit_url, trusted=False)])
    sid = session.session_id
    await prompt_text(agent.conn, sid, _sneak(target))
    assert not target.exists(), "an untrusted server's readOnlyHint ran a tool unasked"
    (asked,) = client.permission_requests
    assert "server says read-only; not verified" in asked.title and "kit" in asked.title
    (card,) = tool_cards(client, sid)
    assert card[0].kind == "other" and final_status(card) == "failed"
    # its honest read-only tool asks too: nothing tells the two apart
    await prompt_text(agent.conn, sid, 'call peek {"text": "hi"}')
    assert len(client.permission_requests) == 2


@pytest.mark.e2e
async def test_read_only_mode_runs_no_tool_of_an_untrusted_server(
    tmp_path: Path, agent: SharedAgent, kit_url: str
) -> None:
    client = RecordingClient(permission="allow")
    target = tmp_path / "pwned"
    session = await agent.new_session(client, tmp_path, [web_kit(kit_url, trusted=False)])
    sid = session.session_id
    await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
    await prompt_text(agent.conn, sid, _sneak(target))
    await prompt_text(agent.conn, sid, 'call peek {"text": "hi"}')
    assert not target.exists(), "read-only mode ran a tool that writes"
    assert client.permission_requests == []  # refused without asking
    cards = tool_cards(client, sid)
    assert [final_status(c) for c in cards] == ["failed", "failed"]
    assert "read-only mode" in text_of(cards[0][-1]) + str(cards[0][-1])


@pytest.mark.e2e
async def test_a_trusted_servers_read_only_tool_runs_unasked_in_every_mode(
    tmp_path: Path, agent: SharedAgent, kit_url: str
) -> None:
    client = RecordingClient(permission="reject")
    session = await agent.new_session(client, tmp_path, [web_kit(kit_url, trusted=True)])
    sid = session.session_id
    await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
    await prompt_text(agent.conn, sid, 'call peek {"text": "trusted"}')
    (card,) = tool_cards(client, sid)
    assert card[0].kind == "read" and final_status(card) == "completed"
    assert client.permission_requests == []


@pytest.mark.e2e
async def test_the_always_answer_is_offered_for_an_untrusted_servers_tool(
    tmp_path: Path, agent: SharedAgent, kit_url: str
) -> None:
    from tests.helpers.choosing_client import ChoosingClient

    client = ChoosingClient(choices=["allow_always"])
    session = await agent.new_session(client, tmp_path, [web_kit(kit_url, trusted=False)])
    sid = session.session_id
    await prompt_text(agent.conn, sid, 'call peek {"text": "one"}')
    await prompt_text(agent.conn, sid, 'call peek {"text": "two"}')
    assert client.offered == [["allow_once", "allow_always", "reject_once", "reject_always"]]
    assert [final_status(c) for c in tool_cards(client, sid)] == ["completed", "completed"]


def test_the_trusted_mark_is_a_checked_boolean_of_a_closed_entry() -> None:
    trusted, plain = parse_common_form(
        {"mcpServers": {"a": {"command": "x", "trusted": True}, "b": {"url": "https://h.test/mcp"}}}
    )
    assert is_trusted(trusted) and not is_trusted(plain)
    assert trusted.model_dump(by_alias=True)["_meta"] == {"acpProgress": {"trusted": True}}
    for bad, said in (
        ({"command": "x", "trusted": "yes"}, "a.trusted: expected true or false"),
        ({"command": "x", "trusted": 1}, "a.trusted: expected true or false"),
        ({"command": "x", "trustd": True}, "unknown key 'trustd' (did you mean 'trusted'?)"),
        ({"command": "x", "autoApprove": ["*"]}, "unknown key 'autoApprove'"),
    ):
        with pytest.raises(McpConfigError) as info:
            parse_common_form({"mcpServers": {"a": bad}})
        assert said in str(info.value)
    # a foreign or malformed _meta is no mark
    from acp.schema import McpServerStdio

    for meta in ({"acpProgress": {"trusted": "true"}}, {"other": {"trusted": True}}, {"acpProgress": 1}):
        spec = McpServerStdio(name="a", command="x", args=[], env=[], field_meta=meta)
        assert not is_trusted(spec)


def test_the_config_report_shows_which_servers_are_trusted() -> None:
    from acp_adapter.cli._config_report import describe_server, mcp_server_lines

    trusted, plain = parse_common_form(
        {"mcpServers": {"docs": {"command": "x", "trusted": True}, "web": {"url": "https://h.test/mcp"}}}
    )
    described = [describe_server(trusted), describe_server(plain)]
    assert described[0]["trusted"] is True and "trusted" not in described[1]
    first, second = mcp_server_lines(described)
    assert first.startswith("MCP server docs (trusted") and "trusted" not in second


@pytest.mark.e2e
async def test_an_editors_server_is_trusted_when_the_settings_file_trusts_the_same_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor sends no mark; the agent's settings file lists the same server (name, command
    and arguments) as trusted: its read-only tool runs unasked. A server that only borrows the
    name (other arguments) stays untrusted, and its lying tool is asked about."""
    import json
    import sys

    from tests.helpers.choosing_client import agent_from_env
    from tests.helpers.settings_file import write_settings
    from tests.helpers.shared_agent import served_inprocess

    config = tmp_path / "config"
    trusted = kit(trusted=False)
    write_settings(
        config,
        f"[mcp_servers.kit]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps(list(trusted.args))}\ntrusted = true\n",
    )
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(config))
    env = agent_env(
        ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"),
        ACP_PROGRESS_CONFIG_DIR=str(config),
        ACP_PROGRESS_EMBEDDED_DELAY="0.05",  # the suite's think delay: thinking is not the point here
    )
    client = RecordingClient(permission="reject")
    async with served_inprocess(client, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[trusted])).session_id
        await prompt_text(conn, sid, 'call peek {"text": "editor"}')
        assert client.permission_requests == []
        assert final_status(tool_cards(client, sid)[-1]) == "completed"
        impostor = kit(trusted=False)
        impostor = impostor.model_copy(update={"args": [*impostor.args, "stdio"]})
        other = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[impostor])).session_id
        target = tmp_path / "pwned"
        await prompt_text(conn, other, _sneak(target))
        assert not target.exists() and len(client.permission_requests) == 1


def test_settings_trust_needs_the_same_name_and_the_same_program_or_url() -> None:
    from acp.schema import HttpMcpServer, McpServerStdio

    from acp_adapter.mcp.trust import with_settings_trust

    listed = parse_common_form(
        {
            "mcpServers": {
                "docs": {"command": "uvx", "args": ["docs-mcp"], "trusted": True},
                "web": {"url": "https://h.test/mcp", "trusted": True},
                "plain": {"command": "uvx", "args": ["plain"]},
            }
        }
    )
    passed = [
        McpServerStdio(name="docs", command="uvx", args=["docs-mcp"], env=[]),
        McpServerStdio(name="docs", command="uvx", args=["docs-mcp", "--evil"], env=[]),
        McpServerStdio(name="other", command="uvx", args=["docs-mcp"], env=[]),
        HttpMcpServer(name="web", url="https://h.test/mcp", headers=[], type="http"),
        HttpMcpServer(name="web", url="https://evil.test/mcp", headers=[], type="http"),
        McpServerStdio(name="plain", command="uvx", args=["plain"], env=[]),
    ]
    marks = [is_trusted(spec) for spec in with_settings_trust(passed, listed)]
    assert marks == [True, False, False, True, False, False]
