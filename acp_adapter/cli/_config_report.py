"""What ``acp-progress config`` shows: every effective setting, its value and where it came from.

Pure functions from :class:`~acp_adapter.config.LoadedSettings` to lines or a JSON-ready dict;
the command prints them. A secret (a field declared ``secret=True``: API keys, the AG-UI token) is
never shown — only whether it is set — and every other string passes the canonical redactor, so a
key pasted into a base URL does not leak either.
"""

from __future__ import annotations

import json
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import SecretStr

from acp_adapter.cli._state import StateLocation
from acp_adapter.config import LoadedSettings, Settings
from acp_adapter.mcp.trust import is_trusted
from acp_adapter.safety.redact import REDACTED, redact_text

HIDDEN = "[hidden]"
"""Shown instead of a secret that is set."""


def _is_secret(info: Any) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("secret"))


def _value_of(settings: Settings, dotted: str) -> Any:
    value: Any = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def _safe(value: Any, secret: bool) -> Any:
    """The value as JSON data, secrets replaced, strings redacted."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if secret:
        return HIDDEN if value not in (None, "") else value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, tuple):
        return [redact_text(v) if isinstance(v, str) else v for v in value]
    return value


def _shown_url(url: str) -> str:
    """The store's database URL with its password replaced by :data:`HIDDEN` (where it goes is
    worth showing; the password never is)."""
    from acp_adapter.store.postgres_url import DatabaseUrl

    return DatabaseUrl.parse(url).shown()


def config_rows(loaded: LoadedSettings) -> list[dict[str, Any]]:
    """One row per setting: ``setting``, ``value``, ``source`` (default/file/env/flag), ``from``
    (the file, variable or flag; None for a default), ``env`` (its variable), ``secret``."""
    rows = []
    for dotted, info in Settings.fields():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        source = loaded.source(dotted)
        secret = _is_secret(info)
        value = _value_of(loaded.settings, dotted)
        rows.append(
            {
                "setting": dotted,
                "value": _shown_url(value) if dotted == "store.url" and value else _safe(value, secret),
                "source": source.kind,
                "from": source.name,
                "env": extra.get("env"),
                "secret": secret,
            }
        )
    return rows


def config_json(
    loaded: LoadedSettings, state: StateLocation | None = None, problem: str | None = None
) -> dict[str, Any]:
    """The whole report for machines (``acp-progress config --json``); with ``state``, where
    sessions really go (``stateDir``, ``database``, ``stateEnabled``, ``stateProblem``)."""
    out: dict[str, Any] = {
        "configFile": str(loaded.config_file) if loaded.config_file is not None else None,
        "configFileFound": loaded.config_file_found,
    }
    if state is not None:
        out.update(
            stateDir=str(state.directory),
            database=_shown_url(state.database_url) if state.database_url else str(state.database),
            stateEnabled=state.enabled,
            stateProblem=problem,
        )
    out["settings"] = {row.pop("setting"): row for row in config_rows(loaded)}
    return out


def state_lines(state: StateLocation, problem: str | None, database_exists: bool) -> list[str]:
    """Where sessions go: the resolved directory and database file, or why they cannot."""
    if state.database_url and state.enabled:
        return [
            f"session store: PostgreSQL {_shown_url(state.database_url)} (shared by every process using it)"
        ]
    if not state.enabled:
        return [f"session store: off (sessions in memory only; it would be {state.database})"]
    if problem is not None:
        return [f"state directory: {state.directory} (UNUSABLE: {problem})"]
    made = "exists" if database_exists else "created on first use"
    return [f"state directory: {state.directory}", f"session database: {state.database} ({made})"]


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    if value in (HIDDEN, REDACTED):
        return str(value)
    return json.dumps(value, ensure_ascii=False)  # TOML-like: strings quoted, true/false, lists


def config_lines(loaded: LoadedSettings, where: list[str] | None = None) -> list[str]:
    """The report for people: the file looked at (and ``where`` sessions go: :func:`state_lines`), then
    ``setting  value  source`` columns."""
    if loaded.config_file is None:
        head = "settings file: none (no home directory in the environment)"
    else:
        state = "read" if loaded.config_file_found else "not found; every value is a default, env or flag"
        head = f"settings file: {loaded.config_file} ({state})"
    rows = [
        (row["setting"], _shown(row["value"]), row["source"] + (f" {row['from']}" if row["from"] else ""))
        for row in config_rows(loaded)
    ]
    width_name = max(len("SETTING"), *(len(r[0]) for r in rows))
    width_value = min(48, max(len("VALUE"), *(len(r[1]) for r in rows)))
    lines = [head, *(where or []), "", f"{'SETTING':<{width_name}}  {'VALUE':<{width_value}}  SOURCE"]
    lines.extend(f"{name:<{width_name}}  {value:<{width_value}}  {source}" for name, value, source in rows)
    return lines


def describe_server(spec: HttpMcpServer | McpServerStdio | SseMcpServer) -> dict[str, Any]:
    """An MCP server of the settings file as the report shows it: what it runs or where it
    connects, every env and header value hidden (they are where tokens live), the rest redacted."""
    trusted = {"trusted": True} if is_trusted(spec) else {}
    if isinstance(spec, HttpMcpServer | SseMcpServer):
        return {
            "name": spec.name,
            "type": "http" if isinstance(spec, HttpMcpServer) else "sse",
            "url": redact_text(spec.url),
            "headers": {h.name: HIDDEN for h in spec.headers},
            **trusted,
        }
    return {
        "name": spec.name,
        "type": "stdio",
        "command": redact_text(spec.command),
        "args": [redact_text(a) for a in spec.args],
        "env": {e.name: HIDDEN for e in spec.env or []},
        **trusted,
    }


def mcp_server_lines(servers: list[dict[str, Any]]) -> list[str]:
    """The settings file's ``[mcp_servers]`` (described by :func:`describe_server`:
    env and header values already hidden), one line each, above the settings table (none: no line)."""
    lines = []
    for server in servers:
        if server["type"] in ("http", "sse"):
            what = f"{server['type']} {server['url']}"
            hidden = server["headers"]
        else:
            what = " ".join(["stdio", server["command"], *server["args"]])
            hidden = server["env"]
        extra = "  " + " ".join(f"{k}={v}" for k, v in hidden.items()) if hidden else ""
        mark = " (trusted: its tool annotations decide what runs unasked)" if server.get("trusted") else ""
        lines.append(f"MCP server {server['name']}{mark}: {what}{extra}")
    return lines
