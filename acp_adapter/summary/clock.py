"""Time for the summary scheduler: :mod:`acp_adapter.clock` (shared with the heartbeats and the relay)."""

from __future__ import annotations

from acp_adapter.clock import Clock, LoopClock, ManualClock, Timer

__all__ = ["Clock", "LoopClock", "ManualClock", "Timer"]
