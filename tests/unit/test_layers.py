"""The package's architecture, checked: its layers import one way, nothing imports in a circle, and
only the command line knows the top-level ``run_agent.py`` script.

Imports are read from the source (lazy imports inside functions included, ``TYPE_CHECKING`` blocks
excluded), so a new import that crosses a layer fails here, in a second, rather than in review.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "acp_adapter"

#: Rank of each layer: a module may import its own layer and any layer of a lower rank.
#: Layers of the same rank are independent of each other (the tools do not know the store …).
RANKS: dict[str, int] = {
    # the base: no acp_adapter imports beyond each other
    "_version": 0,
    "errors": 0,
    "text": 0,
    "cancel": 0,
    "clock": 0,
    "_config_file": 0,
    "config": 0,
    "safety": 1,
    "protocol": 2,
    # pure ACP update builders, tools, durable state, summaries, the client side: side by side
    "tools": 3,
    "tooling": 3,
    "store": 3,
    "summary": 3,
    "client": 3,
    "models": 4,
    # the editor's MCP servers: connections (safety) and their tools as toolbox tools (tooling)
    "mcp": 4,
    "agent": 5,
    "events": 6,
    "server": 7,
    "frontends": 8,
    "cli": 9,
    "__main__": 10,
}

#: Layers a layer may never import, even where the ranks would allow it: the front-ends drive
#: agents through the client side, never through the agent's own internals.
FORBIDDEN: dict[str, frozenset[str]] = {
    "frontends": frozenset({"agent", "events", "server", "models"}),
}

#: The sanctioned crossings, with their reasons: the plain terminal is the routing order's last
#: channel of the agent loop itself (no ACP client at all), and beats its spinner line on the
#: agent's heartbeat scheduler.
ALLOWED_CROSSINGS = {
    ("acp_adapter.frontends.plain.printer", "acp_adapter.agent.heartbeat"),
    # the settings file is read only when it passes the ssh rule; private_path needs only the
    # standard library and errors (no cycle), and the file must be checked where it is opened
    ("acp_adapter._config_file", "acp_adapter.safety.private_path"),
}

BASE_LAYERS = {name for name, rank in RANKS.items() if rank == 0}


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


def _layer(module: str) -> str:
    return module.split(".")[1] if "." in module else "acp_adapter"


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


def test_every_layer_has_a_rank():
    layers = {_layer(name) for name in _modules()} - {"acp_adapter"}
    assert layers <= set(RANKS), f"give these layers a rank: {sorted(layers - set(RANKS))}"


def test_layers_import_one_way():
    wrong = []
    for name, targets in _graph().items():
        mine = _layer(name)
        if mine == "acp_adapter":
            continue  # the package's lazy facade (PEP 562) names its public API
        for target in sorted(targets):
            theirs = _layer(target)
            if theirs == mine or theirs == "acp_adapter" or (name, target) in ALLOWED_CROSSINGS:
                continue
            if mine in BASE_LAYERS and theirs in BASE_LAYERS:  # one layer of small modules
                continue
            if RANKS[theirs] >= RANKS[mine] or theirs in FORBIDDEN.get(mine, ()):
                wrong.append(f"{name} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


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


def test_the_check_sees_a_crossing_and_a_cycle(tmp_path):
    """The checker itself can fail: a safety module that imports the agent side is reported."""
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
            test_layers_import_one_way()
        except AssertionError as exc:
            assert "acp_adapter.safety.bad -> acp_adapter.agent.outbox" in str(exc)
        else:
            raise AssertionError("the crossing was not reported")
        try:
            test_no_import_cycles_lazy_imports_included()
        except AssertionError as exc:
            assert "acp_adapter.agent.outbox <-> acp_adapter.safety.bad" in str(exc)
        else:
            raise AssertionError("the cycle was not reported")
    finally:
        globals()["PACKAGE"] = Path(__file__).resolve().parents[2] / "acp_adapter"
        _imports.cache_clear()
