"""Tests a maintainer can find: what several test modules share lives in the ``tests/helpers``
package (plain helpers) or a ``conftest.py`` (fixtures), never in a test module or a conftest that
others import. Importing a test module drags its fixtures and module-level set-up into the
importer, and hides the shared thing where nobody looks for it."""

from __future__ import annotations

import ast

import pytest

from tests.helpers.acp_agent import ROOT

TESTS = ROOT / "tests"
TEST = "test_"


def _is_test_or_conftest(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return module.split(".", 1)[0] == "tests" and (last.startswith("test_") or last == "conftest")


def _imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """Every module ``source`` (a module of ``package``) imports, absolute or relative, at the top
    or inside a function, with its line; ``from tests.a import test_b`` counts as importing
    ``tests.a.test_b``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _offending(source: str, package: str) -> list[str]:
    return [module for _line, module in _imported_modules(source, package) if _is_test_or_conftest(module)]


@pytest.mark.parametrize(
    "source",
    [
        # (built, so that a grep for such imports finds none here, nor in the compiled module)
        f"from tests.mcp.{TEST}mcp_e2e import kit",
        f"import tests.unit.{TEST}events",
        "from tests.unit import test_events",
        "from .test_events import Sink",
        "from ..mcp.test_mcp_e2e import kit",
        "from tests.conftest import pg_url",
        "def f():\n    from tests.agui.conftest import page",
    ],
)
def test_every_spelling_of_importing_a_test_module_or_a_conftest_is_seen(source: str) -> None:
    assert _offending(source, "tests.unit")


@pytest.mark.parametrize(
    "source", ["from tests.helpers.acp_agent import ROOT", "from .helpers import x", "import testing_tools"]
)
def test_importing_a_helper_is_not_an_offence(source: str) -> None:
    assert _offending(source, "tests") == []


def test_no_test_module_or_conftest_imports_a_test_module_or_a_conftest() -> None:
    offences = [
        f"{path.relative_to(ROOT)}: imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        if "node_modules" not in path.parts
        for module in _offending(
            path.read_text(encoding="utf-8"), ".".join(path.relative_to(ROOT).parent.parts)
        )
    ]
    assert not offences, (
        "move what test modules share into tests/helpers (plain helpers) or the narrowest "
        "conftest.py (fixtures):\n" + "\n".join(offences)
    )
