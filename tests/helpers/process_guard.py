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
Every test under ``tests/e2e/`` is marked ``e2e`` by its folder.
"""

from __future__ import annotations

import _posixsubprocess  # type: ignore[import-not-found]
import contextlib
import os
import subprocess
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

RECORD_ENV = "ACP_PROGRESS_E2E_RECORD"
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


def _blocker(nodeid: str, name: str, original: Callable[..., Any], record: str | None) -> Callable[..., Any]:
    def blocked(*args: Any, **kwargs: Any) -> Any:
        if record:
            with open(record, "a", encoding="utf-8") as out:
                out.write(nodeid + "\n")
            return original(*args, **kwargs)
        pytest.fail(
            f"{nodeid} started a process ({name}) but is not marked e2e: mark it "
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
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_FOLDER in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
