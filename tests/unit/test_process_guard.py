"""The process guard fails a quick-run test that starts a process even where a worker thread starts
it and the code around swallows the guard's refusal (an agent's loop in a thread, an anyio
``to_thread`` call): the test fails within about a second with the guard's message, not at its
timeout, and its teardown still runs; an ``e2e`` test and a teardown may start processes as before.

The guarded tests run in a pytest process of their own (pytester), with the guard's hooks."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest

from tests.helpers.acp_agent import ROOT

pytestmark = pytest.mark.e2e  # the guarded tests run in a pytest process of their own

#: the per-test timeout of that run: a test the guard did not stop waits this long
INNER_TIMEOUT = 20
#: the whole run's bound (a run the guard did not stop takes several of those timeouts)
RUN_TIMEOUT = 75
#: how long a test the guard stops may take (the refusal reaches the test's thread at once)
QUICK = 5.0

CONFTEST = """
import pytest

from tests.helpers.process_guard import (  # noqa: F401 (the process guard's hooks)
    pytest_collection_modifyitems,
    pytest_fixture_setup,
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_sessionfinish,
)


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

GUARDED = """
import subprocess
import sys
import threading

import anyio
import pytest

TRUE = [sys.executable, "-c", "pass"]


def swallowing_start():
    # what product code in a worker thread may do: catch everything, carry on without the result
    try:
        subprocess.run(TRUE, check=True)
    except BaseException:
        return None


@pytest.fixture
def teardown_mark():
    yield
    print("TEARDOWN-RAN sync")


@pytest.fixture
async def async_teardown_mark():
    yield
    print("TEARDOWN-RAN async")


def test_a_worker_thread_that_swallows_the_refusal(teardown_mark):
    done = threading.Event()
    threading.Thread(target=lambda: swallowing_start() or None, daemon=True).start()
    done.wait({timeout})  # what the swallowed result leaves the test waiting for: never set


@pytest.mark.anyio
async def test_an_anyio_worker_that_swallows_the_refusal(async_teardown_mark):
    await anyio.to_thread.run_sync(swallowing_start)
    await anyio.Event().wait()  # never set


@pytest.mark.anyio
async def test_the_module_s_next_async_test_runs():
    await anyio.sleep(0)


def test_the_test_s_own_thread_is_refused_as_before():
    subprocess.run(TRUE, check=True)


@pytest.mark.e2e
def test_an_e2e_test_s_worker_thread_may_start_a_process():
    codes = []
    worker = threading.Thread(target=lambda: codes.append(subprocess.run(TRUE).returncode))
    worker.start()
    worker.join(30)
    assert codes == [0]


@pytest.fixture
def starts_a_process_in_teardown():
    yield
    codes = []
    worker = threading.Thread(target=lambda: codes.append(subprocess.run(TRUE).returncode))
    worker.start()
    worker.join(30)
    assert codes == [0]


def test_a_teardown_s_worker_thread_may_start_a_process(starts_a_process_in_teardown):
    pass
"""


def test_a_refusal_on_a_worker_thread_fails_the_test_at_once_with_the_guard_s_message(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.delenv("ACP_PROGRESS_E2E_RECORD", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    e2e: starts a process\n")
    pytester.makepyfile(test_guarded=GUARDED.format(timeout=INNER_TIMEOUT * 2))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-s",
        f"--timeout={INNER_TIMEOUT}",
        "--junitxml=report.xml",
        timeout=RUN_TIMEOUT,
    )
    out = result.stdout.str()
    result.assert_outcomes(passed=3, failed=3)
    took = {
        case.get("name"): float(case.get("time", "0"))
        for case in ET.parse(pytester.path / "report.xml").iter("testcase")
    }
    for name in (
        "test_a_worker_thread_that_swallows_the_refusal",
        "test_an_anyio_worker_that_swallows_the_refusal",
        "test_the_test_s_own_thread_is_refused_as_before",
    ):
        assert f"FAILED test_guarded.py::{name} - " in out
        assert f"{name} started a process (Popen._execute_child)" in out
        assert took[name] < QUICK, (name, took[name], out)
    assert "Timeout" not in out
    assert "TEARDOWN-RAN sync" in out and "TEARDOWN-RAN async" in out
