"""Which MCP servers the person trusts: only their tool annotations decide anything.

A server describes its own tools (``readOnlyHint``, ``destructiveHint`` …), and the MCP
specification says a client must treat annotations from an untrusted server as untrusted: a tool
that says it only reads may write files or run commands. So annotations decide what runs unasked
only for a server the person marked trusted — ``"trusted": true`` in its ``--mcp-config`` entry or
``trusted = true`` in the settings file's ``[mcp_servers.NAME]`` table. A front-end sends that mark
to the agent in the server's ``_meta.acpProgress.trusted`` of ``session/new`` (the client is the
person's side of the connection: it answers the permission questions too). An editor that sends
no such mark gets it from the agent's own settings file: a server it passes that the file lists
as trusted — the same name *and* the same command and arguments, or the same URL, so a name alone
never borrows the trust — is trusted (:func:`with_settings_trust`). Every other server's tools
ask before they run, and the ``read-only`` mode runs none of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp_adapter.protocol.meta import META_KEY, read_meta

__all__ = ["TRUSTED_KEY", "is_trusted", "trusted_meta", "with_settings_trust"]

#: The key of a server entry (``--mcp-config``, the settings file) that marks it trusted.
TRUSTED_KEY = "trusted"


def trusted_meta(trusted: bool) -> dict[str, Any] | None:
    """The ``_meta`` of a server entry in ``session/new``: the mark, or none for an untrusted one."""
    return {META_KEY: {TRUSTED_KEY: True}} if trusted else None


def is_trusted(spec: Any) -> bool:
    """True only when the server's entry carries ``_meta.acpProgress.trusted: true``."""
    meta = read_meta(getattr(spec, "field_meta", None))
    return meta is not None and meta.trusted is True


def _same_server(passed: Any, listed: Any) -> bool:
    """The same name and the same program (command and arguments) or the same URL."""
    if getattr(passed, "name", None) != getattr(listed, "name", None):
        return False
    if getattr(listed, "url", None) is not None:
        return bool(getattr(passed, "url", None) == listed.url)
    command = getattr(listed, "command", None)
    same_program = getattr(passed, "command", None) == command
    return command is not None and same_program and list(getattr(passed, "args", [])) == list(listed.args)


def with_settings_trust(specs: Sequence[Any], listed: Sequence[Any]) -> list[Any]:
    """``specs`` (as the client passed them), each one ``listed`` (the settings file's servers)
    marks trusted carrying the mark; the others as they are."""
    trusted = [spec for spec in listed if is_trusted(spec)]
    out: list[Any] = []
    for spec in specs:
        if not is_trusted(spec) and any(_same_server(spec, t) for t in trusted):
            meta = dict(spec.field_meta or {})
            meta.update(trusted_meta(True) or {})
            spec = spec.model_copy(update={"field_meta": meta})
        out.append(spec)
    return out
