"""Run one of ``scripts/*.py`` inside the test's process, as ``python scripts/NAME ARGS`` runs it.

For the smoke runs of the benchmark scripts, whose point is what they measure — the agents and
clients they start, their baselines, the figures they print — not the process the script itself
runs in: that process only costs an interpreter start and the ACP SDK imported again (about 0.8 s
of CPU a run). The script's file runs as ``__main__`` with its arguments in ``sys.argv`` and
``scripts/`` first on the import path and the checkout as its working directory; what it prints
is captured, and what it changes of the process (the environment, the import path, the working
directory) is put back afterwards.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import sys

from tests.helpers.acp_agent import ROOT

__all__ = ["SCRIPTS", "run_script_inside"]

SCRIPTS = ROOT / "scripts"


def run_script_inside(name: str, *args: str) -> str:
    """Run ``scripts/NAME`` with ``args`` to its end; what it printed. A non-zero exit status (or
    an exception escaping the script) fails with what the script wrote to stderr."""
    path = SCRIPTS / name
    saved_argv, saved_path, saved_env, saved_cwd = sys.argv, list(sys.path), dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(SCRIPTS))
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
    assert code in (0, None), f"{name} exited {code}: {err.getvalue()[-3000:]}"
    return out.getvalue()
