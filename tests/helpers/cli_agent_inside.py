"""``python -m tests.helpers.cli_agent_inside ARGS`` (or the file run as a script): the command
line ``acp-progress ARGS`` as a real process (its terminal or pipes, its exit status, its signals)
whose front-end drives this project's agent inside that same process instead of spawning
``python -m acp_adapter``.

For front-end tests whose point is what ``watch``, ``chat``, ``sessions`` or ``agui`` show and how
they exit, where the agent is only "an agent to talk to": the agent's own process (its start, its process
group, its stdio framing) proves nothing there, and each one costs over a second of CPU to start
(the interpreter and the ACP SDK imported again). The front-end's code is the production code;
only the default agent's pipe and process are gone (see
:func:`tests.helpers.shared_servers.in_process_link_class`). An ``--agent`` naming another
command (a scripted or foreign agent) is still spawned as given.

A test about the agent's process (Ctrl-C reaching or not reaching it, its crash, its exit, its
tools' process group) must run ``python -m acp_adapter.cli`` instead."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = ["CLI_AGENT_INSIDE", "agent_inside", "main"]

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


def _in_process_link() -> Any:
    """The in-process link class, built with the agent side marked (see :data:`AGENT_SIDE`)."""
    from acp_adapter import server
    from acp_adapter.agent import routes
    from tests.helpers.shared_servers import in_process_link_class

    saved = routes.agent_connection, server.ProgressAgent
    routes.agent_connection = _agent_side_connection(saved[0])  # taken by the class built now
    server.ProgressAgent = _agent_side_agent(saved[1])  # type: ignore[misc]
    try:
        return in_process_link_class()
    finally:
        routes.agent_connection, server.ProgressAgent = saved  # type: ignore[misc]


@contextlib.contextmanager
def agent_inside() -> Iterator[None]:
    """Every ``AgentDriver`` built meanwhile for this project's agent (no command of its own:
    ``watch``, ``chat``, ``sessions``, the bridges; or its default command: ``agui``) drives it
    in this process; an ``--agent`` naming another command still spawns it. What the in-process
    agent logs stays off the front-end's stderr, as a spawned agent's does (:class:`_NotTheAgents`)."""
    from acp_adapter.client.agent_process import default_agent_command
    from acp_adapter.client.driver import AgentDriver

    link_class = _in_process_link()
    original = AgentDriver.__init__

    def init(self: Any, command: Any = None, **options: Any) -> None:
        original(self, command, **options)
        if not command or list(command) == default_agent_command():
            self.link.__class__ = link_class  # a subclass adding no state of its own: same layout

    AgentDriver.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        AgentDriver.__init__ = original  # type: ignore[method-assign]


def main() -> int:
    """Run the command line with this project's agent inside (see the module's doc)."""
    from acp_adapter.cli import main as cli_main

    with agent_inside():
        return cli_main()


if __name__ == "__main__":
    # run as a script (``python tests/helpers/cli_agent_inside.py ARGS``): the checkout, not this
    # script's folder, is where the imports are found
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    sys.argv[0] = "acp-progress"
    sys.exit(main())
