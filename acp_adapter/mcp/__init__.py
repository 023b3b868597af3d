"""MCP servers handed to the agent by the editor (issue 27).

Only configuration parsing lives here so far; the connection manager and the
tool bridge are built on top of :mod:`acp_adapter.mcp.config`.
"""

from acp_adapter.mcp.config import (
    McpConfigError,
    McpServerSpec,
    load_mcp_config,
    parse_common_form,
    server_names,
)

__all__ = ["McpConfigError", "McpServerSpec", "load_mcp_config", "parse_common_form", "server_names"]
