"""``python -m tests.helpers.cli_agent_inside ARGS``: the command line ``acp-progress ARGS`` as a
real process (its terminal or pipes, its exit status, its signals) whose front-end drives this
project's agent inside that same process instead of spawning ``python -m acp_adapter``.

For front-end tests whose point is what ``watch`` or ``chat`` show and how they exit,
where the agent is only "an agent to talk to": the agent's own process (its start, its process
group, its stdio framing) proves nothing there, and each one costs over a second of CPU to start
(the interpreter and the ACP SDK imported again). The front-end's code is the production code;
only the default agent's pipe and process are gone (see
:func:`tests.helpers.shared_servers.in_process_driver_class`). An ``--agent`` naming another
command (a scripted or foreign agent) is still spawned as given.

A test about the agent's process (Ctrl-C reaching or not reaching it, its crash, its exit, its
tools' process group) must run ``python -m acp_adapter.cli`` instead."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["CLI_AGENT_INSIDE", "choose_driver", "main"]

#: the module to run with ``python -m`` in place of ``acp_adapter.cli``
CLI_AGENT_INSIDE = "tests.helpers.cli_agent_inside"


def choose_driver() -> Any:
    """A stand-in for ``AgentDriver``: the in-process driver for this project's agent (no
    ``--agent``), the spawning driver for any other command."""
    from acp_adapter.client.driver import AgentDriver
    from tests.helpers.shared_servers import in_process_driver_class

    in_process = in_process_driver_class()

    def driver(command: Any = None, **options: Any) -> Any:
        if command is None:
            return in_process(None, **options)
        return AgentDriver(command, **options)

    return driver


def main() -> int:
    """Run the command line with the front-ends' driver replaced (see the module's doc)."""
    from acp_adapter.cli import main as cli_main
    from acp_adapter.frontends.watch import chat, watcher

    driver = choose_driver()
    for module in (watcher, chat):
        module.AgentDriver = driver  # type: ignore[attr-defined]
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
