"""The package as users get it: the sdist and wheel built from this checkout, once per test session,
and a clean ``uv`` to run them with.

``python -m build`` builds the sdist, then the wheel from the sdist (so a file missing from the
sdist breaks the wheel too), each in an isolated environment with only the declared build
requirements. ``uv`` gets an empty cache and an empty ``HOME`` (no user or project
configuration, ``UV_NO_CONFIG``), the interpreter running the tests (so nothing downloads a Python)
and, when pip on this machine is configured with an index other than PyPI, that index, so uv
resolves dependencies where pip would. Nothing of this checkout is on the import path of what uv
runs: ``PYTHONPATH`` is not passed.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.acp_agent import ROOT

__all__ = ["Dist", "dist", "made_once", "one_prompt", "think_card_statuses", "uv_env"]


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


#: what a checkout holds that is not the project's source (installed clients, caches, build output)
NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "*.egg-info",
    ".hypothesis",
    ".state",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".venv",
    "*.lock",
)


def _installer() -> list[str]:
    """uv fills the build's isolated environments when it is there (the test extra installs it):
    the same environments, with the same build requirements, made in a fraction of pip's time."""
    return ["--installer", "uv"] if importlib.util.find_spec("uv") or shutil.which("uv") else []


def _build(tmp_path_factory: pytest.TempPathFactory, out: Path) -> None:
    """Built from a copy of the checkout: setuptools writes its ``*.egg-info`` and ``build/`` into
    the tree it builds, so two test workers building the checkout itself would trip over each other."""
    source = tmp_path_factory.mktemp("source") / "acp-progress"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    done = subprocess.run(
        [sys.executable, "-m", "build", *_installer(), "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A directory ``make`` fills once per test run. Under xdist every worker's base temporary
    directory sits in one directory made fresh for this run, so the first worker makes it there
    under a file lock and the others take it (nothing made by an earlier run is reused). Without
    xdist, the session's own temporary directory holds it."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        out = tmp_path_factory.mktemp(name)
        make(out)
        return out
    run_dir = tmp_path_factory.getbasetemp().parent
    out = run_dir / f"shared-{name}"
    with (run_dir / f"shared-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (out / "built").exists():
                shutil.rmtree(out, ignore_errors=True)  # a worker that failed half-way
                out.mkdir()
                make(out)
                (out / "built").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """Built once per test run (a build is seconds of CPU)."""
    out = made_once(tmp_path_factory, "dist", lambda out: _build(tmp_path_factory, out))
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist)


@functools.cache
def _pip_index() -> str | None:
    """The index pip on this machine installs from, when it is not PyPI's (environment or config)."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def uv_env(base: Path, **extra: str) -> dict[str, str]:
    """An environment for ``uv``/``uvx`` with nothing of the user's: empty ``HOME`` and cache
    under ``base`` (created), the test's interpreter, the machine's package index."""
    home, cache = base / "home", base / "uv-cache"
    home.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "UV_CACHE_DIR": str(cache),
        "UV_NO_CONFIG": "1",
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        "LANG": "C.UTF-8",
    }
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"):
        if os.environ.get(name):
            env[name] = os.environ[name]
    index = os.environ.get("UV_DEFAULT_INDEX") or _pip_index()
    if index:
        env["UV_DEFAULT_INDEX"] = index
    env.update(extra)
    return env


async def one_prompt(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[Any, Any]:
    """Start ``argv`` as an editor would (stdio, ``env``, ``cwd``), ``initialize`` (as a client that
    runs terminal sign-in), open a session and send one prompt; the ``initialize`` answer and the
    client that recorded the session's updates. The agent's stderr goes to ``log``."""
    import anyio
    from acp import PROTOCOL_VERSION, spawn_agent_process
    from acp.schema import AuthCapabilities, ClientCapabilities, Implementation

    from tests.helpers.acp_agent import RecordingClient, prompt_text

    client = RecordingClient()
    with log.open("wb") as stderr:
        async with spawn_agent_process(
            client, argv[0], *argv[1:], env=env, cwd=str(cwd), transport_kwargs={"stderr": stderr}
        ) as (conn, _process):
            with anyio.fail_after(300):  # a cold uv cache downloads the dependencies first
                answer = await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(auth=AuthCapabilities(terminal=True)),
                    client_info=Implementation(name="pytest", version="0"),
                )
            with anyio.fail_after(60):
                session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
                response = await prompt_text(conn, session.session_id, "what is 2+2")
            assert response.stop_reason == "end_turn", log.read_text(errors="replace")[-2000:]
    return answer, client


def think_card_statuses(client: Any) -> list[str | None]:
    """The statuses the (first) think card went through, as the client saw them."""
    thinks = list(client.think_cards().values())
    assert thinks, f"no think card among {len(client.cards())} cards"
    return [u.status for u in thinks[0]]
