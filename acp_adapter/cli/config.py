"""``acp-progress config``: every effective setting and where it came from. Needs no valid settings
to start (it reports what is wrong with them instead)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from acp_adapter.cli._flags import add_model_flags, setting_flags

#: Run without loading settings first (see :func:`acp_adapter.cli.main`).
NEEDS_SETTINGS = False


def add_parser(sub: Any) -> None:
    config = sub.add_parser(
        "config",
        help="show every effective setting and where it came from (default, settings file, env, flag)",
        description="Show every effective setting and its source: its default, the settings file "
        "(~/.config/acp-progress/config.toml, or $ACP_PROGRESS_CONFIG_DIR/config.toml, or "
        "$XDG_CONFIG_HOME/acp-progress/config.toml), an environment variable or a flag given here. "
        "Secrets are never printed.",
    )
    config.add_argument("--json", action="store_true", help="one JSON object for machines")
    add_model_flags(config)


def run(args: argparse.Namespace, settings: object = None) -> int:
    import json

    from acp_adapter.cli._config_report import (
        config_json,
        config_lines,
        describe_server,
        mcp_server_lines,
        state_lines,
    )
    from acp_adapter.cli._state import check_state_dir, state_location
    from acp_adapter.config import ConfigError, Settings
    from acp_adapter.mcp.config import McpConfigError, servers_from_settings_file

    try:
        loaded = Settings.load_with_sources(flags=setting_flags(args))
    except ConfigError as exc:
        print(exc.report("acp-progress config"), file=sys.stderr)  # one line per mistake
        return 2
    try:
        servers = [describe_server(spec) for spec in servers_from_settings_file()]
    except McpConfigError as exc:
        print(f"acp-progress config: MCP servers: {exc}", file=sys.stderr)
        return 2
    state = state_location(loaded.settings)
    problem = check_state_dir(state.directory) if state.enabled and not state.database_url else None
    if args.json:
        text = json.dumps({**config_json(loaded, state, problem), "mcpServers": servers}, ensure_ascii=True)
    else:
        shown = state_lines(state, problem, state.database.exists())
        text = "\n".join(config_lines(loaded, [*shown, *mcp_server_lines(servers)]))
    print(text, flush=True)  # `config | head`: the command line leaves quietly (cli._closed_stdout)
    return 0
