"""The one client driver: talk to any ACP agent the way an editor does.

Every front-end (``watch``, the chat bridges, the AG-UI endpoint) drives its agent through
:class:`AgentDriver`, so "spawn, initialize, open a session, prompt, stream the updates, answer
permission requests, cancel, shut down" has one implementation with one set of failure messages.

:class:`AgentDriver` is the one object a front-end holds; it composes parts with one job each: the
started agent — its process, connection and ``initialize`` (:class:`~.agent_link.AgentLink`) —,
the session requests and what the agent said about its sessions
(:class:`~.session_requests.SessionRequests`, :attr:`AgentDriver.sessions`), the running turns,
the routing of updates and the read flow control (:class:`~.turn_router.TurnRouter`), and the
answers to the agent's own calls: permission requests and questions
(:class:`~.agent_calls.AgentCalls`). Their neighbours: the process (:mod:`.agent_process`), the
message-level transport that turns a non-ACP agent's output into a clear error
(:mod:`.transport`), a prompt's :class:`~.turn.Turn`, the permission policies
(:mod:`.permissions`) and the errors (:mod:`.agent_errors`). Front-ends import all of them from here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp.helpers import SessionUpdate
from acp.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    InitializeResponse,
    SessionInfo,
)

from acp_adapter.client.agent_calls import AgentCalls
from acp_adapter.client.agent_errors import (
    AgentCrashed,
    AgentError,
    AgentLogError,
    AgentStartError,
    PromptRefused,
    TurnInProgress,
    describe_error,
)
from acp_adapter.client.agent_link import AgentLink
from acp_adapter.client.agent_process import default_agent_command, parse_agent_command
from acp_adapter.client.permissions import (
    AUTOMATIC_META,
    PermissionPolicy,
    PermissionRequest,
    allow_all,
    deny_all,
    permission_response,
    with_surface,
)
from acp_adapter.client.questions import QuestionPolicy, decline_all
from acp_adapter.client.session_requests import McpServer, SessionRequests
from acp_adapter.client.turn import PromptBlock, Turn
from acp_adapter.client.turn_router import TurnRouter
from acp_adapter.protocol import StreamLimits

#: the names front-ends import from here (the errors, permissions and turns among them, each
#: defined in :mod:`.agent_errors`, :mod:`.permissions` and :mod:`.turn`)
__all__ = [
    "AUTOMATIC_META",
    "AgentCrashed",
    "AgentDriver",
    "AgentError",
    "AgentLogError",
    "AgentStartError",
    "PermissionPolicy",
    "PermissionRequest",
    "PromptBlock",
    "PromptRefused",
    "Turn",
    "TurnInProgress",
    "allow_all",
    "default_agent_command",
    "deny_all",
    "describe_error",
    "parse_agent_command",
    "permission_response",
    "with_surface",
]


def _offered_capabilities(
    given: ClientCapabilities | None, question_policy: QuestionPolicy | None
) -> ClientCapabilities:
    """What the driver tells the agent it can do: a driver that answers questions offers elicitation
    (form and URL) unless the caller said otherwise."""
    capabilities = given or ClientCapabilities()
    if question_policy is None or capabilities.elicitation is not None:
        return capabilities
    offered = ElicitationCapabilities(form=ElicitationFormCapabilities(), url=ElicitationUrlCapabilities())
    return capabilities.model_copy(update={"elicitation": offered})


class AgentDriver:
    """One ACP agent process, driven as an editor would drive it (an async context manager).

    With a ``question_policy`` the driver offers form and link questions (ACP elicitation) in
    ``initialize``; without one, every question is declined."""

    def __init__(
        self,
        command: str | Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        permission_policy: PermissionPolicy = deny_all,
        init_timeout: float = 30.0,
        stderr_log: str | os.PathLike[str] | None = None,
        client_name: str = "acp-progress",
        client_capabilities: ClientCapabilities | None = None,
        on_stray_update: Callable[[str, SessionUpdate], None] | None = None,
        limits: StreamLimits | None = None,
        mcp_servers: Sequence[McpServer] = (),
        question_policy: QuestionPolicy | None = None,
        close_grace: float = 2.0,
    ) -> None:
        self.argv = parse_agent_command(command)
        #: seconds the close gives the agent: half to exit on its closed stdin, then each of
        #: SIGTERM and SIGKILL to the group (the close after a failed start uses it too)
        self.close_grace = close_grace
        limits = limits or StreamLimits.from_env()  # ACP_PROGRESS_MAX_LINE_BYTES … unless given
        capabilities = _offered_capabilities(client_capabilities, question_policy)
        #: the agent's process and the connection to it
        self.link = AgentLink(
            self.argv,
            env=env or {},
            cwd=cwd,
            stderr_log=stderr_log,
            limits=limits,
            init_timeout=init_timeout,
            client_name=client_name,
            client_capabilities=capabilities,
        )
        self._turns = TurnRouter(self.link, limits, on_stray_update)
        #: the session requests, and what the agent offers and said about its sessions
        #: (``facts``, ``can_load`` …, ``list_incomplete``)
        self.sessions = SessionRequests(self.link, self._turns, lambda: self.initialize_response, mcp_servers)
        self._calls = AgentCalls(
            self.sessions,
            self._turns,
            permission_policy,
            question_policy or decline_all,
            # where this driver's permission answers come from, for the agent's audit ("watch" …)
            surface=client_name.removeprefix("acp-progress-"),
        )
        self.initialize_response: InitializeResponse | None = None
        self._closed = False

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AgentDriver:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        """The agent's process once started (None before)."""
        return self.link.process

    @property
    def connection(self) -> Any:
        """The SDK's client-side connection to the agent (:class:`AgentError` before it started)."""
        return self.link.connection

    @property
    def exit_code(self) -> int | None:
        """The agent's exit status once its process ended; None while it runs (or before it started)."""
        return self.link.exit_code

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines the agent wrote on stderr, redacted."""
        return self.link.stderr_tail

    async def start(self) -> InitializeResponse:
        """Spawn the agent in its own process group and complete ``initialize``."""
        try:
            self.initialize_response = await self.link.start(self._calls, gate=self._turns.wait_for_room)
        except BaseException:
            await self.close()
            raise
        return self.initialize_response

    async def close(self, grace: float | None = None) -> None:
        """End every turn, then the process group: EOF on stdin, then SIGTERM, then SIGKILL
        (``grace``: :attr:`close_grace` unless given)."""
        if self._closed:
            return
        self._closed = True
        self._turns.abandon()
        await self.link.close(self.close_grace if grace is None else grace)

    # ------------------------------------------------------------ turns

    def prompt(self, session_id: str, prompt: str | Sequence[PromptBlock]) -> Turn:
        """Send a prompt now; the returned :class:`Turn` yields its updates."""
        return self._turns.prompt(session_id, prompt)

    async def cancel(self, session_id: str) -> None:
        """Ask the agent to cancel the session's running turn (``session/cancel``)."""
        await self._turns.cancel(session_id)

    # ------------------------------------------------------------ sessions

    async def new_session(self, cwd: str, **kwargs: Any) -> str:
        """Open a session in workspace ``cwd`` (absolute, as ACP requires)."""
        return await self.sessions.new_session(cwd, **kwargs)

    async def load_session(
        self, session_id: str, cwd: str, on_replay: Callable[[SessionUpdate], None] | None = None
    ) -> None:
        """Open a stored session (``session/load``); the agent replays its conversation first, each
        update to ``on_replay`` (dropped when None: a chat that already shows it)."""
        await self.sessions.load_session(session_id, cwd, on_replay)

    async def list_sessions(self, cwd: str | None = None, max_pages: int = 100_000) -> list[SessionInfo]:
        """Every session the agent lists (``session/list``), page after page to the end; see
        :meth:`SessionRequests.list_sessions <.session_requests.SessionRequests.list_sessions>`."""
        return await self.sessions.list_sessions(cwd, max_pages)

    async def delete_session(self, session_id: str) -> None:
        """Remove a stored session for good (``session/delete``)."""
        await self.sessions.delete_session(session_id)

    async def set_choice(self, session_id: str, category: str, wanted: str) -> str:
        """``/mode NAME``, ``/model NAME``: pick a value of the session's mode or model; returns
        the name now set (see :meth:`.session_requests.SessionRequests.set_choice`)."""
        return await self.sessions.set_choice(session_id, category, wanted)

    async def flush_store(self, within: float) -> bool:
        """Ask the agent to finish its queued session-store writes; True once it says they landed
        (see :meth:`.session_requests.SessionRequests.flush_store`)."""
        return await self.sessions.flush_store(within)
