"""Per-run switches: tool progress and progress summaries, each a global default a run overrides.

Tool progress: the global switch (``--tool-progress`` / ``ACP_PROGRESS_AGUI_TOOL_PROGRESS=1``) is the
default; ``forwardedProps.emitToolProgress`` of one run overrides it either way (``true`` enables,
``false`` disables a global opt-in). Any other value of that key is a client error, reported as such
rather than guessed at.

Permission questions as AG-UI interrupts (:mod:`.interrupts`) follow it too, with
``forwardedProps.permissionInterrupts`` over ``--permission-interrupts`` (default off: a client
that never resumes keeps getting the static policy's answer in the same run).

Progress summaries follow the same rule with ``forwardedProps.emitProgressSummary``
over the endpoint's summary setting (``--summary`` / ``ACP_PROGRESS_SUMMARY``), so a client that
renders no status line can opt out per run, and one that does can opt in on an endpoint that
keeps them off by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from acp_adapter.errors import AcpProgressError

FORWARDED_PROP: Final = "emitToolProgress"
SUMMARY_PROP: Final = "emitProgressSummary"
INTERRUPTS_PROP: Final = "permissionInterrupts"


class ForwardedSwitchError(AcpProgressError, ValueError):
    """A value for a per-run switch that is neither true nor false."""


class ToolProgressOptionError(ForwardedSwitchError):
    """A value for the progress switch that is neither true nor false."""


class PermissionInterruptsOptionError(ForwardedSwitchError):
    """A value for the permission-interrupts switch that is neither true nor false."""


class ProgressSummaryOptionError(ForwardedSwitchError):
    """A value for the progress-summary switch that is neither true nor false."""


def _run_switch(
    global_default: bool, forwarded_props: Any, key: str, error: type[ForwardedSwitchError]
) -> bool:
    if not isinstance(forwarded_props, Mapping) or key not in forwarded_props:
        return global_default
    value = forwarded_props[key]
    if value is None:
        return global_default
    if not isinstance(value, bool):
        raise error(f"forwardedProps.{key} must be true or false, got {type(value).__name__} {value!r}"[:200])
    return value


def run_tool_progress(global_default: bool, forwarded_props: Any) -> bool:
    """The setting for one run: ``forwardedProps.emitToolProgress`` when given, else the global one."""
    return _run_switch(global_default, forwarded_props, FORWARDED_PROP, ToolProgressOptionError)


def run_progress_summary(global_default: bool, forwarded_props: Any) -> bool:
    """Whether one run publishes summaries: ``forwardedProps.emitProgressSummary``, else the default."""
    return _run_switch(global_default, forwarded_props, SUMMARY_PROP, ProgressSummaryOptionError)


def run_permission_interrupts(global_default: bool, forwarded_props: Any) -> bool:
    """Whether one run's permission questions pause it as AG-UI interrupts
    (``forwardedProps.permissionInterrupts``, else ``--permission-interrupts``)."""
    return _run_switch(global_default, forwarded_props, INTERRUPTS_PROP, PermissionInterruptsOptionError)
