#!/usr/bin/env python3
"""What installing and launching the package costs a user: sizes, install times, ``uvx`` start-up.

Figures, all measured in this run:

* the sizes of the sdist and the wheel built from this checkout (``python -m build``);
* installing the wheel (and its dependencies, from the package index) into a fresh virtual
  environment with pip (no cache: ``--no-cache-dir``) and with uv (an empty cache): the ratio
  pip / uv;
* ``uvx --from <wheel> acp-progress serve`` to its first ``initialize`` answer: the first start
  with an empty uv cache and an empty ``HOME`` (uv resolves, downloads and installs first), then
  later starts on the warm cache; the baseline is the same agent started from the virtual
  environment's own ``acp-progress`` at its absolute path, alternating with the warm ``uvx``
  starts round by round (scripts/paired_rounds.py), so the ratio is what ``uvx`` adds.

Usage: python scripts/bench_install.py [--rounds 5] [--dist DIR] [--json FILE]
(``--dist``: a directory with an already built sdist and wheel.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from acp import PROTOCOL_VERSION, spawn_agent_process  # noqa: E402
from acp.schema import ClientCapabilities, Implementation  # noqa: E402
from paired_rounds import round_ratios  # noqa: E402


class _Quiet:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("not asked in this benchmark")


def build(out: Path) -> tuple[Path, Path]:
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True, capture_output=True
    )
    return next(out.glob("*.whl")), next(out.glob("*.tar.gz"))


def clean_env(base: Path) -> dict[str, str]:
    """No user configuration, an empty uv cache under ``base``, this interpreter for uv."""
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "UV_CACHE_DIR": str(base / "uv-cache"),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        "LANG": "C.UTF-8",
    }
    for name in (
        "SSL_CERT_FILE",
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "NO_PROXY",
        "PIP_INDEX_URL",
        "UV_DEFAULT_INDEX",
    ):
        if os.environ.get(name):
            env[name] = os.environ[name]
    return env


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def install_with_pip(wheel: Path, base: Path) -> float:
    """Seconds to make a venv and ``pip install`` the wheel into it (no cache)."""
    env = clean_env(base)
    venv = base / "pip-venv"
    return timed([sys.executable, "-m", "venv", str(venv)], env) + timed(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-cache-dir", str(wheel)], env
    )


def install_with_uv(wheel: Path, base: Path) -> tuple[float, Path]:
    """Seconds to make a venv and ``uv pip install`` the wheel into it (an empty cache); the venv."""
    env = clean_env(base)
    venv = base / "uv-venv"
    took = timed(["uv", "venv", "--quiet", str(venv)], env) + timed(
        ["uv", "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)], env
    )
    return took, venv


async def to_initialize(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds from spawning ``argv`` to its ``initialize`` answer."""
    started = time.perf_counter()
    async with spawn_agent_process(_Quiet(), *argv, env=env, cwd=str(cwd)) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="bench", version="0"),
        )
        took = time.perf_counter() - started
    return took


async def starts(wheel: Path, venv: Path, base: Path, rounds: int) -> dict[str, Any]:
    env = clean_env(base / "uvx")
    uvx = ["uvx", "--from", str(wheel), "acp-progress", "serve"]
    direct = [str(venv / "bin" / "acp-progress"), "serve"]
    cold = await to_initialize(uvx, env, base)
    warm: list[float] = []
    venv_starts: list[float] = []
    for _ in range(rounds):
        warm.append(await to_initialize(uvx, env, base))
        venv_starts.append(await to_initialize(direct, env, base))
    ratio = round_ratios(warm, venv_starts)
    return {
        "uvx_cold_start_s": cold,
        "uvx_warm_start_median_s": statistics.median(warm),
        "venv_start_median_s": statistics.median(venv_starts),
        "uvx_warm_vs_venv": ratio.median,
        "uvx_warm_vs_venv_low": ratio.low,
        "uvx_warm_vs_venv_high": ratio.high,
        "rounds": rounds,
    }


def measure(rounds: int, dist: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        base = Path(tmp)
        if dist is None:
            wheel, sdist = build(base / "dist")
        else:
            wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
        if shutil.which("uv") is None:
            raise SystemExit("uv is not on PATH (pip install uv)")
        pip_s = install_with_pip(wheel, base / "pip")
        uv_s, venv = install_with_uv(wheel, base / "uv")
        figures = {
            "wheel_bytes": wheel.stat().st_size,
            "sdist_bytes": sdist.stat().st_size,
            "pip_install_s": pip_s,
            "uv_install_s": uv_s,
            "pip_vs_uv": pip_s / uv_s,
        }
        figures.update(asyncio.run(starts(wheel, venv, base, rounds)))
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="warm uvx / venv start pairs (default 5)")
    parser.add_argument("--dist", type=Path, help="use the sdist and wheel in DIR instead of building")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    f = measure(args.rounds, args.dist)
    print(f"wheel {f['wheel_bytes'] / 1024:.0f} KiB, sdist {f['sdist_bytes'] / 1024:.0f} KiB")
    print(
        f"install the wheel into a fresh venv (dependencies from the index, no cache): "
        f"pip {f['pip_install_s']:.1f} s, uv {f['uv_install_s']:.1f} s (pip/uv {f['pip_vs_uv']:.1f}x)"
    )
    print(
        f"uvx to the first initialize answer: first start (empty cache, empty HOME) "
        f"{f['uvx_cold_start_s']:.2f} s; later starts {f['uvx_warm_start_median_s']:.2f} s (median of "
        f"{f['rounds']}) vs the venv's own acp-progress {f['venv_start_median_s']:.2f} s: "
        f"{f['uvx_warm_vs_venv']:.2f}x "
        f"(rounds {f['uvx_warm_vs_venv_low']:.2f}–{f['uvx_warm_vs_venv_high']:.2f})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(f, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
