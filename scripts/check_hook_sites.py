#!/usr/bin/env python3
"""AST check of the hook sites: ``AIAgent`` has exactly three ``self.agent_progress_callback(`` call sites,
each inside the body of a ``try`` whose handler catches ``Exception`` and does not re-raise.

Usage: python scripts/check_hook_sites.py [path/to/run_agent.py]   (exit 0 = ok, 1 = violations)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

EXPECTED = 3
TARGET = "agent_progress_callback"


def _is_hook_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == TARGET
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )


def _catches_exception(handler: ast.ExceptHandler) -> bool:
    kind = handler.type
    names: list[ast.expr] = []
    if kind is None:
        return True
    names = list(kind.elts) if isinstance(kind, ast.Tuple) else [kind]
    catches = any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException") for n in names)
    reraises = any(isinstance(stmt, ast.Raise) for stmt in ast.walk(handler))
    return catches and not reraises


def _guarded(call: ast.Call, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when an enclosing ``try`` (up to the class) has the call in its body and swallows Exception."""
    child: ast.AST = call
    node = parents.get(call)
    while node is not None and not isinstance(node, ast.ClassDef):
        in_body = isinstance(node, ast.Try) and any(child is stmt for stmt in node.body)
        if in_body and any(_catches_exception(h) for h in node.handlers):  # type: ignore[union-attr]
            return True
        child, node = node, parents.get(node)
    return False


def check(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [f"{path}: does not parse: {exc}"]
    agent = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AIAgent"), None)
    if agent is None:
        return [f"{path}: no top-level class AIAgent"]
    parents: dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(agent):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    calls = [n for n in ast.walk(agent) if _is_hook_call(n)]
    problems: list[str] = []
    body_src = ast.get_source_segment(source, agent) or ""
    textual = body_src.count(f"self.{TARGET}(")
    if len(calls) != EXPECTED or textual != EXPECTED:
        problems.append(
            f"{path}: expected {EXPECTED} hook sites 'self.{TARGET}(' in AIAgent, "
            f"got {len(calls)} calls ({textual} textual occurrences)"
        )
    for call in calls:
        if not _guarded(call, parents):
            problems.append(
                f"{path}:{call.lineno}: 'self.{TARGET}(' is not inside a try whose handler swallows Exception"
            )
    return problems


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "run_agent.py"
    if not path.is_file():
        print(f"check_hook_sites: {path} not found", file=sys.stderr)
        return 1
    problems = check(path)
    if problems:
        for line in problems:
            print(line, file=sys.stderr)
        return 1
    print(f"ok: {path.name} has {EXPECTED} guarded hook sites in AIAgent")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
