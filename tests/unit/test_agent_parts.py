"""The ACP agent answers methods by delegating to objects it holds, none borrowing another's
attributes: no class of the agent side is a mixin (a class body declaring, for the type checker
only, attributes another class supplies), the agent inherits from nothing, and every class and
function of the package (the agent side, the front-ends, the stores, the loop in ``run_agent.py``)
stays small enough to read.

Read from the source, so a mixin that creeps back fails here in a second, rather than in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "acp_adapter"
AGENT_SIDE = [*sorted((PACKAGE / "agent").glob("*.py")), PACKAGE / "server.py"]
#: every module the size limits hold for
EVERY_MODULE = [*sorted(PACKAGE.rglob("*.py")), PACKAGE.parent / "run_agent.py"]

#: a class's size limits: past them, a part of its job belongs in an object of its own
MAX_METHODS, MAX_LINES = 25, 300


def _classes(path: Path) -> list[ast.ClassDef]:
    return [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)]


def _borrows(cls: ast.ClassDef) -> bool:
    """An ``if TYPE_CHECKING:`` block in the class body: attributes declared for another's sake."""
    return any(isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for node in cls.body)


def test_no_class_of_the_agent_side_borrows_attributes() -> None:
    mixins = [f"{path.name}:{cls.name}" for path in AGENT_SIDE for cls in _classes(path) if _borrows(cls)]
    assert not mixins, f"classes declaring attributes another class supplies: {mixins}"


def test_the_agent_inherits_from_nothing_and_stays_small() -> None:
    (agent,) = [cls for cls in _classes(PACKAGE / "server.py") if cls.name == "ProgressAgent"]
    assert not agent.bases, f"ProgressAgent inherits from {[ast.unparse(b) for b in agent.bases]}"
    methods = [node for node in agent.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    lines = (agent.end_lineno or agent.lineno) - agent.lineno + 1
    assert len(methods) <= MAX_METHODS, f"ProgressAgent has {len(methods)} methods"
    assert lines <= MAX_LINES, f"ProgressAgent is {lines} lines long"


def test_the_check_sees_a_mixin() -> None:
    """The borrowing check itself can fail: a class declaring another's attributes is reported."""
    source = "class Methods:\n    if TYPE_CHECKING:\n        store: object\n    def f(self): ...\n"
    (cls,) = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ClassDef)]
    assert _borrows(cls)


#: a function past this many lines tells more than one step of its story
MAX_FUNCTION_LINES = 50


def test_every_class_stays_small() -> None:
    too_big = []
    for path in EVERY_MODULE:
        for cls in _classes(path):
            methods = [node for node in cls.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
            lines = (cls.end_lineno or cls.lineno) - cls.lineno + 1
            if len(methods) > MAX_METHODS or lines > MAX_LINES:
                where = path.relative_to(PACKAGE.parent)
                too_big.append(f"{where}:{cls.name} ({len(methods)} methods, {lines} lines)")
    assert not too_big, f"classes past {MAX_METHODS} methods or {MAX_LINES} lines: {too_big}"


def _length(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def test_every_function_reads_as_one_story() -> None:
    too_long = [
        f"{path.relative_to(PACKAGE.parent)}:{node.name} ({_length(node)} lines)"
        for path in EVERY_MODULE
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _length(node) > MAX_FUNCTION_LINES
    ]
    assert not too_long, f"functions past {MAX_FUNCTION_LINES} lines: {too_long}"
