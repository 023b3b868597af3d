"""Parse MCP server lists into the ACP SDK's schema types.

Two inputs exist: the ACP ``mcpServers`` list of ``session/new`` (already SDK
models) and the common JSON form ``{"mcpServers": {"NAME": {...}}}`` that
Claude Desktop, Cursor and VS Code write, read by ``--mcp-config FILE``.  Both
end as ``McpServerStdio`` / ``HttpMcpServer`` / ``SseMcpServer`` so the rest of the code handles
one shape.  Sizes are bounded because the file may come from anywhere.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from ..errors import AcpProgressError
from .trust import TRUSTED_KEY, trusted_meta

#: The session store's namespace for the server names each session had (never secrets). Here, not
#: in the manager, so an agent whose sessions have no MCP server never imports the MCP SDK.
MCP_SERVERS = "agent.mcp-servers"
#: The namespace of the MCP tasks each session left running (task id, server, tool, title).
MCP_TASKS = "agent.mcp-tasks"

McpServerSpec = McpServerStdio | HttpMcpServer | SseMcpServer

MAX_SERVERS = 64
MAX_ARGS = 256
MAX_ITEMS = 256
MAX_STRING = 8192
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


class McpConfigError(AcpProgressError, ValueError):
    """A server entry is malformed; the message names the entry, never a secret value."""


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise McpConfigError(f"{where}: expected a string")
    if len(value) > MAX_STRING:
        raise McpConfigError(f"{where}: longer than {MAX_STRING} characters")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise McpConfigError(f"{where}: contains control characters")
    return value


def _pairs(value: object, where: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise McpConfigError(f"{where}: expected an object")
    if len(value) > MAX_ITEMS:
        raise McpConfigError(f"{where}: more than {MAX_ITEMS} entries")
    return [(_string(k, f"{where} key"), _string(v, f"{where}.{k}")) for k, v in value.items()]


#: The keys an entry may have: any other is a mistake (a misspelt ``trusted`` must not pass silently).
ENTRY_KEYS = ("command", "args", "env", "url", "headers", "type", TRUSTED_KEY)


def _check_keys(name: str, entry: Mapping[Any, Any]) -> bool:
    """Refuse unknown keys (with a suggestion); the entry's ``trusted`` mark (a boolean)."""
    for key in entry:
        if key not in ENTRY_KEYS:
            shown = str(key)[:40]
            close = difflib.get_close_matches(shown, ENTRY_KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(ENTRY_KEYS)})"
            raise McpConfigError(f"{name}: unknown key {shown!r}{hint}")
    trusted = entry.get(TRUSTED_KEY, False)
    if not isinstance(trusted, bool):
        raise McpConfigError(f"{name}.{TRUSTED_KEY}: expected true or false")
    return trusted


def parse_entry(name: str, entry: object) -> McpServerSpec:
    """Turn one common-form entry into an SDK server model (a trusted one carries the mark in its
    ``_meta``, see :mod:`acp_adapter.mcp.trust`)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise McpConfigError(f"server name {name!r:.80}: use 1-64 letters, digits, '_', '.', '-'")
    from acp_adapter.mcp.names import server_name_problem

    problem = server_name_problem(name)
    if problem:
        raise McpConfigError(problem)
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{name}: expected an object")
    meta = trusted_meta(_check_keys(name, entry))
    if "url" in entry:
        kind = entry.get("type", "http")
        if kind not in (*_HTTP_TYPES, "sse"):
            raise McpConfigError(
                f"{name}: the transport {str(kind)[:40]!r} is not supported (use 'http' or 'sse')"
            )
        url = _string(entry["url"], f"{name}.url")
        if not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{name}.url: must start with http:// or https://")
        headers = [HttpHeader(name=k, value=v) for k, v in _pairs(entry.get("headers"), f"{name}.headers")]
        if kind == "sse":
            return SseMcpServer(name=name, url=url, headers=headers, type="sse", field_meta=meta)
        return HttpMcpServer(name=name, url=url, headers=headers, type="http", field_meta=meta)
    if "command" not in entry:
        raise McpConfigError(f"{name}: needs 'command' (stdio) or 'url' (http)")
    command = _string(entry["command"], f"{name}.command")
    if not command:
        raise McpConfigError(f"{name}.command: empty")
    raw_args = entry.get("args", [])
    if not isinstance(raw_args, list) or len(raw_args) > MAX_ARGS:
        raise McpConfigError(f"{name}.args: expected a list of at most {MAX_ARGS} strings")
    args = [_string(a, f"{name}.args[{i}]") for i, a in enumerate(raw_args)]
    env = [EnvVariable(name=k, value=v) for k, v in _pairs(entry.get("env"), f"{name}.env")]
    return McpServerStdio(name=name, command=command, args=args, env=env, field_meta=meta)


def parse_common_form(document: object) -> list[McpServerSpec]:
    """Parse ``{"mcpServers": {...}}``; every mistake is reported at once."""
    if not isinstance(document, Mapping) or not isinstance(document.get("mcpServers"), Mapping):
        raise McpConfigError('expected {"mcpServers": {"NAME": {...}}}')
    return parse_servers(document["mcpServers"])


def parse_servers(servers: Mapping[Any, Any], where: str = "") -> list[McpServerSpec]:
    """Parse ``{"NAME": {...}}`` (the ``mcpServers`` object, or the settings file's
    ``[mcp_servers]`` table); every mistake is reported at once, each prefixed with ``where``."""
    if len(servers) > MAX_SERVERS:
        raise McpConfigError(f"{where}more than {MAX_SERVERS} servers")
    specs: list[McpServerSpec] = []
    errors: list[str] = []
    for name, entry in servers.items():
        try:
            specs.append(parse_entry(name, entry))
        except McpConfigError as exc:
            errors.append(f"{where}{exc}")
    from acp_adapter.mcp.names import servers_problems

    errors += [f"{where}{problem}" for problem in servers_problems([spec.name for spec in specs])]
    if errors:
        raise McpConfigError("; ".join(errors))
    return specs


def servers_from_settings_file(environ: Mapping[str, str] | None = None) -> list[McpServerSpec]:
    """The settings file's ``[mcp_servers.NAME]`` tables (``command``/``args``/``env`` or
    ``url``/``headers``, as in the common form); none when there is no file or no table."""
    from acp_adapter._config_file import ConfigFileError, config_file_path, read_config_table

    path = config_file_path(environ)
    try:
        table = read_config_table(path, "mcp_servers")
    except ConfigFileError as exc:
        raise McpConfigError(str(exc)) from None
    if table is None:
        return []
    if not isinstance(table, Mapping):
        raise McpConfigError(f"{path}: [mcp_servers] must be a table of servers")
    return parse_servers(table, f"{path}: [mcp_servers] ")


def frontend_servers(
    mcp_config: str | None = None, environ: Mapping[str, str] | None = None
) -> list[McpServerSpec]:
    """The MCP servers a front-end sends in ``session/new``: the settings file's, then those of
    ``--mcp-config FILE`` (a server named in both is the file's: the command line is nearer)."""
    specs = {spec.name: spec for spec in servers_from_settings_file(environ)}
    if mcp_config:
        specs.update((spec.name, spec) for spec in load_mcp_config(mcp_config))
    if len(specs) > MAX_SERVERS:
        raise McpConfigError(f"more than {MAX_SERVERS} MCP servers in the settings file and --mcp-config")
    return list(specs.values())


def session_server_problems(servers: Sequence[object]) -> list[str]:
    """Why the ``mcpServers`` of a ``session/new`` (``load``, ``resume``) cannot be used as given:
    a transport the agent does not speak (it would be ignored), or server names whose tool names
    could be mistaken for each other. Empty when all is well."""
    from acp_adapter.mcp.names import servers_problems

    problems: list[str] = []
    for spec in servers:
        if not isinstance(spec, McpServerStdio | HttpMcpServer | SseMcpServer):
            kind = str(getattr(spec, "type", None) or type(spec).__name__)[:40]
            name = str(getattr(spec, "name", "?"))[:80]
            problems.append(
                f"MCP server {name!r}: the {kind!r} transport is not supported (use stdio, http or sse)"
            )
    problems += servers_problems(server_names(list(servers)))
    return problems


def server_names(servers: object) -> list[str]:
    """Names of the SDK server models in an ACP ``mcpServers`` list (what a stored session keeps)."""
    if not isinstance(servers, list):
        return []
    return [s.name for s in servers if isinstance(s, McpServerStdio | HttpMcpServer | SseMcpServer)]


MAX_FILE_BYTES = 1 << 20


def load_mcp_config(path: str) -> list[McpServerSpec]:
    """Read ``--mcp-config FILE``: a regular JSON file of at most 1 MiB in the common form."""
    import json
    import os
    import stat

    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is then refused below
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise McpConfigError(f"{path}: not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
    except IsADirectoryError:
        raise McpConfigError(f"{path}: not a regular file") from None
    except OSError as exc:
        raise McpConfigError(f"{path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise McpConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise McpConfigError(f"{path}: not valid JSON ({str(exc)[:80]})") from None
    return parse_common_form(document)
