"""MCP servers as tools: config, lifecycle, transports, hostile servers."""
