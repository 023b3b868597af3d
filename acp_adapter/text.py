"""Human-readable durations for spinner cards and terminal lines.

Kept separate (and pure) because the ACP cards, the terminal printer and the watch client must all
say "1m 0s" the same way.
"""

from __future__ import annotations

__all__ = ["format_elapsed"]


def format_elapsed(seconds: float) -> str:
    """Format a duration the way a person reads a stopwatch.

    Sub-10-second values keep one decimal so fast heartbeats (tests, keep-alives) still move;
    longer ones are whole seconds, then ``1m 0s`` and ``1h 2m 3s``.
    """
    if seconds != seconds or seconds < 0:  # NaN or negative clock skew: never print nonsense
        seconds = 0.0
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m {secs}s"
