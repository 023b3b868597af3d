"""Model-facing names of MCP tools: ``mcp__<server>__<tool>``.

OpenAI function names allow only ``[A-Za-z0-9_-]`` and at most 64 characters,
and a hostile server may send escapes, spaces or thousands of tools; so every
name is sanitized, made unique, and at most ``MAX_TOOLS_PER_SERVER`` are kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_TOOLS_PER_SERVER = 1000
MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]+")


def _clean(part: str) -> str:
    return _BAD.sub("_", part).strip("_") or "x"


def tool_name(server: str, tool: str) -> str:
    """``mcp__server__tool`` in the OpenAI charset; long names end in a short hash of the original."""
    name = f"mcp__{_clean(server)}__{_clean(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def offered_names(server: str, tools: Iterable[str]) -> tuple[dict[str, str], int]:
    """Map model-facing names to the server's tool names; returns (mapping, number dropped).

    Tools past the limit, and later tools whose sanitized name collides with an
    earlier one, are dropped so a model call always reaches one definite tool.
    """
    mapping: dict[str, str] = {}
    dropped = 0
    for tool in tools:
        if len(mapping) >= MAX_TOOLS_PER_SERVER:
            dropped += 1
            continue
        name = tool_name(server, tool)
        if name in mapping:
            dropped += 1
            continue
        mapping[name] = tool
    return mapping, dropped
