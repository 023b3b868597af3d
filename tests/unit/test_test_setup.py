"""The README's test command on a fresh machine: chromium installed or asked for, Hypothesis patient.

The page tests need Debian's chromium; a machine without it gets it installed by the tests when
they run as root (as the npm clients are), otherwise one failure that says what to install. A
loaded machine must not fail a property test for being slow.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.helpers.chromium import INSTALL_HINT, ensure_chromium


@pytest.mark.e2e
def test_a_missing_chromium_is_named_with_its_install_command_when_not_root(tmp_path: Path) -> None:
    missing = tmp_path / "chromium"
    with pytest.raises(pytest.fail.Exception) as failed:
        ensure_chromium(missing, is_root=lambda: False, which=lambda _name: "/usr/bin/apt-get")
    assert INSTALL_HINT in str(failed.value) and str(missing) in str(failed.value)


@pytest.mark.e2e
def test_a_missing_chromium_is_installed_with_apt_as_root(tmp_path: Path) -> None:
    missing = tmp_path / "chromium"
    calls: list[str] = []

    def install(apt_get: str) -> subprocess.CompletedProcess[str]:
        calls.append(apt_get)
        missing.write_text("#!/bin/sh\n")  # what apt-get install -y chromium leaves behind
        return subprocess.CompletedProcess([apt_get], 0, "", "")

    found = ensure_chromium(
        missing, is_root=lambda: True, which=lambda _name: "/usr/bin/apt-get", install=install
    )
    assert found == missing and calls == ["/usr/bin/apt-get"]
    assert ensure_chromium(missing, is_root=lambda: True, install=install) == missing and len(calls) == 1


@pytest.mark.e2e
def test_a_failed_install_says_what_to_run(tmp_path: Path) -> None:
    def install(apt_get: str) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess([apt_get], 100, "", "E: Unable to locate package chromium")

    with pytest.raises(pytest.fail.Exception) as failed:
        ensure_chromium(tmp_path / "c", is_root=lambda: True, which=lambda _name: "apt-get", install=install)
    assert INSTALL_HINT in str(failed.value) and "Unable to locate package" in str(failed.value)


def test_hypothesis_waits_for_a_slow_machine() -> None:
    current = hypothesis_settings()
    assert current.deadline is None
    assert HealthCheck.too_slow in current.suppress_health_check
