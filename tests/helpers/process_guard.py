"""The quick run starts no process: a test not marked ``e2e`` that starts one fails loudly.

``pytest -m "not e2e"`` is only a quick run if what it selects never waits for a process to
start, so the rule is enforced rather than hoped for. During the setup and call of every test not
marked ``e2e``, each way this project's code and its libraries start a process is blocked:
:class:`subprocess.Popen`'s start (which ``asyncio``'s subprocesses and the SDK's
``spawn_agent_process`` go through), the fork-exec under ``multiprocessing``,
``os.posix_spawn``, ``os.fork`` and ``os.forkpty`` (under ``pty.fork``) and ``os.system``.
Teardown is left open: a session-wide server's shutdown may fall to whichever test ran last.

A process may be started on a worker thread (an agent's loop in a thread, an anyio ``to_thread``
call), where the refusal raised there can be swallowed by the code around it while the test waits
for ever for what that code never delivers. So every refusal is also recorded and sent to the
test's own thread with :data:`REFUSAL_SIGNAL` (handled only while the test is guarded): it raises
:class:`ProcessRefused` there at once, wherever the test waits, and the guard fails the test with
the refusal's message; its teardown runs as after any failure.

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
import signal
import subprocess
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

RECORD_ENV = "ACP_PROGRESS_E2E_RECORD"

# ``platform.uname().processor`` runs ``uname -p`` in a subprocess the first time it is asked, and
# caches the answer for the life of the process. The OpenAI client asks for it (its platform
# headers) on its first request, so whichever in-process test makes the first request would be
# failed by the guard only when run alone (in a full run an earlier e2e test has filled the
# cache). Filled here, before any guard.
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


#: carries a worker thread's refusal to the test's thread; nothing else in the project uses it
REFUSAL_SIGNAL = signal.SIGUSR1


class ProcessRefused(BaseException):
    """Raised in the test's thread when another thread was refused a process. A BaseException, as
    KeyboardInterrupt is, so that what it interrupts (an event loop, anyio's test runner) unwinds
    and cancels the waiting test instead of treating it as the test's own error; the guard then
    fails the test with the refusal's message."""


class _Watch:
    """What the guard knows in this test process: the fixtures being set up right now (a process
    started there belongs to every test using that fixture), in record mode those that started
    one, and while a test is guarded its thread and the first refusal of the phase."""

    def __init__(self) -> None:
        self.setting_up: list[Any] = []
        self.spawning_fixtures: list[Any] = []
        self.lock = threading.Lock()
        #: the thread of the guarded test (None while no test is guarded)
        self.test_thread: int | None = None
        #: whether the refusal signal's handler is installed (only in the main thread)
        self.can_signal = False
        self.refusal: str | None = None
        self.signalled = False
        self.delivered = False


WATCH = _Watch()


def _record_refusal(message: str) -> None:
    """Keep the phase's first refusal; from another thread, send it to the test's thread."""
    with WATCH.lock:
        if WATCH.test_thread is None or WATCH.refusal is not None:
            return
        WATCH.refusal = message
        if WATCH.can_signal and threading.get_ident() != WATCH.test_thread:
            WATCH.signalled = True
            signal.pthread_kill(WATCH.test_thread, REFUSAL_SIGNAL)


def _on_refusal_signal(signum: int, frame: Any) -> None:
    """In the test's thread: raise the refusal a worker thread got (once, and only while guarded)."""
    if WATCH.test_thread is not None and WATCH.refusal is not None and not WATCH.delivered:
        WATCH.delivered = True
        raise ProcessRefused(WATCH.refusal)


def _arm() -> Any:
    """Start a guarded phase in this thread; the handler it replaced, to put back."""
    can_signal = threading.current_thread() is threading.main_thread()
    previous = signal.signal(REFUSAL_SIGNAL, _on_refusal_signal) if can_signal else None
    with WATCH.lock:
        WATCH.test_thread = threading.get_ident()
        WATCH.can_signal = can_signal
        WATCH.refusal, WATCH.signalled, WATCH.delivered = None, False, False
    return previous


def _disarm(previous: Any) -> str | None:
    """End the guarded phase; the refusal it recorded, if any.

    After the phase no thread sends the signal; one already sent is taken here with the signal
    blocked (blocking it runs a handler it already reached, which now does nothing), so it never
    meets the handler put back (the default one ends the process)."""
    with WATCH.lock:
        WATCH.test_thread = None
        refusal, signalled, can_signal = WATCH.refusal, WATCH.signalled, WATCH.can_signal
        WATCH.refusal = None
    if not can_signal:
        return refusal
    if signalled:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {REFUSAL_SIGNAL})
        signal.sigtimedwait({REFUSAL_SIGNAL}, 0)
        signal.signal(REFUSAL_SIGNAL, previous if previous is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    else:
        signal.signal(REFUSAL_SIGNAL, previous if previous is not None else signal.SIG_DFL)
    return refusal


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
        message = (
            f"{nodeid} started a process ({name}){where} but is not marked e2e: mark it "
            "(@pytest.mark.e2e, or pytestmark = pytest.mark.e2e for the module) or run it in process"
        )
        if threading.get_ident() != WATCH.test_thread:
            thread = threading.current_thread().name
            stack = "".join(traceback.format_stack()[:-1][-8:])
            message += f"\n(started on the thread {thread!r}:)\n{stack}"
        _record_refusal(message)
        pytest.fail(message, pytrace=True)

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
    previous = _arm()
    try:
        yield
    except BaseException as raised:
        refusal = _end(saved, previous)
        # a refusal the test's own thread raised and nobody caught fails the test as it is
        if refusal is not None and not (isinstance(raised, pytest.fail.Exception) and raised.msg == refusal):
            raise pytest.fail.Exception(refusal, pytrace=False) from None
        raise
    refusal = _end(saved, previous)
    if refusal is not None:  # raised, and swallowed by the code around it
        raise pytest.fail.Exception(refusal, pytrace=False)


def _end(saved: list[tuple[Any, str, Any]], previous: Any) -> str | None:
    refusal = _disarm(previous)
    for module, attr, original in saved:
        setattr(module, attr, original)
    return refusal


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any) -> Generator[None, None, None]:
    WATCH.setting_up.append(fixturedef)
    try:
        yield
    finally:
        WATCH.setting_up.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    with _guarded(item):
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the OpenAI client's request headers ask ``platform.processor()``, which runs ``uname -p`` the
    # first time: asked here, before any test is guarded, so a model client in the test process is
    # not a test starting a process (an xdist worker had asked already; ``-n 0`` had not)
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
