"""The counters of one summary capability, shared by the parts that schedule, run and publish its
generations (tests and the benchmark read them to check the cadence and the abort rules)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SummaryStats:
    """Counters of one capability (tests and the benchmark read them)."""

    generations: int = 0  # generator calls started
    emitted: int = 0  # new revisions
    suppressed: int = 0  # results equal to the current summary
    empty: int = 0  # results with no text
    skipped_ticks: int = 0  # cadence ticks that found a generation pending
    errors: int = 0  # raised, refused template, or timed out
    timeouts: int = 0
    aborted: int = 0  # in flight when the turn ended
    dropped: int = 0  # results that arrived after they stopped mattering
