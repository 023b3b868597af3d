"""Debian's chromium for the page tests, installed when missing (as the npm clients are).

Playwright for Python drives ``/usr/bin/chromium`` with ``executable_path``: it never downloads a
browser. On a machine without chromium the page tests install it with ``apt-get install -y
chromium`` when they run as root (a container, a CI job); otherwise they fail with the one command
that installs it. Test workers (``pytest -n``) may get here together: one installs under a lock
file, the others wait.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest

__all__ = ["CHROMIUM", "INSTALL_HINT", "ensure_chromium"]

CHROMIUM: Final = Path("/usr/bin/chromium")
#: Chromium's flags for a test: headless, and nothing that reaches for the network on its own
#: (a closed machine refuses those connections, many at a time).
ARGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT: Final = "sudo apt-get install -y chromium"
_LOCK: Final = Path(tempfile.gettempdir()) / "acp-progress-chromium-install.lock"
#: apt may have to fetch ~100 MB: generous, but bounded.
_INSTALL_TIMEOUT: Final = 900


def _apt_install(apt_get: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [apt_get, "install", "-y", "--no-install-recommends", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, env=env)
    if done.returncode != 0:  # a fresh image has no package lists yet
        subprocess.run([apt_get, "update"], capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, env=env)
        done = subprocess.run(install, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT, env=env)
    return done


def ensure_chromium(
    executable: Path = CHROMIUM,
    *,
    is_root: Callable[[], bool] = lambda: os.geteuid() == 0,
    which: Callable[[str], str | None] = shutil.which,
    install: Callable[[str], subprocess.CompletedProcess[str]] = _apt_install,
) -> Path:
    """``executable``, installed with apt when missing and this process may; else the test fails
    saying what to install. The parameters let a test play a machine without chromium."""
    if executable.is_file():
        return executable
    apt_get = which("apt-get")
    if not is_root() or apt_get is None:
        pytest.fail(
            f"the page tests need Debian's chromium at {executable}, which is missing: "
            f"install it with `{INSTALL_HINT}` (this test installs it by itself only when run as root "
            "on a machine with apt-get)"
        )
    with open(_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not executable.is_file():
            done = install(apt_get)
            if done.returncode != 0 or not executable.is_file():
                pytest.fail(
                    f"`apt-get install -y chromium` failed (exit {done.returncode}); install it with "
                    f"`{INSTALL_HINT}`:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
    return executable
