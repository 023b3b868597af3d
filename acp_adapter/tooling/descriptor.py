"""``acp-progress descriptor``: check a tool presentation descriptor file as the README shows it.

Why this exists: the command accepted any table and read ``friendly_verb``/``preview`` from its top
level, so the README's own manifest form (``[resources.tools.issue_lookup]``) was silently ignored
(``🧰 tool`` instead of ``⚙️ Looking up BUG-456``, and ``arg:api_key`` passed), misspelled keys and
empty files passed too. Exactly two forms are accepted, closed-schema:

* an extension manifest (TOML, or the same shape in JSON)::

      [resources.tools.issue_lookup]
      friendly_verb = "Looking up"
      preview = "arg:issueKey"

* an MCP tool object (JSON) whose ``_meta`` holds ``agh/friendly_verb`` / ``agh/preview``; the
  MCP tool fields (``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema``,
  ``annotations``) may be there too, and ``_meta`` keys of other namespaces are left alone.

Unknown keys and empty descriptors are errors naming the field; the values are checked by
:mod:`acp_adapter.tooling.presentation`, exactly as the agent checks them. A bad ``--input`` is reported
as the input's fault, not the descriptor's.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text
from acp_adapter.tooling.presentation import (
    MCP_PREVIEW_KEY,
    MCP_VERB_KEY,
    DescriptorError,
    ToolPresentation,
    parse_extension_descriptor,
    parse_mcp_meta,
    render_label,
    render_line,
)

MCP_TOOL_FIELDS = frozenset(
    {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"}
)
FORMS = "expected [resources.tools.<id>] (manifest) or an MCP tool with _meta"
ENTRY_KEYS = frozenset({"friendly_verb", "preview"})
OUR_META_PREFIX = MCP_VERB_KEY.split("/", 1)[0] + "/"


class InputError(AcpProgressError, ValueError):
    """The file or ``--input`` cannot be read (not a descriptor problem)."""


def _unknown(keys: Any, allowed: frozenset[str], where: str) -> None:
    extra = sorted(str(k) for k in keys if k not in allowed)
    if extra:
        raise DescriptorError(
            f"{where}{extra[0]}", f"unknown key (expected one of {', '.join(sorted(allowed))})"
        )


def _manifest(data: Mapping[str, Any]) -> dict[str, ToolPresentation]:
    _unknown(data, frozenset({"resources"}), "")
    resources = data["resources"]
    if not isinstance(resources, Mapping):
        raise DescriptorError("resources", "must be a table")
    _unknown(resources, frozenset({"tools"}), "resources.")
    tools = resources.get("tools")
    if not isinstance(tools, Mapping) or not tools:
        raise DescriptorError("resources.tools", "must be a table of tools, e.g. [resources.tools.my_tool]")
    out: dict[str, ToolPresentation] = {}
    for tool_id, entry in tools.items():
        where = f"resources.tools.{tool_id}"
        if not isinstance(entry, Mapping):
            raise DescriptorError(where, "must be a table")
        _unknown(entry, ENTRY_KEYS, where + ".")
        try:
            presentation = parse_extension_descriptor(entry)
        except DescriptorError as exc:
            raise DescriptorError(f"{where}.{exc.field}", exc.problem) from None
        if presentation is None:
            raise DescriptorError(where, "empty descriptor: set friendly_verb and/or preview")
        out[str(tool_id)] = presentation
    return out


def _mcp_tool(data: Mapping[str, Any], tool_id: str | None) -> dict[str, ToolPresentation]:
    _unknown(data, MCP_TOOL_FIELDS, "")
    meta = data["_meta"]
    if not isinstance(meta, Mapping):
        raise DescriptorError("_meta", "must be an object")
    ours = [k for k in meta if isinstance(k, str) and k.startswith(OUR_META_PREFIX)]
    _unknown(ours, frozenset({MCP_VERB_KEY, MCP_PREVIEW_KEY}), "_meta.")
    presentation = parse_mcp_meta(meta)
    if presentation is None:
        raise DescriptorError("_meta", f"empty descriptor: set {MCP_VERB_KEY} and/or {MCP_PREVIEW_KEY}")
    name = data.get("name")
    return {tool_id or (name if isinstance(name, str) and name else "tool"): presentation}


def load_descriptors(path: str, tool_id: str | None = None) -> dict[str, ToolPresentation]:
    """The presentations a descriptor file declares, by tool id (raises InputError/DescriptorError).

    For an MCP tool the id is ``tool_id``, else its ``name``, else ``tool``; a manifest names its
    tools itself (``tool_id`` then picks one)."""
    try:
        raw = Path(path).read_bytes()
        text = raw.decode()
        data = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, Mapping) or not data:
        raise DescriptorError("(file)", f"empty: {FORMS}")
    if "_meta" in data:
        return _mcp_tool(data, tool_id)
    if "resources" in data:
        tools = _manifest(data)
        if tool_id is None:
            return tools
        if tool_id not in tools:
            raise InputError(
                f"--tool-id {tool_id!r} is not in {path} (it declares: {', '.join(sorted(tools))})"
            )
        return {tool_id: tools[tool_id]}
    first = sorted(str(k) for k in data)[0]
    raise DescriptorError(
        first, "unknown key: expected [resources.tools.<id>] (manifest) or an MCP tool with _meta"
    )


def check_file(path: str, tool_id: str | None, sample_input: str) -> list[str]:
    """The redacted line each declared tool renders for ``sample_input`` (``tool_id`` picks one)."""
    try:
        args = json.loads(sample_input)
    except ValueError as exc:
        raise InputError(f"--input is not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise InputError(f"--input must be a JSON object, got {type(args).__name__}")
    presentations = load_descriptors(path, tool_id)
    lines = []
    for name, presentation in presentations.items():
        label, preview = render_label(name, args, presentation)
        lines.append(redact_text(render_line(presentation, label, preview)))
    return lines
