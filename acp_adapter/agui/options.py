"""Whether a run publishes tool progress: off by default, on globally, overridden per run.

Seed 001: the global switch (``--tool-progress`` / ``ACP_PROGRESS_AGUI_TOOL_PROGRESS=1``) is the
default; ``forwardedProps.emitToolProgress`` of one run overrides it either way (``true`` enables,
``false`` disables a global opt-in). Any other value of that key is a client error, reported as such
rather than guessed at.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ENV_TOOL_PROGRESS",
    "FORWARDED_PROP",
    "ToolProgressOptionError",
    "global_tool_progress",
    "run_tool_progress",
]

ENV_TOOL_PROGRESS: Final = "ACP_PROGRESS_AGUI_TOOL_PROGRESS"
FORWARDED_PROP: Final = "emitToolProgress"
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_FALSE: Final = frozenset({"", "0", "false", "no", "off"})


class ToolProgressOptionError(ValueError):
    """A value for the progress switch that is neither true nor false."""


def global_tool_progress(environ: Mapping[str, str] | None = None) -> bool:
    """The global opt-in from the environment (default off)."""
    raw = (os.environ if environ is None else environ).get(ENV_TOOL_PROGRESS, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ToolProgressOptionError(f"{ENV_TOOL_PROGRESS}: expected 1 or 0, got {raw!r}")


def run_tool_progress(global_default: bool, forwarded_props: Any) -> bool:
    """The setting for one run: ``forwardedProps.emitToolProgress`` when given, else the global one."""
    if not isinstance(forwarded_props, Mapping) or FORWARDED_PROP not in forwarded_props:
        return global_default
    value = forwarded_props[FORWARDED_PROP]
    if value is None:
        return global_default
    if not isinstance(value, bool):
        raise ToolProgressOptionError(
            f"forwardedProps.{FORWARDED_PROP} must be true or false, got {type(value).__name__} {value!r}"[
                :200
            ]
        )
    return value
