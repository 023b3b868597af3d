"""Write the package's bytecode before a start-up benchmark, as ``pip install`` does for a wheel.

The SDK and the other dependencies sit compiled in site-packages; a checkout of this package may
not be, and where ``PYTHONDONTWRITEBYTECODE`` is set (build machines often set it) no run ever
writes its ``.pyc`` files, so every start would compile about a hundred modules from source —
a figure about the machine, not about the agent. Benchmarks of start-up call :func:`compile_package`
first, so both sides of a ratio start from bytecode.
"""

from __future__ import annotations

import compileall
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_package(*more: Path) -> None:
    """Compile ``acp_adapter``, ``run_agent.py`` and the folders ``more`` (the test suite adds its
    test agents) into their ``__pycache__``, quietly."""
    for tree in (ROOT / "acp_adapter", *more):
        compileall.compile_dir(tree, quiet=1)
    compileall.compile_file(ROOT / "run_agent.py", quiet=1)
