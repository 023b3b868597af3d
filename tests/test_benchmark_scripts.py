"""The benchmark scripts the closing notes quote still run and print the figures they promise.

Each runs as a real process with tiny sizes (the figures are meaningless at that size; whether the
script runs end to end, with its baselines and both modes, is what is checked), plus the statistic
they share.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from paired_rounds import round_medians, round_ratios  # noqa: E402


def run_script(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_round_ratios_pair_rounds_and_report_their_median_and_spread() -> None:
    shares = round_ratios([2.0, 3.0, 8.0], [1.0, 2.0, 2.0])
    assert (shares.median, shares.low, shares.high) == (2.0, 1.5, 4.0)
    assert shares.spread() == "rounds 1.50–4.00"
    with pytest.raises(ValueError):
        round_ratios([1.0], [1.0, 2.0])  # rounds that do not pair up are a mistake, not a figure
    assert round_medians([1.0, 9.0, 5.0, 2.0, 4.0, 3.0], 3) == [5.0, 3.0]


@pytest.mark.slow
def test_spinner_benchmark_reports_both_modes_against_both_baselines() -> None:
    out = run_script("bench_spinner_latency.py", "--runs", "4", "--rounds", "2", "--idle", "0.005")
    assert re.search(r"^after idle \(5 ms between prompts\): 4 prompts per side", out, re.M), out
    assert re.search(r"^back to back: 4 prompts per side", out, re.M), out
    # each mode compares with the bare agent and with the bare agent of our turn's shape
    assert len(re.findall(r"vs bare SDK: ratio of medians \d+\.\d\dx", out)) == 2, out
    assert len(re.findall(r"vs bare SDK with a worker-thread turn: .* \(rounds \d", out)) == 2, out
    # our agent with its session store on and off, side by side, and the store's cost as a ratio
    assert len(re.findall(r"think card, store on : median", out)) == 2, out
    assert len(re.findall(r"store on vs store off: ratio of medians \d+\.\d\dx", out)) == 2, out


def test_tool_progress_benchmark_reports_both_baselines() -> None:
    out = run_script(
        "bench_tool_progress.py",
        "--latency-runs",
        "6",
        "--burst",
        "90",
        "--rounds",
        "3",
        "--slow-reports",
        "300",
    )
    assert "3 alternating rounds of 30 updates per path" in out, out
    # the same path with the session store recording, and the store's cost as a ratio
    assert re.search(r"store on vs store off: latency \d+\.\d\dx, throughput \d+\.\d\dx", out), out
    slow = re.search(r"slow client .*: tool took \d+ ms vs \d+ ms with an instant client \((\d+\.\d\d)x", out)
    assert slow is not None, out
    delivered = re.search(r"delivered (\d+) of 300", out)
    assert delivered is not None and 1 <= int(delivered.group(1)) <= 300, out
    for name in ("small update", "same update "):
        assert re.search(rf"vs bare SDK, {name}: latency \d+\.\d\dx, throughput \d+\.\d\dx", out), out
    assert re.search(r"the SDK alone, same update vs small update: throughput \d+\.\d\dx", out), out


def test_bench_sessions_reports_size_and_load_time_against_the_sdk() -> None:
    out = run_script("bench_sessions.py", "--turns", "10", "--rounds", "1")
    assert re.search(r"session of 10 turns: 50 stored entries, 51 updates replayed", out), out
    size = re.search(r"database size: (\d+) KiB, (\d+) KiB per 100 turns", out)
    assert size is not None and int(size.group(1)) > 0, out
    assert re.search(r"load / bare SDK: \d+\.\d\dx", out), out
