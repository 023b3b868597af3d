"""acp-progress: make an ACP agent visibly alive in every client that talks to it.

The public API, for agent developers (everything else is internal and may change):

* :class:`ProgressTurn` — one prompt turn: hands out the progress, thinking, message and usage
  callbacks and the tool observer over one ordered path, and always ends the turn (sync and async
  context manager).
* :func:`make_agent_progress_cb`, :func:`make_thinking_cb`, :func:`make_message_cb` — the plain
  callback factories ``(conn, session_id, loop)``, on the same per-session stream.
* :class:`ProgressAgent` and :func:`serve` — this package's own ACP agent, on ``acp.run_agent``.
* :func:`with_progress` — wrap any agent built on the ACP Python SDK (or pydantic-acp) so it shows
  a think card while it is silent, in process: ``acp.run_agent(with_progress(MyAgent()))``.
* :class:`Settings` — the validated configuration; :func:`redact_text` — the canonical redactor;
  the pure update builders ``build_thinking_*`` / ``build_tool_*``.

Names are imported on first use (PEP 562), so ``import acp_adapter`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS: dict[str, str] = {
    "ProgressTurn": "agent.turn",
    "AgentProgressCallback": "agent.turn",
    "make_agent_progress_cb": "events",
    "make_thinking_cb": "events",
    "make_message_cb": "events",
    "SessionStream": "agent.turn_state",
    "UpdateOutbox": "agent.outbox",
    "AnyUpdate": "agent.outbox",
    "ProgressAgent": "server",
    "serve": "server",
    "Settings": "config",
    "ConfigError": "config",
    "CancelToken": "cancel",
    "redact_text": "safety.redact",
    "build_thinking_start": "tools",
    "build_thinking_progress": "tools",
    "build_thinking_complete": "tools",
    "build_thinking_failed": "tools",
    "build_tool_start": "tools",
    "build_tool_progress": "tools",
    "build_tool_complete": "tools",
    "build_tool_failed": "tools",
    "with_progress": "frontends.with_progress",
}

__all__ = [
    "AgentProgressCallback",
    "AnyUpdate",
    "CancelToken",
    "ConfigError",
    "ProgressAgent",
    "ProgressTurn",
    "SessionStream",
    "Settings",
    "UpdateOutbox",
    "__version__",
    "build_thinking_complete",
    "build_thinking_failed",
    "build_thinking_progress",
    "build_thinking_start",
    "build_tool_complete",
    "build_tool_failed",
    "build_tool_progress",
    "build_tool_start",
    "make_agent_progress_cb",
    "make_message_cb",
    "make_thinking_cb",
    "redact_text",
    "serve",
    "with_progress",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'acp_adapter' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from acp_adapter.agent.outbox import AnyUpdate, UpdateOutbox
    from acp_adapter.agent.turn import AgentProgressCallback, ProgressTurn
    from acp_adapter.agent.turn_state import SessionStream
    from acp_adapter.cancel import CancelToken
    from acp_adapter.config import ConfigError, Settings
    from acp_adapter.events import make_agent_progress_cb, make_message_cb, make_thinking_cb
    from acp_adapter.frontends.with_progress import with_progress
    from acp_adapter.safety.redact import redact_text
    from acp_adapter.server import ProgressAgent, serve
    from acp_adapter.tools import (
        build_thinking_complete,
        build_thinking_failed,
        build_thinking_progress,
        build_thinking_start,
        build_tool_complete,
        build_tool_failed,
        build_tool_progress,
        build_tool_start,
    )
