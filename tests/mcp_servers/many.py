"""A low-level ``mcp`` SDK server that lists N tools (default 5,000) cheaply: the agent keeps at
most 1,000 of them; plus ``bad_output``, whose results break its own output schema.
``python -m tests.mcp_servers.many [N]``."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
TOOLS = [
    types.Tool(name=f"t{i:05d}", description=f"tool number {i}", input_schema={"type": "object"})
    for i in range(COUNT)
]
# a tool whose results break its own output schema (the client must refuse them, not crash)
TOOLS.append(
    types.Tool(
        name="bad_output",
        description="Declares an output schema and never follows it.",
        input_schema={"type": "object"},
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )
)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])


server = Server("many", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
