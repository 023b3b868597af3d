"""scripts/bench_mcp_progress.py runs and measures both paths and the bare SDK in one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_mcp_progress_benchmark_measures_mcp_builtin_and_the_bare_sdk(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    script = str(ROOT / "scripts/bench_mcp_progress.py")
    done = subprocess.run(
        [sys.executable, script, "--rounds", "1", "--steps", "4", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["mcp_samples"] >= 1 and figures["builtin_samples"] >= 1
    assert min(figures["mcp_median_ms"], figures["builtin_median_ms"], figures["raw_sdk_median_ms"]) > 0
    # the medians are written rounded to 3 decimals and the ratio to 2, from the unrounded
    # medians: a ratio of a sub-millisecond median may move by more than its own rounding
    mcp, builtin, half = figures["mcp_median_ms"], figures["builtin_median_ms"], 0.0005
    lowest, highest = (mcp - half) / (builtin + half), (mcp + half) / max(builtin - half, 1e-9)
    assert lowest - 0.005 <= figures["ratio"] <= highest + 0.005, figures
    assert "ratio MCP / built-in" in done.stdout


def test_the_answer_memory_benchmark_measures_a_cut_off_answer_against_a_small_one(tmp_path: Path) -> None:
    out = tmp_path / "memory.json"
    script = str(ROOT / "scripts/bench_mcp_answer_memory.py")
    args = ["--mb", "4", "--limit", str(1 << 20), "--modes", "json,sse", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, script, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [row["mode"] for row in rows] == ["json", "sse"]
    for row in rows:
        assert (
            row["call"] == "failed" and "larger than the 1 MiB limit" in row["said"] and row["still_serving"]
        )
        assert row["peak_mib"] >= row["baseline_peak_mib"] > 0
        assert row["ratio"] == round(row["peak_mib"] / row["baseline_peak_mib"], 2)
