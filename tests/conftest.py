"""Shared fixtures and hooks: a private state and config directory per test process, one Hypothesis
profile, the PostgreSQL server, the process guard of the quick run. What tests import lives in
tests/helpers (the recording client and the agent starters in tests/helpers/acp_agent.py)."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import pytest

from tests.helpers.acp_agent import ROOT, TEMP_ROOT
from tests.helpers.process_guard import (  # noqa: F401 (the process guard's hooks)
    pytest_collection_modifyitems,
    pytest_fixture_setup,
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_sessionfinish,
)

#: ``pytester``: the process guard's own tests run guarded tests in a pytest process of their own
pytest_plugins = ("pytester",)


def _private_dir(name: str) -> str:
    path = TEMP_ROOT / name
    path.mkdir(mode=0o700)
    return str(path)


# Every agent a test starts, in this process or spawned, keeps its sessions in a temporary state
# directory of this test process, never the user's own ...
os.environ["XDG_STATE_HOME"] = _private_dir("state")
os.environ.pop("ACP_PROGRESS_STATE_DIR", None)
os.environ.pop("ACP_PROGRESS_DATABASE_URL", None)  # the PostgreSQL store only where a test asks for it
# ... and reads its settings file from an empty directory, never the user's ~/.config/acp-progress.
os.environ["ACP_PROGRESS_CONFIG_DIR"] = _private_dir("config")

# Hypothesis on a shared, loaded machine: an example may take long (a busy core, a spawned agent),
# which is not a failure of the property. Every test inherits this profile; a test's own
# ``@settings`` changes only what it names (its number of examples).
try:
    from hypothesis import HealthCheck
    from hypothesis import settings as hypothesis_settings
except ImportError:  # the test extra is not installed: the property tests are skipped by import
    pass
else:
    hypothesis_settings.register_profile(
        "acp-progress",
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    hypothesis_settings.load_profile("acp-progress")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package once, in the controlling process, before any agent is spawned.

    Most tests start agent processes; each imports about a hundred of the package's modules. An
    installed wheel has their bytecode (pip compiles at install), but this checkout may not — and
    where ``PYTHONDONTWRITEBYTECODE`` is set (as on the build machines) no process ever writes it,
    so every spawned agent would compile the package from source again (about 150 ms of each
    start). Reading a ``.pyc`` is allowed under that variable; only writing is not, so it is
    written here, once, and the xdist workers and their agents read it."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller compiled already
        return
    sys.path.insert(0, str(ROOT / "scripts"))
    from bytecode import compile_package  # scripts/bytecode.py: what the start-up benchmarks do

    # the helpers too: this conftest imports most of them before collection begins (below)
    compile_package(ROOT / "tests" / "agents", ROOT / "tests" / "helpers")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """Let collection write the bytecode of what it imports: the test modules (assertion-rewritten)
    and their helpers.

    Where ``PYTHONDONTWRITEBYTECODE`` is set, pytest cannot cache a rewritten test module, so every
    run, in every xdist worker, parsed, rewrote and compiled the whole test tree again — about half
    of a worker's collection. Pytest reads a cached rewritten module even under that variable (it
    checks the source's size and mtime), so writing it once here makes every later run read it;
    two workers writing the same file are safe (each writes a temporary file and renames it).
    Only collection writes: a test importing a module of its own (from a temporary directory)
    leaves no ``__pycache__`` behind."""
    writes_nothing = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = writes_nothing


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move everything collection left alive (the imported package, its libraries, the test
    modules and items) out of the garbage collector's sight: it lives until the run ends anyway,
    and every full collection during the tests would otherwise walk its several hundred thousand
    objects again (about a sixth of the CPU of the Hypothesis-heavy folders). Objects the tests
    create are collected as before."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """asyncio for every async test; module scope, so a module's tests can share one agent
    process through a module-scoped async fixture."""
    return "asyncio"


@pytest.fixture(scope="session")
def pg_server() -> Any:
    """A real PostgreSQL server for this test process (see :mod:`tests.helpers.pg_server`); skipped only
    where neither PostgreSQL nor psycopg is installed (``.ci/run`` installs both)."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
    from tests.helpers.pg_server import PgServer

    try:
        server = PgServer()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    yield server
    server.close()


@pytest.fixture
def pg_url(pg_server: Any) -> Any:
    """The URL of a fresh database of its own for one test (dropped after)."""
    url = pg_server.create_database()
    yield url
    pg_server.drop_database(url)
