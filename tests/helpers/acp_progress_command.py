"""The ``acp-progress`` command lines the process tests run: the installed command as a user runs
it, and the command as a process of its own with this project's agent inside that process
(:mod:`tests.helpers.cli_agent_inside`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.helpers.cli_agent_inside import CLI_AGENT_INSIDE


def acp_progress() -> list[str]:
    """The ``acp-progress`` script installed beside this interpreter, else ``python -m acp_adapter``."""
    found = shutil.which("acp-progress", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "acp_adapter"]


#: ``acp-progress`` as a process of its own, driving this project's agent inside that process
AGENT_INSIDE = [sys.executable, "-m", CLI_AGENT_INSIDE]
