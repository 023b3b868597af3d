"""Unit tests of the MCP tool bridge's pure parts: result cut at 1 MiB with a note, kinds from
annotations, schemas bounded, escape sequences and known secrets removed, ``call NAME {JSON}``."""

from __future__ import annotations

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.mcp.clean import clean_text, scrub
from acp_adapter.mcp.tools import (
    MAX_RESULT_BYTES,
    card_kind,
    cut,
    safe_schema,
    to_return,
)
from acp_adapter.models.embedded import explicit_call
from acp_adapter.tooling.toolbox import ToolError


def _tool(name: str, read_only: bool | None) -> types.Tool:
    annotations = None if read_only is None else types.ToolAnnotations(read_only_hint=read_only)
    return types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)


def test_a_result_over_one_mib_reaches_the_model_cut_with_a_note() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="é" * (3 << 20))])
    text = to_return(result).text
    head, note = text.rsplit("\n", 1)
    assert len(head.encode()) <= MAX_RESULT_BYTES and "result cut" in note and "6,291,456 bytes" in note
    assert cut("small") == "small"


def test_is_error_fails_with_the_servers_message_and_images_and_links_are_described() -> None:
    failed = types.CallToolResult(content=[types.TextContent(type="text", text="disk\nfull")], is_error=True)
    with pytest.raises(ToolError, match="disk full"):
        to_return(failed)
    mixed = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="see"),
            types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
            types.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt"),
        ]
    )
    done = to_return(mixed)
    assert done.text == "see\n[image image/png, about 3 bytes]\n[resource a.txt: file:///a.txt]"
    assert done.raw_output == {
        "media": [
            {"type": "image", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
        ]
    }


def test_kinds_come_from_annotations_and_names() -> None:
    assert card_kind(_tool("echo", True)) == "read"
    assert card_kind(_tool("search_issues", True)) == "search"
    assert card_kind(_tool("fetch_page", True)) == "fetch"
    assert card_kind(_tool("search_issues", False)) == "other"
    assert card_kind(_tool("delete", None)) == "other"


def test_schemas_are_bounded_objects() -> None:
    assert safe_schema("nope") == {"type": "object", "properties": {}}
    assert safe_schema({"type": "object", "properties": {"x": {"type": "string"}}, "required": [1]}) == {
        "type": "object",
        "properties": {"x": {"type": "string"}},
    }
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(1000)},
    }
    assert safe_schema(huge) == {"type": "object", "properties": {}}


@given(st.text())
def test_clean_text_leaves_no_escape_or_control_character(text: str) -> None:
    out = clean_text(text)
    assert "\x1b" not in out and all(ch in "\n\t" or ord(ch) >= 0x20 for ch in out)
    assert not any(0x7F <= ord(ch) <= 0x9F for ch in out)


@given(st.text(min_size=6, max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_scrub_removes_every_known_secret(secret: str, before: str, after: str) -> None:
    assert secret not in scrub(before + secret + after + secret, (secret,)).replace("[REDACTED]", "\0")


def test_call_line_reaches_any_offered_tool_by_full_or_unique_bare_name() -> None:
    offered = ["read_file", "mcp__a__echo", "mcp__b__echo", "mcp__a__sum"]
    call = explicit_call('call sum {"a": 1, "b": 2}', offered)
    assert call is not None and call.name == "mcp__a__sum" and call.arguments == {"a": 1, "b": 2}
    assert explicit_call("call echo {}", offered) is None  # two servers have echo: not unique
    call = explicit_call("call mcp__b__echo", offered)
    assert call is not None and call.name == "mcp__b__echo" and call.arguments == {}
    call = explicit_call("call mcp__a__sum {bad json}", offered)
    assert call is not None and "_raw" in call.arguments
    assert explicit_call("please call sum", offered) is None
    call = explicit_call("call get.weather {}", ["mcp__w__get_weather"])  # the server's own spelling
    assert call is not None and call.name == "mcp__w__get_weather"


def test_a_sessions_offered_schemas_are_bounded_and_the_cut_is_said_once(tmp_path) -> None:
    import asyncio
    import json

    from acp.schema import McpServerStdio

    from acp_adapter.mcp.connection import McpServer
    from acp_adapter.mcp.manager import McpManager
    from acp_adapter.mcp.tools import MAX_OFFERED_BYTES, McpToolFactory

    manager = McpManager([], str(tmp_path))
    server = McpServer(McpServerStdio(name="wide", command="true", args=[], env=[]), str(tmp_path))
    server.state = "ready"
    props = {f"p{i}": {"type": "string", "description": "d" * 40} for i in range(80)}
    server.tools = [
        types.Tool(name=f"t{i}", input_schema={"type": "object", "properties": props}) for i in range(1000)
    ]
    manager.servers.append(server)
    loop = asyncio.new_event_loop()
    try:
        factory = McpToolFactory(manager, loop)
        offered = factory.tools()
        again = factory.tools()
    finally:
        loop.close()
    size = sum(len(t.description) + len(json.dumps(t.parameters)) for t in offered)
    assert 0 < len(offered) < 1000 and size <= MAX_OFFERED_BYTES and len(again) == len(offered)
    (note,) = manager.take_notices()
    assert f"{1000 - len(offered)} of its tools were left out" in note


def test_a_tool_left_out_for_a_taken_name_is_named_in_the_notice(tmp_path) -> None:
    import asyncio

    from acp.schema import McpServerStdio

    from acp_adapter.mcp.connection import McpServer
    from acp_adapter.mcp.manager import McpManager
    from acp_adapter.mcp.tools import McpToolFactory

    manager = McpManager([], str(tmp_path))
    server = McpServer(McpServerStdio(name="s", command="true", args=[], env=[]), str(tmp_path))
    server.state = "ready"
    server.tools = [_tool("a b", True), _tool("a_b", True), _tool("a.b", True)]
    manager.servers.append(server)
    loop = asyncio.new_event_loop()
    try:
        factory = McpToolFactory(manager, loop)
        names = [t.name for t in factory.tools()]
        factory.tools()  # told once
    finally:
        loop.close()
    assert names == ["mcp__s__a_b"]
    notes = manager.take_notices()
    assert notes == [
        "MCP server 's' tool 'a_b' was left out: its name for the model is the same as that of 's/a b'",
        "MCP server 's' tool 'a.b' was left out: its name for the model is the same as that of 's/a b'",
    ]
