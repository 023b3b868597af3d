"""The started agent as the client sees it: its process, the ACP connection over its stdio, and
the ``initialize`` handshake.

Why a module of its own: starting an agent fails in ways that have nothing to do with sessions or
turns — the command is not an ACP agent, it wrote something else on stdout, it exited, it never
answered — and each failure gets one message that says which, with the agent's last stderr lines.
The same goes for a connection that breaks later (:meth:`AgentLink.crash_error`). The process
itself is :class:`~.agent_process.AgentProcess`, the message framing :class:`~.transport.AgentTransport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent
from acp.schema import ClientCapabilities, Implementation, InitializeResponse

from acp_adapter._version import __version__
from acp_adapter.client.agent_errors import AgentCrashed, AgentError, AgentStartError, describe_error
from acp_adapter.client.agent_process import AgentProcess
from acp_adapter.client.procgroup import exit_status_within
from acp_adapter.client.transport import AgentTransport
from acp_adapter.protocol import StreamLimits
from acp_adapter.protocol.cancel_request import OutgoingRequestIds, call_off_if_given_up


class AgentLink:
    """One agent process and the ACP connection to it (started by :meth:`start`, ended by
    :meth:`close`); ``gate`` is awaited before the transport reads each message (flow control)."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str | None,
        stderr_log: str | os.PathLike[str] | None,
        limits: StreamLimits,
        init_timeout: float,
        client_name: str,
        client_capabilities: ClientCapabilities,
    ) -> None:
        self.argv = argv
        self.env = dict(env)
        self.cwd = cwd
        self.stderr_log = stderr_log
        self.limits = limits
        self.init_timeout = init_timeout
        self.client_name = client_name
        self.client_capabilities = client_capabilities
        #: the agent as an operating-system process (its group, its stderr, its exit)
        self._agent = AgentProcess(argv)
        self._conn: Any = None
        self._transport: AgentTransport | None = None
        #: which task sent which request (set when the agent starts)
        self.requests: OutgoingRequestIds | None = None

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The agent's process once started (None before)."""
        return self._agent.process

    @property
    def connection(self) -> Any:
        """The SDK's client-side connection to the agent."""
        if self._conn is None:
            raise AgentError("the agent is not started")
        return self._conn

    @property
    def exit_code(self) -> int | None:
        """The agent's exit status once its process ended; None while it runs (or before it started)."""
        return self._agent.returncode

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the agent wrote on stderr, redacted."""
        return self._agent.stderr_tail

    async def start(self, client: Any, gate: Callable[[], Awaitable[None]]) -> InitializeResponse:
        """Spawn the agent in its own process group, answering its calls with ``client``, and
        complete ``initialize``. The caller closes the link when this raises."""
        await self._spawn(client, gate)
        return await self._initialize()

    async def _spawn(self, client: Any, gate: Callable[[], Awaitable[None]]) -> None:
        process = await self._agent.spawn(self.env, self.cwd, self.stderr_log)
        self._transport = AgentTransport(process, self.limits, gate=gate)
        self.requests = OutgoingRequestIds(self._transport)
        # questions (elicitation/create) are an unstable method of this SDK's client side: routed
        self._conn = connect_to_agent(client, self.requests, use_unstable_protocol=True)

    async def _initialize(self) -> InitializeResponse:
        assert self.process is not None
        init = asyncio.ensure_future(
            self._conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=self.client_capabilities,
                client_info=Implementation(
                    name=self.client_name, title=self.client_name, version=__version__
                ),
            )
        )
        # the agent's own exit status: Process.wait() would also wait for a child it left holding
        # its pipes, and the start would fail only at the time-out, saying nothing of the exit
        exited = asyncio.ensure_future(exit_status_within(self.process, math.inf))  # cancelled below
        try:
            done, _ = await asyncio.wait(
                {init, exited}, timeout=self.init_timeout, return_when="FIRST_COMPLETED"
            )
        except asyncio.CancelledError:
            init.cancel()  # the caller gave up (Ctrl-C while starting): no orphaned request task
            raise
        finally:
            exited.cancel()
        name = self.argv[0]
        if init in done:
            try:
                return init.result()
            except RequestError as exc:
                said = describe_error(exc)
                raise AgentStartError(
                    f"{name} is not an ACP agent: it answered initialize with an error ({said})"
                    f"{self._skipped_hint()}"
                ) from None
            except Exception:
                pass  # the connection broke: the process is exiting; report that below
        init.cancel()
        if not done:
            raise AgentStartError(
                f"{name} did not answer initialize within {self.init_timeout:g}s; is it an ACP agent?"
                f"{self._skipped_hint()}{self._agent.stderr_hint()}"
            )
        code = await self._agent.exit_code_within()
        raise AgentStartError(
            f"the agent {name} exited{f' with code {code}' if code is not None else ''} before answering "
            f"initialize{self._skipped_hint()}{self._agent.stderr_hint()}"
        )

    def _skipped_hint(self) -> str:
        if self._transport is None or not self._transport.skipped:
            return ""
        return f"; it wrote non-ACP output on stdout: {self._transport.skipped[0]!r}"

    async def ask(self, request: Any) -> Any:
        """A request of the agent that, should the front-end give up on it, is called off on the
        agent's side too (``$/cancel_request``)."""
        return await call_off_if_given_up(self._conn, self.requests, request)

    async def crash_error(self, exc: BaseException) -> AgentCrashed:
        """Turn a broken connection into a message that says what happened to the agent."""
        code = await self._agent.exit_code_within(wait=1.0)
        hint = self._agent.stderr_hint()
        if code is not None:
            return AgentCrashed(f"the agent exited with code {code} during the turn{hint}")
        return AgentCrashed(f"the connection to the agent broke during the turn ({exc}){hint}")

    async def close(self, grace: float = 2.0) -> None:
        """Close the connection, then the process group: EOF on stdin, then SIGTERM, then SIGKILL."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        await self._agent.end(grace)
