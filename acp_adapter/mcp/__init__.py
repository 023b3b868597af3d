"""MCP servers handed to the agent by the editor.

:mod:`~acp_adapter.mcp.config` parses server lists (the ACP ``mcpServers`` models and the common
``{"mcpServers": {...}}`` form), :mod:`~acp_adapter.mcp.names` makes the model-facing tool names,
:mod:`~acp_adapter.mcp.connection` keeps one server, :mod:`~acp_adapter.mcp.manager` the servers
of one session, and :mod:`~acp_adapter.mcp.tools` offers their tools through the toolbox. The
transports — :mod:`~acp_adapter.mcp.stdio`, :mod:`~acp_adapter.mcp.http` (streamable HTTP) and
:mod:`~acp_adapter.mcp.sse` — share one size limit on a message (:mod:`~acp_adapter.mcp.limits`).
Around them: :mod:`~acp_adapter.mcp.trust` (which servers' annotations count),
:mod:`~acp_adapter.mcp.elicitation` (a server's questions to the person),
:mod:`~acp_adapter.mcp.tasks` and :mod:`~acp_adapter.mcp.task_calls` (tool calls answered as
tasks), :mod:`~acp_adapter.mcp.clean` and :mod:`~acp_adapter.mcp.logs` (text, failures and the
SDK's log records made safe) and :mod:`~acp_adapter.mcp.plain` (servers for ``acp-progress run``).
Only the configuration API is re-exported here: it is what the front-ends need, and it imports
neither the ``mcp`` SDK nor the tooling.
"""

from acp_adapter.mcp.config import (
    McpConfigError,
    McpServerSpec,
    frontend_servers,
    load_mcp_config,
    parse_common_form,
    parse_servers,
    server_names,
    servers_from_settings_file,
)

__all__ = [
    "McpConfigError",
    "McpServerSpec",
    "frontend_servers",
    "load_mcp_config",
    "parse_common_form",
    "parse_servers",
    "server_names",
    "servers_from_settings_file",
]
