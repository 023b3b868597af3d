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
    expected = figures["mcp_median_ms"] / figures["builtin_median_ms"]
    assert figures["ratio"] == pytest.approx(expected, abs=0.02)
    assert "ratio MCP / built-in" in done.stdout
