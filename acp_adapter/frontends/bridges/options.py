"""What one bridge instance runs with besides its instance settings: :class:`BridgeOptions`.

``acp-progress bridge run`` (or an embedder) fills one frozen :class:`BridgeOptions` and hands it
to :class:`~.runner.BridgeRunner` with the instance; a new option is one field here, not a keyword
threaded through every caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from acp_adapter.client.supervisor import RestartPolicy
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.delivery import COALESCE_WINDOW, PLACEHOLDER_DELAY
from acp_adapter.frontends.bridges.queue import DEFAULT_SOFT_BOUND
from acp_adapter.frontends.bridges.state import BridgeState
from acp_adapter.mcp.config import McpServerSpec
from acp_adapter.summary import Clock, SummaryFactory
from acp_adapter.tooling.presentation import PresentationRegistry

PERMISSION_TIMEOUT: Final = 120.0
"""Seconds a person has to answer a permission prompt before it is denied."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BridgeOptions:
    """How one bridge instance runs; every field has a working default.

    ``agent_env`` is merged over this process's environment for the agent (the agent is asked not
    to write its own summary unless it says otherwise). ``clock`` times edits and waits (a fake in
    tests); ``window`` is the least time between two edits of one message (coalescing), and
    ``soft_bound`` how many events a chat's queue holds before it coalesces older progress.
    ``permission_timeout`` is how long a person has to answer a permission prompt. ``registry``
    presents tools (default: the built-in presenters). ``stderr_log`` receives the agent's stderr.
    ``config`` overrides the progress settings resolved from the instance. ``summary`` makes each
    turn's progress summary (None: no summaries and no placeholder line);
    ``placeholder_delay`` is how long a turn waits for its first summary before a placeholder shows,
    and ``summary_clock`` paces the summaries (default: the event loop's clock). ``mcp_servers`` are
    sent in every ``session/new`` and ``session/load``. ``state`` keeps chat sessions, inbox and
    outbox across restarts (None: nothing survives one). ``restart`` bounds how often a dead agent
    is restarted.
    """

    agent_env: Mapping[str, str] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic
    window: float = COALESCE_WINDOW
    soft_bound: int = DEFAULT_SOFT_BOUND
    permission_timeout: float = PERMISSION_TIMEOUT
    registry: PresentationRegistry | None = None
    stderr_log: str | None = None
    config: ProgressConfig | None = None
    summary: SummaryFactory | None = None
    placeholder_delay: float = PLACEHOLDER_DELAY
    summary_clock: Clock | None = None
    mcp_servers: Sequence[McpServerSpec] = ()
    state: BridgeState | None = None
    restart: RestartPolicy | None = None
