"""A front-end process whose agent runs inside it: ``python tests/helpers/frontend_with_inprocess_agent.py
<acp-progress arguments>`` is ``acp-progress <arguments>`` where this project's agent is served in the
front-end's own process (:func:`tests.helpers.shared_servers.in_process_driver_class`) instead of
being spawned.

For tests about what a front-end process shows on its terminal (its real stdout, stderr and pty):
the front-end keeps its process, the agent behind it — whose process is not what such a test is
about — does not, which saves each run the agent's start (about a second of CPU importing the ACP
SDK). An ``--agent`` command (a foreign agent) is still spawned: there the process is the point.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def serve_agents_in_process() -> None:
    """Every AgentDriver built from now on for this project's agent (no command of its own) drives
    it in this process."""
    from acp_adapter.client import driver as driver_module
    from tests.helpers.shared_servers import in_process_driver_class

    in_process = in_process_driver_class()
    original_init = driver_module.AgentDriver.__init__

    def init(self: Any, command: Any = None, *args: Any, **kwargs: Any) -> None:
        original_init(self, command, *args, **kwargs)
        if not command:  # this project's agent; a foreign ``--agent`` keeps its process
            self.__class__ = in_process  # a subclass adding no state of its own: same layout

    driver_module.AgentDriver.__init__ = init  # type: ignore[method-assign]


def main() -> int:
    sys.path[0] = str(ROOT)  # the checkout, not this script's folder (whose names would shadow others)
    serve_agents_in_process()
    from acp_adapter.cli import main as cli_main

    sys.argv = ["acp-progress", *sys.argv[1:]]
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
