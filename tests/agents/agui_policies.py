"""Host redaction policies the AG-UI tests load by name (``--redact tests.agents.agui_policies:NAME``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_adapter.frontends.agui.policy import default_policy


def counts_only(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """An example host policy: publish progress counts, withhold progress messages."""
    if kind == "tool_progress":
        return {key: value for key, value in payload.items() if key in ("value", "total")}
    return default_policy(kind, payload)


def broken(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """A policy with a bug: the endpoint must withhold the value (fail closed) and go on."""
    raise RuntimeError("policy bug")
