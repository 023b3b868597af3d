"""The benchmark scripts the closing notes quote still run and print the figures they promise.

Each runs end to end with tiny sizes (the figures are meaningless at that size; whether the script
runs, with its baselines and both modes, is what is checked), plus the statistic they share. The
script runs inside the test's process as ``python scripts/NAME`` would run it
(:func:`tests.helpers.script_inside.run_script_inside`); the agents and clients it measures are its
own real processes as ever.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.script_inside import SCRIPTS, run_script_inside

sys.path.insert(0, str(SCRIPTS))

from paired_rounds import round_medians, round_ratios


def test_round_ratios_pair_rounds_and_report_their_median_and_spread() -> None:
    shares = round_ratios([2.0, 3.0, 8.0], [1.0, 2.0, 2.0])
    assert (shares.median, shares.low, shares.high) == (2.0, 1.5, 4.0)
    assert shares.spread() == "rounds 1.50–4.00"
    with pytest.raises(ValueError):
        round_ratios([1.0], [1.0, 2.0])  # rounds that do not pair up are a mistake, not a figure
    assert round_medians([1.0, 9.0, 5.0, 2.0, 4.0, 3.0], 3) == [5.0, 3.0]


def figures_of(name: str, tmp_path: Path, *args: str) -> dict[str, Any]:
    """Run a benchmark with ``--json`` and return its figures (the printed report is for people)."""
    out = tmp_path / f"{name}.json"
    run_script_inside(name, *args, "--json", str(out))
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


@pytest.mark.e2e
@pytest.mark.benchmark
@pytest.mark.slow
def test_spinner_benchmark_measures_both_modes_against_both_baselines(tmp_path: Path) -> None:
    args = ("--runs", "4", "--rounds", "2", "--idle", "0.005", "--same-processes")
    figures = figures_of("bench_spinner_latency.py", tmp_path, *args)
    assert set(figures) == {"after_idle", "back_to_back"}
    for mode in figures.values():
        assert mode["prompts"] == 4
        # against the bare agent and the bare agent of our turn's shape, and the store's own cost
        for key in ("ours_median_ms", "vs_bare_sdk", "vs_bare_sdk_worker_thread", "store_on_vs_off"):
            assert positive(mode[key]), (key, mode)


@pytest.mark.e2e
@pytest.mark.benchmark
def test_tool_progress_benchmark_measures_both_baselines_and_a_slow_client(tmp_path: Path) -> None:
    # enough reports that the tool runs for tens of read intervals, so staleness is sampled
    args = ("--latency-runs", "6", "--burst", "90", "--rounds", "3", "--slow-reports", "10000")
    figures = figures_of("bench_tool_progress.py", tmp_path, *args)
    assert (figures["rounds"], figures["updates_per_round"], figures["reports"]) == (3, 30, 10000)
    for key in (
        "latency_vs_bare",
        "throughput_vs_bare",
        "latency_vs_same",
        "throughput_vs_same",
        "store_on_vs_off_throughput",
        "sdk_same_vs_small_throughput",
        "slow_client_tool_time_ratio",
    ):
        assert positive(figures[key]), (key, figures)
    # a slow client (1,000 lines/s) ends with the last value and the terminal update, and gets a
    # fraction of the values: the ones it had no time to read were replaced before they were sent
    assert figures["holding"] is True
    assert figures["ends_with_last_value_and_terminal"] is True
    assert 1 <= figures["delivered_median"] <= 1000
    # what it holds is fresh: measured about 0.7 read intervals (median), 1.5 (p95); without
    # holding 12 (median) at this size, growing with the tool's run (45 at 20,000 reports). The
    # bound leaves room for a loaded 2-core machine, not for values queued in the pipe.
    assert figures["staleness_samples"] >= 10, figures
    assert 0 <= figures["staleness_median_intervals"] <= 4, figures


@pytest.mark.e2e
@pytest.mark.benchmark
def test_bench_sessions_measures_size_and_load_time_against_the_sdk(tmp_path: Path) -> None:
    figures = figures_of("bench_sessions.py", tmp_path, "--turns", "10", "--rounds", "1")
    # five canonical entries a turn, and every one replayed (plus the session's title and the
    # agent's slash commands, available_commands_update after a load)
    assert (figures["stored_entries"], figures["replayed_updates"]) == (50, 52)
    assert positive(figures["database_kib"]) and positive(figures["load_ms"])
    assert figures["kib_per_100_turns"] == pytest.approx(figures["database_kib"] * 10)
    assert positive(figures["load_vs_bare_sdk"])


@pytest.mark.e2e
@pytest.mark.benchmark
def test_bench_sessions_against_postgres_and_agui_replicas(tmp_path: Path, pg_url: str) -> None:
    figures = figures_of(
        "bench_sessions.py", tmp_path, "--turns", "10", "--rounds", "1", "--store", "postgres",
        "--database-url", pg_url, "--agui", "--agui-threads", "2",
    )  # fmt: skip
    assert positive(figures["pg_load_ms"]) and positive(figures["pg_load_vs_sqlite"])
    assert positive(figures["pg_record_hot_s"]) and positive(figures["record_hot_s"])
    for scenario in (figures["agui"]["one_replica"], figures["agui"]["two_replicas"]):
        assert scenario["completed"] == scenario["runs"] == 4, scenario
        assert scenario["overlapping_runs_on_two_replicas"] == 0 and not scenario["other"], scenario
        assert scenario["refused_409"] + scenario["ran_twice"] == scenario["runs"], scenario
    assert len(figures["agui"]["two_replicas"]["served_per_replica"]) == 2


@pytest.mark.e2e
@pytest.mark.benchmark
def test_bench_fork_measures_fork_against_load_of_the_same_session(tmp_path: Path) -> None:
    figures = figures_of("bench_fork.py", tmp_path, "--turns", "10", "--rounds", "2")
    assert figures["replayed_updates"] == 52  # the session bench_sessions.py measures, replayed whole
    assert positive(figures["load_ms"]) and positive(figures["fork_ms"]) and positive(figures["fork_vs_load"])


@pytest.mark.e2e
@pytest.mark.benchmark
def test_startup_benchmark_measures_each_command_against_python_pass(tmp_path: Path) -> None:
    figures = figures_of("bench_startup.py", tmp_path, "--rounds", "1", "--only=--version")
    assert set(figures) == {"baseline", "--version"}
    assert positive(figures["baseline"]["median_s"])
    assert all(positive(v) for v in figures["--version"].values()), figures


@pytest.mark.e2e
@pytest.mark.benchmark
def test_cold_start_benchmark_measures_the_agent_against_a_bare_sdk_agent(tmp_path: Path) -> None:
    figures = figures_of("bench_cold_start.py", tmp_path, "--rounds", "1")
    assert figures["rounds"] == 1
    assert positive(figures["bare_median_ms"]) and positive(figures["ours_median_ms"])
    assert figures["ratio"] == pytest.approx(figures["ours_median_ms"] / figures["bare_median_ms"])


@pytest.mark.e2e
@pytest.mark.benchmark
def test_cancel_benchmark_measures_cancel_to_answer_under_load_against_a_bare_sdk_agent(
    tmp_path: Path,
) -> None:
    args = ("--cancels", "3", "--rounds", "1", "--busy", "1", "--interval", "0.05")
    figures = figures_of("bench_cancel.py", tmp_path, *args)
    assert (figures["cancels"], figures["busy_sessions"]) == (3, 1)
    for key in ("bare_median_ms", "bare_p99_ms", "ours_median_ms", "ours_p99_ms", "ratio"):
        assert positive(figures[key]), (key, figures)
    assert figures["ours_p99_ms"] >= figures["ours_median_ms"]


@pytest.mark.e2e
@pytest.mark.benchmark
def test_task_status_benchmark_measures_status_changes_against_progress_on_the_same_server(
    tmp_path: Path,
) -> None:
    figures = figures_of("bench_task_status.py", tmp_path, "--samples", "5")
    assert figures["status_samples"] >= 5 and figures["progress_samples"] >= 1
    assert positive(figures["status_median_ms"]) and positive(figures["progress_median_ms"])
    assert figures["ratio"] == pytest.approx(
        figures["status_median_ms"] / figures["progress_median_ms"], rel=0.01, abs=0.01
    )


@pytest.mark.e2e
@pytest.mark.benchmark
@pytest.mark.parametrize("transport", ["memory", "stdio"])
def test_first_update_profile_counts_the_calls_from_prompt_to_think_card(
    tmp_path: Path, transport: str
) -> None:
    args = ("--prompts", "2", "--warm", "1", "--transport", transport)
    figures = figures_of("profile_first_update.py", tmp_path, *args)
    assert len(figures["calls"]) == 2 and all(count > 0 for count in figures["calls"])
    # the path runs through the agent's prompt and ends with the think card's start built and sent
    functions = figures["functions"]
    assert "acp_adapter.server:ProgressAgent.prompt" in functions
    assert "acp_adapter.tools:build_thinking_start" in functions
    # the rest of the turn (the agent loop on its worker thread) is not on the path
    assert not any(name.startswith("run_agent:") for name in functions)
    assert sum(figures["by_package"].values()) == sum(functions.values())
    assert figures["median_calls"] == statistics.median(figures["calls"])
