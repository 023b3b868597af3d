"""The locked npm packages of ``tests/agui_client`` (``@ag-ui/client``, ``acpx``), installed once.

Real third-party clients drive this project in some tests. They are pinned in
``tests/agui_client/package.json`` and its lock file; ``npm install`` installs them when a package a
test needs is missing. Test workers (``pytest -n``) may get here together on a fresh checkout:
one installs under the lock file, the others wait.
"""

from __future__ import annotations

import fcntl
import re
import shutil
import subprocess

import pytest

from tests.helpers.acp_agent import ROOT

__all__ = ["CLIENT_DIR", "node_with_packages"]

CLIENT_DIR = ROOT / "tests" / "agui_client"


def INSTALL(npm: str) -> list[str]:
    """``npm install`` at the locked versions, changing no file. Not ``npm ci``: acpx's dependency
    ``@openclaw/fs-safe`` lists optional per-platform packages the registry does not serve (darwin,
    win32 …), which ``npm ci`` counts as a lock file out of sync; ``npm install`` skips them."""
    return [npm, "install", "--no-audit", "--no-fund", "--no-save"]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is required for this test (install Node.js >= 18 with npm)")
    return path


def node_with_packages(*packages: str) -> str:
    """The node binary (>= 18), with every one of ``packages`` installed from the lock file."""
    node = _tool("node")
    npm = _tool("npm")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.match(r"v(\d+)\.", version.strip())
    assert match and int(match.group(1)) >= 18, f"Node.js >= 18 is required, found {version.strip()}"
    with open(CLIENT_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        modules = CLIENT_DIR / "node_modules"
        if not all((modules / package / "package.json").is_file() for package in packages):
            done = subprocess.run(INSTALL(npm), cwd=CLIENT_DIR, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
    return node
