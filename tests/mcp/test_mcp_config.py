"""MCP server configuration: the common JSON form parses into ACP SDK models."""

from __future__ import annotations

import pytest
from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from acp_adapter.mcp import McpConfigError, parse_common_form, server_names


def test_stdio_and_http_entries() -> None:
    specs = parse_common_form(
        {
            "mcpServers": {
                "everything": {"command": "npx", "args": ["-y", "x"], "env": {"TOKEN": "s3cret"}},
                "web": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer t"}},
            }
        }
    )
    stdio, http = specs
    assert isinstance(stdio, McpServerStdio) and stdio.args == ["-y", "x"]
    assert stdio.env[0].name == "TOKEN"
    assert isinstance(http, HttpMcpServer) and http.headers[0].name == "Authorization"
    assert server_names(specs) == ["everything", "web"]


def test_every_mistake_reported_without_secret_values() -> None:
    with pytest.raises(McpConfigError) as info:
        parse_common_form(
            {
                "mcpServers": {
                    "a": {"args": []},
                    "b c": {"command": "x"},
                    "d": {"command": "x", "env": {"K": "s3cret\x1b[2J"}},
                    "e": {"url": "file:///etc/passwd"},
                }
            }
        )
    text = str(info.value)
    assert "a: needs" in text and "'b c'" in text and "d.env.K" in text and "e.url" in text
    assert "s3cret" not in text


def test_sse_entries_and_names_that_would_blur_tool_names() -> None:
    (sse,) = parse_common_form({"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}})
    assert isinstance(sse, SseMcpServer) and sse.url.endswith("/sse")
    with pytest.raises(McpConfigError) as info:
        parse_common_form(
            {
                "mcpServers": {
                    "s": {"command": "x"},
                    "s__a": {"command": "x"},
                    "s_": {"command": "x"},
                    "w": {"type": "websocket", "url": "http://x"},
                }
            }
        )
    text = str(info.value)
    assert "'s__a' contains '__'" in text and "'s_' and 's' both give tool names" in text
    assert "'websocket' is not supported (use 'http' or 'sse')" in text


def test_wrong_top_level() -> None:
    with pytest.raises(McpConfigError):
        parse_common_form({"servers": {}})
    with pytest.raises(McpConfigError):
        parse_common_form({"mcpServers": {str(i): {"command": "x"} for i in range(100)}})


def test_load_file(tmp_path: pytest.TempPathFactory) -> None:
    import os
    from pathlib import Path

    from acp_adapter.mcp import load_mcp_config

    base = Path(str(tmp_path))
    good = base / "servers.json"
    good.write_text('{"mcpServers": {"time": {"command": "mcp-server-time"}}}')
    assert server_names(load_mcp_config(str(good))) == ["time"]
    bad = base / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_mcp_config(str(bad))
    with pytest.raises(McpConfigError, match="not a regular file"):
        load_mcp_config(str(base))
    fifo = base / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(McpConfigError, match="not a regular file"):
        load_mcp_config(str(fifo))
    with pytest.raises(McpConfigError, match="No such file"):
        load_mcp_config(str(base / "missing.json"))


@pytest.mark.e2e
def test_the_mcp_limits_are_settings_and_a_bad_value_stops_the_agent_with_exit_2(tmp_path) -> None:
    import os
    import subprocess
    import sys

    from acp_adapter.config import ConfigError, Settings

    loaded = Settings.from_env({"ACP_PROGRESS_MCP_MAX_LINE": "131072"}, config_file=False)
    assert loaded.mcp.max_message_bytes == 131072 and loaded.mcp.start_timeout == 10.0
    with pytest.raises(ConfigError, match=r"ACP_PROGRESS_MCP_START_TIMEOUT: must be >= 0\.1"):
        Settings.from_env({"ACP_PROGRESS_MCP_START_TIMEOUT": "0"}, config_file=False)
    env = {**os.environ, "ACP_PROGRESS_MCP_MAX_LINE": "lots", "ACP_PROGRESS_CONFIG_DIR": str(tmp_path)}
    agent = subprocess.run(
        [sys.executable, "-m", "acp_adapter"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    assert agent.returncode == 2
    assert "ACP_PROGRESS_MCP_MAX_LINE: expected a whole number, got 'lots'" in agent.stderr.decode()
