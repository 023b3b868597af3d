"""The ACP client methods the agent calls on the driver: its session updates, its permission
requests and its questions.

Why a module of its own: these are the agent's requests *to* the front-end — the opposite
direction of everything else the driver does — and each answer comes from a front-end's policy
that may fail: a failing permission policy denies (marked automatic), a failing question policy
declines, and the agent always gets an answer.
"""

from __future__ import annotations

import logging
from typing import Any

from acp.helpers import SessionUpdate
from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from acp_adapter.client.permissions import (
    PermissionPolicy,
    PermissionRequest,
    permission_response,
    with_surface,
)
from acp_adapter.client.questions import QuestionPolicy, QuestionRequest, QuestionResponse, decline
from acp_adapter.client.session_requests import SessionRequests
from acp_adapter.client.turn_router import TurnRouter

log = logging.getLogger("acp_progress.client")


class AgentCalls:
    """Answers the agent: updates to ``sessions`` (what it says about them) and then to ``turns``
    (where they are shown), permission requests to ``permission_policy``, questions to
    ``question_policy``. ``surface`` names this front-end in the permission answers, for the
    agent's audit ("watch" …)."""

    def __init__(
        self,
        sessions: SessionRequests,
        turns: TurnRouter,
        permission_policy: PermissionPolicy,
        question_policy: QuestionPolicy,
        surface: str,
    ) -> None:
        self._sessions = sessions
        self._turns = turns
        self.permission_policy = permission_policy
        self.question_policy = question_policy
        self.surface = surface

    async def session_update(self, session_id: str, update: SessionUpdate, **kwargs: Any) -> None:
        self._sessions.observe(session_id, update)
        self._turns.dispatch(session_id, update)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        request = PermissionRequest(session_id, tool_call, list(options))
        try:
            response = await self.permission_policy(request)
        except Exception:
            log.exception("the permission policy failed; denying %s", request.title)
            response = permission_response(request, False, automatic=True)
        return with_surface(response, self.surface)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> QuestionResponse:
        """A question the agent passes on (an MCP tool's form or link): the front-end's policy."""
        request = QuestionRequest(message, mode)
        try:
            return await self.question_policy(request)
        except Exception:
            log.exception("the question policy failed; declining the question")
            return decline()
