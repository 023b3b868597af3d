"""In-process agents and shared servers for the slower front-end and MCP test modules.

:func:`tests.helpers.shared_agent.served_inprocess` (and
:func:`~tests.helpers.shared_agent.progress_agent`) serve the agent in this process where its
process proves nothing (its exit, signals or stdio framing are not the point): it saves the ~1 s of
CPU each agent process pays to import the ACP SDK.

:func:`cli_in_process` is the command line without a process for commands that end before anything starts, and
:func:`use_in_process_agents` makes the bridges' agent driver talk to an in-process agent."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = [
    "cli_in_process",
    "drive_own_agent_in_process",
    "in_process_link_class",
    "use_in_process_agents",
]


@contextlib.contextmanager
def cli_in_process() -> Iterator[Any]:
    """``acp_adapter.cli.main`` for this process, for command lines that end before any agent
    or server starts (a refused flag, a bad file): the process start (~1 s of CPU) proves
    nothing there. The streams ``main`` wraps and the logging it sets up are put back after."""
    import logging
    import sys

    from acp_adapter.cli import main

    streams = sys.stdout, sys.stderr
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield main
    finally:
        sys.stdout, sys.stderr = streams
        root.handlers[:] = handlers
        root.setLevel(level)


class _InProcessAgent:
    """What :class:`InProcessLink` shows where an :class:`AgentLink` has its process: the
    agent "runs" until the driver closes it (``returncode`` None until then)."""

    def __init__(self) -> None:
        import asyncio

        self.pid = 0  # no process of its own (never signalled: the driver's close is overridden)
        self.returncode: int | None = None
        self._ended = asyncio.Event()

    async def wait(self) -> int:
        await self._ended.wait()
        assert self.returncode is not None
        return self.returncode

    def end(self) -> None:
        self.returncode = 0
        self._ended.set()


def in_process_link_class(make_agent: Any = None) -> Any:
    """An :class:`~acp_adapter.client.agent_link.AgentLink` whose agent is this project's
    ProgressAgent in this process, over the SDK's in-memory transports, with the settings the
    link's environment gives it (the same ``ACP_PROGRESS_*`` a spawned agent would read) — or
    the agent ``make_agent()`` returns (a test agent of ``tests/agents``, run in this process).

    For front-end tests where the agent is only "an agent to talk to" (a chat platform's fake,
    its retries and refusals are what is tested): it saves each test the ~1 s of CPU an agent
    process pays to import the ACP SDK. The front-end side — the driver's sessions, turns,
    permission questions and updates — is the production code; only the pipe and the process
    are gone (so no test of a crash, a signal or stdio framing may use it)."""
    import asyncio

    from acp import connect_to_agent
    from acp.agent.connection import AgentSideConnection

    from acp_adapter.agent.routes import agent_connection
    from acp_adapter.client.agent_link import AgentLink
    from acp_adapter.config import Settings
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    class InProcessLink(AgentLink):
        _in_process: Any = None  # the ProgressAgent
        _agent_conn: Any = None
        _listening: Any = None

        async def _spawn(self, client: Any, gate: Any) -> None:
            import os

            from acp._transport import memory_transport_pair

            agent_end, client_end = memory_transport_pair()
            if make_agent is not None:  # a test agent: the SDK's own connection, as run_agent makes it
                self._in_process = make_agent()
                self._agent_conn = AgentSideConnection(self._in_process, agent_end, listening=False)
            else:
                settings = Settings.load({**os.environ, **self.env}, flags={})
                self._in_process = ProgressAgent(settings, turn_runner=AIAgent)
                self._agent_conn = agent_connection(self._in_process, agent_end)
            self._listening = asyncio.ensure_future(self._agent_conn.listen())
            self._agent.process = _InProcessAgent()  # type: ignore[assignment]
            # as the link connects: its client side takes questions (an unstable ACP method)
            self._conn = connect_to_agent(client, client_end, use_unstable_protocol=True)

        async def close(self, grace: float = 2.0) -> None:
            shown = self._agent.process
            self._agent.process = None  # nothing to signal: the parent closes the connection
            try:
                await super().close(grace)
                if self._in_process is not None:
                    hang_up = getattr(self._in_process, "hang_up", None)  # this project's agent's
                    if hang_up is not None:
                        await hang_up(grace)  # as serve at the end of input
                    await self._agent_conn.close()
                if self._listening is not None:
                    self._listening.cancel()
                    await asyncio.wait({self._listening})  # ended; its outcome is not ours to raise
            finally:
                self._agent.process = shown
                if isinstance(shown, _InProcessAgent):
                    shown.end()

    return InProcessLink


def drive_own_agent_in_process(
    monkeypatch: Any, owner: Any, is_own_agent: Any, make_agent: Any = None
) -> None:
    """Make every driver ``owner._make_driver`` builds from now on drive this project's agent (or
    the one ``make_agent()`` returns) in this process (see :func:`in_process_link_class`) when
    ``is_own_agent(owner_instance)`` says it runs that agent; any other agent still spawns."""
    in_process = in_process_link_class(make_agent)
    make_process_driver = owner._make_driver

    def make_driver(self: Any) -> Any:
        driver = make_process_driver(self)  # the owner's own arguments, whatever they become
        if is_own_agent(self):
            driver.link.__class__ = in_process  # a subclass adding no state of its own: same layout
        return driver

    monkeypatch.setattr(owner, "_make_driver", make_driver)


def use_in_process_agents(monkeypatch: Any) -> None:
    """Every BridgeRunner built from now on that runs this project's agent drives it in this
    process (a bridge's own test agent still spawns)."""
    from acp_adapter.frontends.bridges.runner import BridgeRunner

    drive_own_agent_in_process(monkeypatch, BridgeRunner, lambda runner: not runner.instance.agent)
