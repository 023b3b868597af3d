"""Which MCP servers the person trusts: only their tool annotations decide anything.

A server describes its own tools (``readOnlyHint``, ``destructiveHint`` …), and the MCP
specification says a client must treat annotations from an untrusted server as untrusted: a tool
that says it only reads may write files or run commands. So annotations decide what runs unasked
only for a server the person marked trusted — ``"trusted": true`` in its ``--mcp-config`` entry or
``trusted = true`` in the settings file's ``[mcp_servers.NAME]`` table. A front-end sends that mark
to the agent in the server's ``_meta.acpProgress.trusted`` of ``session/new`` (the client is the
person's side of the connection: it answers the permission questions too). Every other server's
tools ask before they run, and the ``read-only`` mode runs none of them.
"""

from __future__ import annotations

from typing import Any

from acp_adapter.protocol.meta import META_KEY, read_meta

__all__ = ["TRUSTED_KEY", "is_trusted", "trusted_meta"]

#: The key of a server entry (``--mcp-config``, the settings file) that marks it trusted.
TRUSTED_KEY = "trusted"


def trusted_meta(trusted: bool) -> dict[str, Any] | None:
    """The ``_meta`` of a server entry in ``session/new``: the mark, or none for an untrusted one."""
    return {META_KEY: {TRUSTED_KEY: True}} if trusted else None


def is_trusted(spec: Any) -> bool:
    """True only when the server's entry carries ``_meta.acpProgress.trusted: true``."""
    meta = read_meta(getattr(spec, "field_meta", None))
    return meta is not None and meta.trusted is True
