"""The documentation site: its references are generated from the code and complete, every page is in
the navigation, and the README stays a short front page that links into it (the site itself is built
with ``mkdocs build --strict`` by .ci/run: a broken link or a page missing from the navigation fails)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from types import ModuleType

import pytest

from tests.helpers.acp_agent import ROOT

DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_are_what_the_code_generates() -> None:
    assert _generator().stale_pages() == [], "run: python scripts/gen_reference.py"


def test_every_setting_is_in_the_configuration_reference_with_its_variable_and_key() -> None:
    from acp_adapter.config import Settings

    page = (DOCS / "reference" / "configuration.md").read_text(encoding="utf-8")
    fields = list(Settings.fields())
    assert len(fields) > 40
    for dotted, info in fields:
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        table, _, key = dotted.rpartition(".")
        row = next(
            (line for line in page.splitlines() if line.startswith(f"| `{key}` | `{extra['env']}`")), None
        )
        assert row is not None, f"{dotted} ({extra['env']}) is missing"
        section = page.split(f"## `[{table}]`" if table else "## Top level", 1)[1].split("\n## ", 1)[0]
        assert row in section, f"{dotted} is not under its table"
        assert info.description and _generator()._cell(info.description) in row


def test_a_missing_setting_would_be_caught() -> None:
    generator = _generator()
    page = generator.configuration_page()
    assert "| `heartbeat_interval` | `ACP_PROGRESS_HEARTBEAT_INTERVAL` |" in page
    assert "`api_key`" in page and "(set)" not in page.split("`api_key`", 1)[1].split("\n", 1)[0]


def _commands(parser: argparse.ArgumentParser, prefix: str) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(prefix, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, f"{prefix} {name}")
    return found


def test_every_command_and_flag_is_in_the_command_line_reference() -> None:
    from acp_adapter.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    commands = _commands(build_parser(), "acp-progress")
    assert len(commands) > 12
    for name, parser in commands:
        heading = f"# `{name}`"
        assert heading in page or name == "acp-progress", f"{name} is missing"
        body = page.split(heading, 1)[1] if name != "acp-progress" else page
        body = body.split("\n#", 1)[0] if name != "acp-progress" else body
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
                continue
            for option in action.option_strings:
                if option in ("-h", "--help"):
                    continue
                assert f"`{option}`" in body, f"{name} {option} is missing"


def test_every_public_name_has_an_api_entry() -> None:
    import acp_adapter

    page = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    for name in acp_adapter.__all__:
        if not name.startswith("__"):
            assert f"::: acp_adapter.{name}\n" in page, name


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(set(nav)) == len(nav)


def test_the_readme_is_short_and_links_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target
    for page in ("getting-started.md", "security.md", "configuration.md", "embedding.md", "design.md"):
        assert f"(docs/{page})" in readme, page


def test_links_between_pages_point_at_pages_that_exist() -> None:
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).resolve().is_file(), f"{page.relative_to(ROOT)} → {target}"


def test_no_placeholder_page() -> None:
    for page in DOCS.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"^(?:TODO|TBD|FIXME|XXX)\b", text, re.M), page
        assert len(text.split()) > 60, f"{page} is too thin to be a page"


def test_the_pages_cite_no_issue_number() -> None:
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bissue \d+\b", text, re.I), page
