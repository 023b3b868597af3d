"""The ACP Registry entry in ``registry/acp-progress/``, and the release script that bumps it.

The entry is validated against the registry's own published JSON schema (vendored unchanged in
``registry/agent.schema.json``) and the rules its build script applies beyond the schema (id and
directory, semantic version, pinned package, icon size and colours), and held to the package it
installs: the same version as ``acp-progress --version`` and the wheel, the same name, licence and
repository as ``pyproject.toml``. Each rule is also shown to refuse a broken entry, so a rule that
stopped checking would fail here. The release script runs on a copy of the repository's files.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from acp_adapter._version import __version__
from tests.helpers.acp_agent import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import release

ENTRY_DIR = ROOT / "registry" / "acp-progress"
SCHEMA = json.loads((ROOT / "registry" / "agent.schema.json").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _entry() -> dict[str, Any]:
    return json.loads((ENTRY_DIR / "agent.json").read_text())


def test_the_vendored_schema_is_the_registrys() -> None:
    assert SCHEMA["$id"] == "https://cdn.agentclientprotocol.com/registry/v1/latest/agent.schema.json"
    assert SCHEMA["properties"]["id"]["pattern"] == "^[a-z][a-z0-9-]*$"
    assert set(SCHEMA["required"]) == {"id", "name", "version", "description", "distribution"}


def test_the_entry_passes_the_schema_and_the_registry_rules() -> None:
    assert release.entry_problems(ROOT, SCHEMA) == []


@pytest.mark.e2e
def test_the_entry_names_this_package_at_this_version() -> None:
    entry = _entry()
    project = PYPROJECT["project"]
    assert entry["id"] == ENTRY_DIR.name == project["name"]
    assert entry["version"] == __version__
    assert entry["distribution"] == {
        "uvx": {"package": f"{project['name']}=={__version__}", "args": ["serve"]}
    }
    assert entry["license"] == project["license"] == "MIT"
    assert entry["repository"] == project["urls"]["Repository"]
    assert entry["authors"] == [a["name"] for a in project["authors"]]
    assert project["dynamic"] == ["version"]  # pyproject reads _version.py: one place
    shown = subprocess.run(
        [sys.executable, "-m", "acp_adapter.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert shown.stdout.strip() == f"acp-progress {entry['version']}"
    # the arguments the registry launches with are a real command of ours
    from acp_adapter.cli import build_parser

    assert build_parser(entry["distribution"]["uvx"]["args"]).parse_args(["serve"]).command == "serve"


def _broken(tmp_path: Path, change: Any = None, icon: str | None = None) -> list[str]:
    """The problems of a copy of the entry with ``change(entry)`` applied / ``icon`` as its icon."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "registry", root / "registry")
    (root / "acp_adapter").mkdir(parents=True)
    shutil.copy(ROOT / "acp_adapter" / "_version.py", root / "acp_adapter" / "_version.py")
    entry = copy.deepcopy(_entry())
    if change is not None:
        change(entry)
    (root / "registry" / "acp-progress" / "agent.json").write_text(json.dumps(entry))
    if icon is not None:
        (root / "registry" / "acp-progress" / "icon.svg").write_text(icon)
    return release.entry_problems(root, SCHEMA)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda e: e.update(id="ACP_Progress"), "schema: id"),
        (lambda e: e.update(id="acp-progresss"), "the directory"),
        (lambda e: e.update(version="0.1"), "not a semantic version"),
        (lambda e: e.update(version="9.9.9"), "not the package's"),
        (lambda e: e["distribution"]["uvx"].update(package="acp-progress"), "not pinned"),
        (lambda e: e["distribution"]["uvx"].update(package="acp-progress@latest"), "names latest"),
        (lambda e: e["distribution"]["uvx"].update(package="acp-progress==0.0.9"), "different version"),
        (lambda e: e["distribution"].update(pip={"package": "x"}), "schema: distribution"),
        (lambda e: e.pop("description"), "schema: the entry: 'description' is a required property"),
        (lambda e: e.update(repository="acp-progress on GitHub"), "not an absolute http(s) URL"),
        (lambda e: e["distribution"]["uvx"].update(args=["--acp"]), "started with ['serve']"),
    ],
)
def test_each_registry_rule_refuses_a_broken_entry(tmp_path: Path, change: Any, expected: str) -> None:
    problems = _broken(tmp_path, change)
    assert any(expected in p for p in problems), problems


GOOD_ICON = (ENTRY_DIR / "icon.svg").read_text()


@pytest.mark.parametrize(
    ("icon", "expected"),
    [
        (GOOD_ICON.replace('width="16" height="16"', 'width="24" height="24"'), "not 16x16"),
        (GOOD_ICON.replace("0 0 16 16", "0 0 16 24"), "not square"),
        (GOOD_ICON.replace('fill="currentColor"', 'fill="#ff5500"'), "fixed colour"),
        (GOOD_ICON.replace('stroke="currentColor"', 'style="stroke: red"'), "sets stroke: red"),
        (GOOD_ICON.replace("currentColor", "none"), "never uses currentColor"),
        (GOOD_ICON.replace("</svg>", "<script>alert(1)</script></svg>"), "<script> is not allowed"),
        (GOOD_ICON.replace("<circle", '<circle onload="x()"'), "onload"),
        ("<svg", "not well-formed"),
    ],
)
def test_the_icon_rules_refuse_a_broken_icon(tmp_path: Path, icon: str, expected: str) -> None:
    problems = _broken(tmp_path, icon=icon)
    assert any(expected in p for p in problems), problems


def _repo_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "registry", root / "registry")
    (root / "acp_adapter").mkdir(parents=True)
    shutil.copy(ROOT / "acp_adapter" / "_version.py", root / "acp_adapter" / "_version.py")
    shutil.copy(ROOT / "CHANGELOG.md", root / "CHANGELOG.md")
    return root


def _run_release(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release.py"), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _bumped(version: str) -> str:
    major, minor, _patch = (int(p) for p in version.split("."))
    return f"{major}.{minor + 1}.0"


@pytest.mark.e2e
def test_the_release_script_bumps_every_place_at_once(tmp_path: Path) -> None:
    root = _repo_copy(tmp_path)
    old, new = __version__, _bumped(__version__)
    unreleased = (root / "CHANGELOG.md").read_text().split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    done = _run_release(root, new, "--date", "2027-01-02")
    assert done.returncode == 0, done.stderr
    assert f'__version__ = "{new}"' in (root / "acp_adapter" / "_version.py").read_text()
    entry = json.loads((root / "registry" / "acp-progress" / "agent.json").read_text())
    assert entry["version"] == new and entry["distribution"]["uvx"]["package"] == f"acp-progress=={new}"
    changelog = (root / "CHANGELOG.md").read_text()
    assert f"## [Unreleased]\n\n## [{new}] - 2027-01-02{unreleased}" in changelog  # entries moved
    assert re.search(rf"^\[Unreleased\]: \S+/compare/v{new}\.\.\.HEAD$", changelog, re.M)
    assert re.search(rf"^\[{new}\]: \S+/compare/v{old}\.\.\.v{new}$", changelog, re.M)
    assert release.entry_problems(root, SCHEMA) == []
    # nothing unreleased now: a second bump is refused, and so are a version that goes back and a bad one
    again = _run_release(root, _bumped(new))
    assert again.returncode != 0 and "nothing under ## [Unreleased]" in again.stderr
    assert _run_release(root, old).returncode != 0
    bad = _run_release(root, "1.0")
    assert bad.returncode != 0 and "not a release version" in bad.stderr
    assert json.loads((root / "registry" / "acp-progress" / "agent.json").read_text())["version"] == new
