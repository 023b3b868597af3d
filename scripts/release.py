#!/usr/bin/env python3
"""Bump the version in every place that names it, at once, and check the registry entry.

The version lives in ``acp_adapter/_version.py`` (the package, ``acp-progress --version`` and
the wheel read it from there); the ACP Registry entry ``registry/acp-progress/agent.json`` repeats
it twice (``version`` and the pinned ``distribution.uvx.package``), and ``CHANGELOG.md`` gets a
section for it. Bumped by hand, one of the four is forgotten sooner or later, and the registry
then installs a different version than the entry says. This script moves the *Unreleased* entries
of the changelog under the new version, rewrites the other three places, and refuses to leave the
tree in a state that fails the registry's rules (:func:`entry_problems`, which the tests apply too).

Usage: python scripts/release.py VERSION [--date YYYY-MM-DD] [--root DIR]
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "acp-progress"
VERSION_FILE = Path("acp_adapter/_version.py")
ENTRY_DIR = Path("registry") / PACKAGE
CHANGELOG = Path("CHANGELOG.md")

#: the registry's id rule (its schema's pattern; its build script also wants it to be the directory)
ID_PATTERN = re.compile(r"^[a-z][a-z0-9-]*$")
#: a release version: MAJOR.MINOR.PATCH, no pre-release tag (the registry compares it to the package's)
VERSION_PATTERN = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
#: how the registry's build script reads the version pinned in a uvx package
PINNED_PATTERN = re.compile(r"[=@]+([\d.]+)")
ICON_SIZE = 16
ICON_COLOURS = frozenset({"currentcolor", "none", "inherit"})
_VERSION_LINE = re.compile(r'^__version__ = "([^"]*)"$', re.MULTILINE)


def current_version(root: Path) -> str:
    found = _VERSION_LINE.search((root / VERSION_FILE).read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit(f"{VERSION_FILE}: no __version__ line")
    return found.group(1)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _absolute_url(value: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and " " not in value


def icon_problems(svg: str) -> list[str]:
    """What the registry refuses in an icon: not 16×16 and square, a colour other than
    ``currentColor``/``none``/``inherit`` in a fill or stroke (attribute or style), no
    ``currentColor`` at all; and what an icon shown inside an editor must not carry (scripts,
    embedded images, links to elsewhere)."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        return [f"not well-formed SVG: {exc}"]
    problems: list[str] = []
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        problems.append(f"the root element is {root.tag}, not an SVG <svg>")
    width, height = root.get("width"), root.get("height")
    box = (root.get("viewBox") or "").split()
    if (width, height) != (str(ICON_SIZE), str(ICON_SIZE)):
        problems.append(f"width/height are {width}x{height}, not {ICON_SIZE}x{ICON_SIZE}")
    if box and box[2:] != [str(ICON_SIZE), str(ICON_SIZE)]:
        problems.append(f"the viewBox is {' '.join(box)}, not square {ICON_SIZE}x{ICON_SIZE}")
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag in ("script", "image", "foreignObject", "style"):
            problems.append(f"<{tag}> is not allowed in an icon")
        for name, value in element.attrib.items():
            local = name.rsplit("}", 1)[-1]
            if local == "href" or local.startswith("on"):
                problems.append(f"<{tag} {local}=…> is not allowed in an icon")
            if local in ("fill", "stroke") and value.strip().lower() not in ICON_COLOURS:
                problems.append(f'<{tag} {local}="{value}"> is a fixed colour (use currentColor or none)')
            if local == "style":
                for prop, colour in re.findall(r"\b(fill|stroke)\s*:\s*([^;]+)", value, re.IGNORECASE):
                    if colour.strip().lower() not in ICON_COLOURS:
                        problems.append(f"<{tag} style> sets {prop}: {colour.strip()} (use currentColor)")
    if "currentcolor" not in svg.lower():
        problems.append("the icon never uses currentColor (it would not follow the editor's theme)")
    return problems


def entry_problems(root: Path, schema: dict[str, Any] | None = None) -> list[str]:
    """Every way ``registry/acp-progress`` breaks the registry's schema (when given) or rules, or
    disagrees with the package it installs."""
    entry_dir = root / ENTRY_DIR
    entry = json.loads((entry_dir / "agent.json").read_text(encoding="utf-8"))
    problems: list[str] = []
    if schema is not None:
        import jsonschema

        validator = jsonschema.Draft7Validator(
            schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
        )
        for error in sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in error.absolute_path) or "the entry"
            problems.append(f"schema: {where}: {error.message}")
    for field in ("repository", "website", "license_url"):  # "format": "uri", which jsonschema
        value = entry.get(field)  # checks only with an extra package installed: checked here
        if value is not None and not _absolute_url(str(value)):
            problems.append(f"{field} {value!r} is not an absolute http(s) URL")
    version = current_version(root)
    entry_id = entry.get("id", "")
    if not ID_PATTERN.match(str(entry_id)) or entry_id != entry_dir.name:
        problems.append(
            f"id {entry_id!r} must match {ID_PATTERN.pattern} and the directory {entry_dir.name!r}"
        )
    if not VERSION_PATTERN.match(str(entry.get("version", ""))):
        problems.append(f"version {entry.get('version')!r} is not a semantic version MAJOR.MINOR.PATCH")
    if entry.get("version") != version:
        problems.append(f"version {entry.get('version')!r} is not the package's {version!r}")
    uvx = entry.get("distribution", {}).get("uvx", {})
    package = str(uvx.get("package", ""))
    if "latest" in package.lower():
        problems.append(f"the uvx package {package!r} names latest; pin the version")
    if package != f"{PACKAGE}=={version}":
        problems.append(f"the uvx package is {package!r}, not pinned as {PACKAGE}=={version}")
    pinned = PINNED_PATTERN.search(package)
    if pinned is None or pinned.group(1) != entry.get("version"):
        problems.append("the registry would read a different version from the uvx package")
    if uvx.get("args") != ["serve"]:
        problems.append(f"the uvx args are {uvx.get('args')!r}; the agent is started with ['serve']")
    icon = entry_dir / "icon.svg"
    if not icon.is_file():
        problems.append("icon.svg is missing")
    else:
        problems.extend(f"icon.svg: {p}" for p in icon_problems(icon.read_text(encoding="utf-8")))
    return problems


def bump_changelog(text: str, old: str, new: str, date: str) -> str:
    """The changelog with *Unreleased* moved under ``new`` (refused when nothing is unreleased)."""
    head = "## [Unreleased]"
    if head not in text:
        raise SystemExit(f"{CHANGELOG}: no '{head}' section")
    after = text.split(head, 1)[1]
    unreleased = after.split("\n## [", 1)[0]
    if not unreleased.strip():
        raise SystemExit(f"{CHANGELOG}: nothing under {head}; say what the release changes first")
    text = text.replace(head, f"{head}\n\n## [{new}] - {date}", 1)
    link = re.compile(
        r"^\[Unreleased\]: (?P<base>\S+)/compare/v(?P<old>[^.\s]+\.[^.\s]+\.[^.\s]+)\.\.\.HEAD$", re.M
    )
    found = link.search(text)
    if found is not None:
        base = found.group("base")
        text = link.sub(
            f"[Unreleased]: {base}/compare/v{new}...HEAD\n[{new}]: {base}/compare/v{old}...v{new}",
            text,
            count=1,
        )
    return text


def release(root: Path, new: str, date: str) -> list[Path]:
    """Write ``new`` everywhere; the files changed."""
    if not VERSION_PATTERN.match(new):
        raise SystemExit(f"{new!r} is not a release version MAJOR.MINOR.PATCH")
    old = current_version(root)
    if _key(new) <= _key(old):
        raise SystemExit(f"{new} is not after the current version {old}")
    changelog = root / CHANGELOG  # checked first: a refused bump writes nothing
    changelog_text = bump_changelog(changelog.read_text(encoding="utf-8"), old, new, date)
    version_file = root / VERSION_FILE
    version_file.write_text(
        _VERSION_LINE.sub(f'__version__ = "{new}"', version_file.read_text(encoding="utf-8"), count=1),
        encoding="utf-8",
    )
    agent_json = root / ENTRY_DIR / "agent.json"
    entry = json.loads(agent_json.read_text(encoding="utf-8"))
    entry["version"] = new
    entry["distribution"]["uvx"]["package"] = f"{PACKAGE}=={new}"
    agent_json.write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    changelog.write_text(changelog_text, encoding="utf-8")
    return [version_file, agent_json, changelog]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("version", help="the new version, MAJOR.MINOR.PATCH")
    parser.add_argument(
        "--date", default=datetime.date.today().isoformat(), help="release date (default today)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this one)")
    args = parser.parse_args(argv)
    schema = json.loads((args.root / "registry" / "agent.schema.json").read_text(encoding="utf-8"))
    before = entry_problems(args.root, schema)
    if before:
        print("the registry entry is wrong before the bump:\n  " + "\n  ".join(before), file=sys.stderr)
        return 1
    changed = release(args.root, args.version, args.date)
    after = entry_problems(args.root, schema)
    if after:
        print("the registry entry is wrong after the bump:\n  " + "\n  ".join(after), file=sys.stderr)
        return 1
    for path in changed:
        print(f"updated {path.relative_to(args.root)}")
    print(f"version {args.version}: commit, tag v{args.version}, build (python -m build) and publish")
    return 0


if __name__ == "__main__":
    sys.exit(main())
