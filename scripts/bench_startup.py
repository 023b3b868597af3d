#!/usr/bin/env python3
"""How long a command takes to start, against the interpreter starting and doing nothing.

Each round runs ``python -c pass`` (the baseline: the interpreter, its site packages and this
project's editable-install hook) and then each measured command, back to back, as real processes;
the ratio is the median of the rounds' ratios (scripts/paired_rounds.py), so a machine that gets
busier between rounds does not move it. ``sessions`` starts an agent and asks it for its stored
sessions (in an empty temporary state directory), which is the whole command a user waits for.

Usage: python scripts/bench_startup.py [--rounds 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from bytecode import compile_package  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402

#: What is measured: a name and the command line's words.
COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "watch --help": ["watch", "--help"],
    "sessions": ["sessions"],
}


def _seconds(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, timeout=120)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return took


def measure(rounds: int, names: list[str]) -> dict[str, dict[str, float]]:
    compile_package()  # from bytecode, as installed (scripts/bytecode.py)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as state:
        os.chmod(state, 0o700)
        env = {**os.environ, "XDG_STATE_HOME": state, "ACP_PROGRESS_CONFIG_DIR": state}
        env.pop("ACP_PROGRESS_STATE_DIR", None)
        base: list[float] = []
        ours: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(rounds):
            base.append(_seconds([sys.executable, "-c", "pass"], env))
            for name in names:
                ours[name].append(_seconds([sys.executable, "-m", "acp_adapter.cli", *COMMANDS[name]], env))
    figures: dict[str, dict[str, float]] = {"baseline": {"median_s": statistics.median(base)}}
    for name, samples in ours.items():
        ratios = round_ratios(samples, base)
        figures[name] = {
            "median_s": statistics.median(samples),
            "vs_python_pass": ratios.median,
            "low": ratios.low,
            "high": ratios.high,
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--only", action="append", choices=sorted(COMMANDS), help="measure only these")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.rounds, args.only or list(COMMANDS))
    print(f"python -c pass: {figures['baseline']['median_s'] * 1000:.0f} ms (median of {args.rounds})")
    for name, row in figures.items():
        if name != "baseline":
            print(
                f"acp-progress {name}: {row['median_s'] * 1000:.0f} ms, "
                f"×{row['vs_python_pass']:.2f} of python -c pass (rounds {row['low']:.2f}–{row['high']:.2f})"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
