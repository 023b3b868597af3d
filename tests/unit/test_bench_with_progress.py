"""scripts/bench_with_progress.py still runs end to end and prints its figures (tiny sizes: the
figures mean nothing here, the baselines and both comparisons being measured is what is checked).
The script runs inside the test's process as ``python scripts/bench_with_progress.py`` would run it;
the agents it measures are real processes."""

from __future__ import annotations

import re

import pytest

from tests.helpers.script_inside import run_script_inside

pytestmark = pytest.mark.e2e


@pytest.mark.benchmark
def test_the_with_progress_benchmark_measures_latency_throughput_and_time_to_the_card() -> None:
    args = ["--rounds", "1", "--runs", "4", "--paced", "20", "--burst", "100", "--idle", "0.01"]
    stdout = run_script_inside("bench_with_progress.py", *args)
    ratios = [float(x) for x in re.findall(r"ratio\s+([0-9.]+)x bare", stdout)]
    assert len(ratios) == 2 and all(r > 0 for r in ratios), stdout
    assert "with_progress(SDK agent), our card" in stdout
    assert re.search(r"wrapped vs our own agent: ratio of medians [0-9.]+x", stdout), stdout
