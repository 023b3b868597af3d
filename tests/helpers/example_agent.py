"""examples/embed_own_agent.py's agent built in this process as its own process would build it.

For tests of what the example agent does (its cards, its heartbeats, its cancel), where its process
proves nothing: the README command that starts it as a process is tested on its own. The example
reads its settings from the environment when its module runs, so the module is run afresh with the
given environment (and none of this process's own ``ACP_PROGRESS_*`` settings), not as
``__main__`` (which would serve it on this process's stdio)."""

from __future__ import annotations

import os
import runpy
from typing import Any

from tests.helpers.acp_agent import ROOT

__all__ = ["EXAMPLE", "example_agent"]

EXAMPLE = str(ROOT / "examples" / "embed_own_agent.py")


def example_agent(monkeypatch: Any, env: dict[str, str]) -> Any:
    """A fresh ``EchoAgent`` of the example, its module run with ``env`` as its settings'
    environment (``monkeypatch``: a pytest ``MonkeyPatch``, undone by the caller)."""
    for key in [k for k in os.environ if k.startswith("ACP_PROGRESS_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return runpy.run_path(EXAMPLE)["EchoAgent"]()
