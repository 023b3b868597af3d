"""How much the AG-UI endpoint takes: body size and time, runs at once, id lengths, queued events.

The values come from :class:`~acp_adapter.config.AguiSettings` (``ACP_PROGRESS_AGUI_*`` and the
``acp-progress agui`` flags); :class:`EndpointLimits` is what :class:`~.endpoint.AguiOptions` holds, so an
embedder sets them without the settings model. Connection-level limits (connections at once, the
time a request's headers may take) live in :mod:`.connections`, which guards uvicorn's protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from acp_adapter.config import AguiSettings

#: The settings' defaults are the limits' defaults (one place to change them).
_DEFAULTS: Final = AguiSettings()
DEFAULT_BODY_TIMEOUT: Final = _DEFAULTS.body_timeout
DEFAULT_MAX_BODY_BYTES: Final = _DEFAULTS.max_body_bytes
DEFAULT_MAX_RUNS: Final = _DEFAULTS.max_runs
DEFAULT_MAX_ID_LENGTH: Final = _DEFAULTS.max_id_length
#: Events a run may have queued for a reader that is behind; beyond it activity snapshots replace
#: their queued predecessor and the agent's update stream waits (see :mod:`.run`).
DEFAULT_MAX_QUEUED_EVENTS: Final = _DEFAULTS.max_queued_events
#: Seconds a 503 asks the client to wait (``Retry-After``).
RETRY_AFTER: Final = 1


@dataclass(frozen=True)
class EndpointLimits:
    """The per-request and per-run bounds of one endpoint (defaults as documented in the README)."""

    body_timeout: float = DEFAULT_BODY_TIMEOUT
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_runs: int = DEFAULT_MAX_RUNS
    max_id_length: int = DEFAULT_MAX_ID_LENGTH
    max_queued_events: int = DEFAULT_MAX_QUEUED_EVENTS

    @classmethod
    def from_settings(cls, settings: AguiSettings) -> EndpointLimits:
        return cls(
            body_timeout=settings.body_timeout,
            max_body_bytes=settings.max_body_bytes,
            max_runs=settings.max_runs,
            max_id_length=settings.max_id_length,
            max_queued_events=settings.max_queued_events,
        )
