"""The package's architecture, checked: every layer is under the import-linter contracts (which check
that layers import one way: ``lint-imports``, run by .ci/run), nothing imports in a circle, and only
the command line knows the top-level ``run_agent.py`` script.

Imports are read from the source (lazy imports inside functions included, ``TYPE_CHECKING`` blocks
excluded), so a new import that crosses a layer fails here, in a second, rather than in review.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "acp_adapter"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[dotted.removesuffix(".__init__")] = path
    return found


@cache
def _imports(path: Path) -> frozenset[str]:
    """Every module named by an import in ``path``, outside ``if TYPE_CHECKING:`` blocks."""
    names: set[str] = set()
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for top in ast.parse(path.read_text()).body:
        if isinstance(top, ast.If) and "TYPE_CHECKING" in ast.unparse(top.test):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
    return frozenset(names)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {
            target
            for target in _imports(path)
            if target in modules
            and target != name
            # a package and its own modules may import each other (``__init__`` re-exports)
            and not name.startswith(target + ".")
            and not target.startswith(name + ".")
        }
    return graph


def _contract_layers() -> set[str]:
    """Every module named in the import-linter contracts of pyproject.toml."""
    import tomllib

    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]
    named: set[str] = set()
    for contract in config["contracts"]:
        for entry in contract.get("layers", []):
            named.update(part.strip() for part in entry.replace("|", ":").split(":"))
    return named


def test_every_layer_is_in_the_import_contracts():
    """import-linter checks the layers named in pyproject.toml; a new package or top-level module
    that is in none of them would be checked by nothing."""
    layers = {name.split(".")[1] for name in _modules() if "." in name}
    missing = sorted(
        f"acp_adapter.{layer}" for layer in layers if f"acp_adapter.{layer}" not in _contract_layers()
    )
    assert not missing, f"add these to [tool.importlinter] in pyproject.toml: {missing}"


def test_no_module_imports_the_package_facade():
    """``import acp_adapter`` is the public API; the package's own modules name what they use
    directly, so importing one never imports the whole facade's targets in a circle."""
    offenders = [
        name
        for name, path in _modules().items()
        if name != "acp_adapter" and "acp_adapter" in _imports(path) - {"acp_adapter._version"}
    ]
    assert not offenders


def test_no_import_cycles_lazy_imports_included():
    graph = _graph()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    cycles = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if reaches(b, a)})
    assert not cycles, "import cycles: " + "; ".join(f"{a} <-> {b}" for a, b in cycles)


def test_only_the_command_line_imports_the_agent_loop_script():
    importers = sorted(name for name, path in _modules().items() if "run_agent" in _imports(path))
    assert importers and all(name.startswith("acp_adapter.cli.") for name in importers), importers


def test_the_top_level_keeps_at_most_twelve_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top
    for kept in ("tools.py", "events.py", "server.py"):  # the design card's three
        assert kept in top


def test_the_check_sees_a_cycle(tmp_path):
    """The cycle check itself can fail: a safety module and an agent module importing each other
    (one lazily) are reported."""
    fake = tmp_path / "acp_adapter"
    (fake / "safety").mkdir(parents=True)
    (fake / "agent").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "safety" / "__init__.py").write_text("")
    (fake / "agent" / "__init__.py").write_text("")
    (fake / "agent" / "outbox.py").write_text("from acp_adapter.safety.bad import x\n")
    (fake / "safety" / "bad.py").write_text("def f():\n    from acp_adapter.agent.outbox import y\n")
    globals()["PACKAGE"] = fake
    try:
        _imports.cache_clear()
        try:
            test_no_import_cycles_lazy_imports_included()
        except AssertionError as exc:
            assert "acp_adapter.agent.outbox <-> acp_adapter.safety.bad" in str(exc)
        else:
            raise AssertionError("the cycle was not reported")
    finally:
        globals()["PACKAGE"] = Path(__file__).resolve().parents[2] / "acp_adapter"
        _imports.cache_clear()


def test_the_client_side_imports_in_no_circle_even_for_type_checking():
    """A turn is what the driver starts, so ``client.turn`` names what it needs of a driver as a
    protocol and the driver imports the turn one way; a circle hidden in a ``TYPE_CHECKING`` block
    still ties the two modules' changes together."""
    client = {name: path for name, path in _modules().items() if name.startswith("acp_adapter.client.")}
    graph = {
        name: {
            target
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module
            for target in (node.module, *(f"{node.module}.{alias.name}" for alias in node.names))
            if target in client and target != name
        }
        for name, path in client.items()
    }
    circles = sorted({tuple(sorted((a, b))) for a in graph for b in graph[a] if a in graph.get(b, ())})
    assert not circles, circles


def test_a_tool_call_has_one_home():
    """``ToolCall`` lives in ``tooling.calls``; the package's own modules import it from there, and
    only the public ``acp_adapter.models`` hands it on (a model back-end builds tool calls)."""
    import acp_adapter.models
    import acp_adapter.models.base
    from acp_adapter.tooling.calls import ToolCall

    assert acp_adapter.models.ToolCall is ToolCall
    assert not hasattr(acp_adapter.models.base, "ToolCall")
    handed_on = {"acp_adapter.models.ToolCall", "acp_adapter.models.base.ToolCall"}
    importers = sorted(name for name, path in _modules().items() if handed_on & _imports(path))
    assert not importers, importers
