"""The SDK's agent-side connection for the agent, with the routes the SDK's router leaves out."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from acp.schema import (
    CloseSessionRequest,
    DeleteSessionRequest,
    ForkSessionRequest,
    LogoutRequest,
    ResumeSessionRequest,
)

from acp_adapter.protocol.cancel_request import CancellableRequests, IncomingRequestIds
from acp_adapter.protocol.mcp_server_types import McpServerTypeCheck

if TYPE_CHECKING:
    from acp.agent.connection import AgentSideConnection
    from acp.router import MessageRouter
    from pydantic import BaseModel

__all__ = ["agent_connection"]

log = logging.getLogger("acp_progress.server")


def agent_connection(agent: Any, transport: Any) -> AgentSideConnection:
    """The SDK's agent-side connection for ``agent`` on ``transport``, not yet listening, with
    ``session/delete`` routed to :meth:`ProgressAgent.delete_session`.

    What ``acp.run_agent`` builds, plus one route: SDK 0.12's schema and method table have
    ``session/delete`` (``DeleteSessionRequest``, ``SessionCapabilities.delete``) but its agent
    router does not route it, and extension methods (``ext_method``) only reach names starting
    with ``_``. So the route is added to the connection's router, with the SDK's own
    ``MessageRouter.route_request`` (the request is validated into ``DeleteSessionRequest``, the
    answer serialised by the SDK, errors are ``RequestError``s as for every other method). The
    router is reached through the connection's private attributes: should a future SDK move them,
    the agent simply stops advertising ``sessionCapabilities.delete`` (a warning says so) instead
    of advertising a method it cannot answer.

    The same router is wrapped once for request cancellation (``$/cancel_request``, see
    :mod:`acp_adapter.protocol.cancel_request`): every request can be called off by its id. Under
    that, the raw ``mcpServers`` of the methods that take them are checked before the SDK parses
    them (:mod:`acp_adapter.protocol.mcp_server_types`): an entry it would drop is refused instead.

    ProgressAgent implements the Agent methods it supports and takes ``**kwargs``, without
    subclassing ``acp.Agent`` (whose stubs would answer methods it does not implement).
    """
    from acp.agent.connection import AgentSideConnection
    from acp.meta import AGENT_METHODS
    from acp.router import MessageRouter

    conn = AgentSideConnection(agent, IncomingRequestIds(transport), listening=False)
    sdk_connection = getattr(conn, "_conn", None)
    router = getattr(sdk_connection, "_handler", None)
    if isinstance(router, MessageRouter):
        _add_missing_routes(router, agent)
        # every request may be called off by id ($/cancel_request); a prompt the gentle way (its
        # turn is cancelled: every card closes and it answers stopReason "cancelled"); an MCP
        # server entry the SDK would drop while parsing is refused before it parses it
        sdk_connection._handler = CancellableRequests(  # type: ignore[union-attr]
            McpServerTypeCheck(router), gentle={AGENT_METHODS["session_prompt"]: agent.stop_prompt_request}
        )
    else:
        log.warning("this ACP SDK's connection has no router to add session/delete to; it stays unsupported")
    return conn


def _add_missing_routes(router: MessageRouter, agent: Any) -> None:
    """Route what the SDK's router leaves out, each validated and answered by the SDK's own
    machinery, and flag each group on ``agent`` once routed (its capability is then advertised)."""
    from acp.meta import AGENT_METHODS
    from acp.utils import normalize_result

    def route(method: str, request: type[BaseModel], handler: str) -> None:
        router.route_request(AGENT_METHODS[method], request, agent, handler, adapt_result=normalize_result)

    route("session_delete", DeleteSessionRequest, "delete_session")
    agent.routes_delete = True
    # session/resume, session/close and session/fork are "unstable" in this SDK (not routed by
    # default): routed the same way
    route("session_resume", ResumeSessionRequest, "resume_session")
    route("session_close", CloseSessionRequest, "close_session")
    route("session_fork", ForkSessionRequest, "fork_session")
    agent.routes_resume = True
    # logout (clearing what ``serve --setup`` saved) is in the SDK's method table, not its router
    route("logout", LogoutRequest, "logout")
    agent.routes_logout = True
