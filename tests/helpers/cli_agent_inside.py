"""``python -m tests.helpers.cli_agent_inside ARGS``: the command line ``acp-progress ARGS`` as a
real process (its terminal or pipes, its exit status, its signals) whose front-end drives this
project's agent inside that same process instead of spawning ``python -m acp_adapter``.

For front-end tests whose point is what ``watch``, ``chat`` or ``sessions`` show and how they exit,
where the agent is only "an agent to talk to": the agent's own process (its start, its process
group, its stdio framing) proves nothing there, and each one costs over a second of CPU to start
(the interpreter and the ACP SDK imported again). The front-end's code is the production code;
only the default agent's pipe and process are gone (see
:func:`tests.helpers.shared_servers.in_process_driver_class`). An ``--agent`` naming another
command (a scripted or foreign agent) is still spawned as given.

A test about the agent's process (Ctrl-C reaching or not reaching it, its crash, its exit, its
tools' process group) must run ``python -m acp_adapter.cli`` instead."""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar
from typing import Any

__all__ = ["CLI_AGENT_INSIDE", "choose_driver", "main"]

#: the module to run with ``python -m`` in place of ``acp_adapter.cli``
CLI_AGENT_INSIDE = "tests.helpers.cli_agent_inside"


#: set in the in-process agent's tasks (and the tasks they start): what they log is the agent's
AGENT_SIDE: ContextVar[bool] = ContextVar("acp_progress_test_agent_side", default=False)


class _NotTheAgents(logging.Filter):
    """A spawned agent's log goes to its own stderr, which the driver keeps to itself (for its
    error messages and ``--agent-log``): the front-end's stderr never shows it. So the in-process
    agent's records are left out of the front-end's handlers too."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not AGENT_SIDE.get()


def _agent_side_connection(make: Any) -> Any:
    """``agent_connection`` whose listening runs as the agent (see :data:`AGENT_SIDE`)."""

    def connection(agent: Any, transport: Any) -> Any:
        conn = make(agent, transport)
        listen = conn.listen

        async def listen_as_the_agent() -> None:
            AGENT_SIDE.set(True)  # this task's own context: every request handled in it
            await listen()

        conn.listen = listen_as_the_agent
        return conn

    return connection


def _agent_side_agent(make: Any) -> Any:
    """``ProgressAgent`` built as the agent (what it logs while starting is the agent's)."""

    def agent(*args: Any, **kwargs: Any) -> Any:
        for handler in logging.getLogger().handlers:  # the front-end's, set up by now
            if not any(isinstance(f, _NotTheAgents) for f in handler.filters):
                handler.addFilter(_NotTheAgents())
        token = AGENT_SIDE.set(True)
        try:
            return make(*args, **kwargs)
        finally:
            AGENT_SIDE.reset(token)

    return agent


def choose_driver() -> Any:
    """A stand-in for ``AgentDriver``: the in-process driver for this project's agent (no
    ``--agent``), the spawning driver for any other command. What the in-process agent logs stays
    off the front-end's stderr, as a spawned agent's does (:class:`_NotTheAgents`)."""
    from acp_adapter import server
    from acp_adapter.agent import routes
    from acp_adapter.client.driver import AgentDriver
    from tests.helpers.shared_servers import in_process_driver_class

    saved = routes.agent_connection, server.ProgressAgent
    routes.agent_connection = _agent_side_connection(saved[0])  # taken by the class built now
    server.ProgressAgent = _agent_side_agent(saved[1])  # type: ignore[misc]
    try:
        in_process = in_process_driver_class()
    finally:
        routes.agent_connection, server.ProgressAgent = saved  # type: ignore[misc]

    def driver(command: Any = None, **options: Any) -> Any:
        if command is None:
            return in_process(None, **options)
        return AgentDriver(command, **options)

    return driver


def main() -> int:
    """Run the command line with the front-ends' driver replaced (see the module's doc)."""
    from acp_adapter.cli import main as cli_main
    from acp_adapter.client import driver as driver_module
    from acp_adapter.frontends.watch import chat, watcher

    driver = choose_driver()  # built from the real AgentDriver, before it is replaced
    for home in (watcher, chat, driver_module):  # ``sessions`` imports it when it runs
        home.AgentDriver = driver  # type: ignore[attr-defined]
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
