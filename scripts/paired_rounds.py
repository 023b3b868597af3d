"""The statistic the benchmarks report for a path against its baseline on these noisy machines.

Each benchmark runs its paths in alternating rounds, a round of each back to back, so the ratio of
two paths *within* a round is free of the drift in the machine's load *between* rounds. Their
median over the rounds, with the lowest and highest, is the figure a closing note quotes.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import NamedTuple


class RoundRatios(NamedTuple):
    median: float
    low: float
    high: float

    def spread(self) -> str:
        return f"rounds {self.low:.2f}–{self.high:.2f}"


def round_ratios(ours: Sequence[float], baseline: Sequence[float]) -> RoundRatios:
    """``ours[i] / baseline[i]`` for each round ``i``: their median, lowest and highest."""
    shares = sorted(o / b for o, b in zip(ours, baseline, strict=True))
    return RoundRatios(statistics.median(shares), shares[0], shares[-1])


def round_medians(samples: Sequence[float], per_round: int) -> list[float]:
    """The median of each round's samples (``per_round`` consecutive ones)."""
    return [statistics.median(samples[i : i + per_round]) for i in range(0, len(samples), per_round)]
