"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``.

OpenAI function names allow only ``[A-Za-z0-9_-]`` and at most 64 characters,
and a hostile server may send escapes, spaces or thousands of tools; so every
name is sanitized, made unique, and at most ``MAX_TOOLS_PER_SERVER`` are kept.
A name must also say which server a tool is on: server ``s`` tool ``a__b`` and
server ``s__a`` tool ``b`` would both be ``mcp__s__a__b``, so a server name that
holds the separator is refused (:func:`server_name_problem`), and a tool whose
name is still taken — by an earlier tool of its server or by another server's —
is left out and named in the notice, never silently shadowed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAX_TOOLS_PER_SERVER = 1000
MAX_NAME = 64
#: Between ``mcp``, the server and the tool in a model-facing name.
SEPARATOR = "__"
_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def _clean(part: str) -> str:
    return _BAD.sub("_", part).strip("_") or "x"


def server_part(server: str) -> str:
    """The server's part of its tools' names."""
    return _clean(server)


def server_name_problem(server: str) -> str | None:
    """Why ``server`` cannot name an MCP server (its part holds the separator), or None."""
    if SEPARATOR in server_part(server):
        return (
            f"MCP server name {server[:80]!r} contains '{SEPARATOR}' (or characters that become it): "
            f"tool names are mcp{SEPARATOR}<server>{SEPARATOR}<tool>, so its tools could not be told "
            "from another server's; rename the server"
        )
    return None


def servers_problems(names: Sequence[str]) -> list[str]:
    """Every reason the server names of one session cannot be used together: a separator in a
    name, or two names whose tools would have the same prefix."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for name in names:
        problem = server_name_problem(name)
        if problem:
            problems.append(problem)
            continue
        part = server_part(name)
        if part in seen:
            first = seen[part]
            why = (
                "is given twice"
                if first == name
                else f"and {first[:80]!r} both give tool names mcp__{part}__…"
            )
            problems.append(f"MCP server name {name[:80]!r} {why}")
        else:
            seen[part] = name
    return problems


def tool_name(server: str, tool: str) -> str:
    """``mcp__server__tool`` in the OpenAI charset; long names end in a short hash of the original."""
    name = f"mcp{SEPARATOR}{_clean(server)}{SEPARATOR}{_clean(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


@dataclass
class Offered:
    """One server's tools as offered: model-facing name → the server's tool name, and what was
    left out (tools past the limit; tools whose name another tool already has, with that tool)."""

    mapping: dict[str, str] = field(default_factory=dict)
    over_limit: int = 0
    #: (the tool left out, the tool that has its name: ``server/tool``)
    collided: list[tuple[str, str]] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return self.over_limit + len(self.collided)


def offered_names(server: str, tools: Iterable[str], taken: Mapping[str, str] | None = None) -> Offered:
    """Map model-facing names to the server's tool names.

    ``taken`` maps names other servers already offer to ``server/tool``. Tools past the limit,
    and tools whose sanitized name an earlier tool has, are left out so a model call always
    reaches one definite tool."""
    offered = Offered()
    taken = taken or {}
    for tool in tools:
        if len(offered.mapping) >= MAX_TOOLS_PER_SERVER:
            offered.over_limit += 1
            continue
        name = tool_name(server, tool)
        holder = f"{server}/{offered.mapping[name]}" if name in offered.mapping else taken.get(name)
        if holder is not None:
            offered.collided.append((tool, holder))
            continue
        offered.mapping[name] = tool
    return offered
