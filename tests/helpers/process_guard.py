"""The quick run starts no process: a test not marked ``e2e`` that starts one fails loudly.

``pytest -m "not e2e"`` is only a quick run if what it selects never waits for a process to
start, so the rule is enforced rather than hoped for. During the setup and call of every test not
marked ``e2e``, each way this project's code and its libraries start a process is blocked:
:class:`subprocess.Popen`'s start (which ``asyncio``'s subprocesses and the SDK's
``spawn_agent_process`` go through), the fork-exec under ``multiprocessing``,
``os.posix_spawn``, ``os.fork`` and ``os.forkpty`` (under ``pty.fork``) and ``os.system``.
Teardown is left open: a session-wide server's shutdown may fall to whichever test ran last.

With ``ACP_PROGRESS_E2E_RECORD=<file>`` in the environment the guard records instead of failing:
each offending test's node id is appended to the file (the list the codemod turns into marks).
A process started while a fixture is set up counts for every test using that fixture (a
module's shared agent starts with its first test only). Every test under ``tests/e2e/`` is marked
``e2e`` by its folder.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import platform
import subprocess
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

RECORD_ENV = "ACP_PROGRESS_E2E_RECORD"

# ``platform.uname().processor`` runs ``uname -p`` in a subprocess the first time it is asked, and
# caches the answer for the life of the process. The OpenAI client asks for it (its platform
# headers) on its first request, so whichever in-process test makes the first request would be
# blocked by the guard -- or, inside the agent, hang on the swallowed failure -- only when run
# alone (in a full run an earlier e2e test has filled the cache). Filled here, before any guard.
platform.uname().processor  # noqa: B018 (fills the cache; the value is not needed)
E2E_FOLDER = Path(__file__).resolve().parents[1] / "e2e"

#: (module, attribute) of every entry point that starts a process
ENTRY_POINTS: tuple[tuple[Any, str], ...] = (
    (subprocess.Popen, "_execute_child"),
    (_posixsubprocess, "fork_exec"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "system"),
)


class _Watch:
    """What the guard knows in this test process: the fixtures being set up right now (a process
    started there belongs to every test using that fixture) and, in record mode, those that
    started one."""

    def __init__(self) -> None:
        self.setting_up: list[Any] = []
        self.spawning_fixtures: list[Any] = []


WATCH = _Watch()


def _blocker(nodeid: str, name: str, original: Callable[..., Any], record: str | None) -> Callable[..., Any]:
    def blocked(*args: Any, **kwargs: Any) -> Any:
        fixture = WATCH.setting_up[-1] if WATCH.setting_up else None
        if record:
            with open(record, "a", encoding="utf-8") as out:
                out.write(nodeid + "\n")
            if fixture is not None and fixture not in WATCH.spawning_fixtures:
                WATCH.spawning_fixtures.append(fixture)
            return original(*args, **kwargs)
        where = f" in its fixture {fixture.argname!r}" if fixture is not None else ""
        pytest.fail(
            f"{nodeid} started a process ({name}){where} but is not marked e2e: mark it "
            "(@pytest.mark.e2e, or pytestmark = pytest.mark.e2e for the module) or run it in process",
            pytrace=True,
        )

    return blocked


@contextlib.contextmanager
def _guarded(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("e2e") is not None:
        yield
        return
    record = os.environ.get(RECORD_ENV)
    saved = [(module, attr, getattr(module, attr)) for module, attr in ENTRY_POINTS if hasattr(module, attr)]
    for module, attr, original in saved:
        name = f"{getattr(module, '__qualname__', module.__name__)}.{attr}"
        setattr(module, attr, _blocker(item.nodeid, name, original, record))
    try:
        yield
    finally:
        for module, attr, original in saved:
            setattr(module, attr, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any) -> Generator[None, None, None]:
    WATCH.setting_up.append(fixturedef)
    try:
        yield
    finally:
        WATCH.setting_up.pop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the OpenAI client's request headers ask ``platform.processor()``, which runs ``uname -p`` the
    # first time: asked here, before any test is guarded, so a model client in the test process is
    # not a test starting a process (an xdist worker had asked already; ``-n 0`` had not, and the
    # refusal, raised in the client's own thread, left the turn waiting for ever)
    import platform

    platform.processor()
    for item in items:
        if E2E_FOLDER in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record mode: a fixture that started a process makes every test using it (the same
    fixture definition, wherever the test ran first) a process test."""
    record = os.environ.get(RECORD_ENV)
    if not record or not WATCH.spawning_fixtures:
        return
    with open(record, "a", encoding="utf-8") as out:
        for item in session.items:
            defs = getattr(item, "_fixtureinfo", None)
            known = defs.name2fixturedefs if defs is not None else {}
            if any(f in known.get(f.argname, ()) for f in WATCH.spawning_fixtures):
                out.write(item.nodeid + "\n")
