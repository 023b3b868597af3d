"""scripts/bench_with_progress.py still runs end to end and prints its figures (tiny sizes: the
figures mean nothing here, the baselines and both comparisons being measured is what is checked)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.benchmark
def test_the_with_progress_benchmark_measures_latency_throughput_and_time_to_the_card() -> None:
    args = ["--rounds", "1", "--runs", "4", "--paced", "20", "--burst", "100", "--idle", "0.01"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_with_progress.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    ratios = [float(x) for x in re.findall(r"ratio\s+([0-9.]+)x bare", done.stdout)]
    assert len(ratios) == 2 and all(r > 0 for r in ratios), done.stdout
    assert "with_progress(SDK agent), our card" in done.stdout
    assert re.search(r"wrapped vs our own agent: ratio of medians [0-9.]+x", done.stdout), done.stdout
