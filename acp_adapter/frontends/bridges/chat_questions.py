"""The agent's permission requests and questions, asked in the chat whose session sent them.

Only the person who started the turn (with the platform's approvers) answers; the platform decides
how to ask (buttons, a reply …) through the two askers it installs. While the bridge stops, every
pending question is answered "cancelled", never "denied by the user".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import DeniedOutcome, RequestPermissionResponse

from acp_adapter.client.driver import PermissionRequest, permission_response
from acp_adapter.client.questions import QuestionRequest, QuestionResponse, cancel, decline
from acp_adapter.frontends.bridges.routes import Person, RouteTable
from acp_adapter.frontends.questions import ask_by_lines
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.bridges.chat_questions")


@dataclass(frozen=True)
class Verdict:
    """A person's answer to a permission question, and who gave it (``telegram:<user id>`` …), so
    the agent's audit says who allowed a command, not only that a client did."""

    allowed: bool
    by: str


PermissionAsker = Callable[
    [Any, PermissionRequest, float, "Person | None"], Awaitable["Verdict | bool | None"]
]
"""``(chat_id, request, timeout, requester) -> answer``: the platform asks the chat (buttons, a
reply…). A :class:`Verdict` when a person answered; ``False`` when it was denied with nobody
answering (a timeout, a failed send); ``None`` when nobody answered because the bridge is stopping
(the agent is told "cancelled", never "denied by the user")."""

LineAsker = Callable[[Any, str, float, "Person | None"], Awaitable["str | None"]]
"""``(chat_id, prompt, timeout, requester) -> line``: the platform shows ``prompt`` in the chat and
waits for one line from the person who started the turn; None when nobody answered in time, the
input ended or the bridge is stopping (the question is then cancelled)."""


@dataclass
class _ChatLines:
    """One question's lines in one chat: notes (the message, a field's help) go with the next prompt."""

    asker: LineAsker
    chat_id: Any
    timeout: float
    requester: Person | None
    notes: list[str] = field(default_factory=list)

    async def ask_line(self, prompt: str) -> str | None:
        said = "\n".join([*self.notes, prompt.strip()])
        self.notes.clear()
        return await self.asker(self.chat_id, said, self.timeout, self.requester)


def _cancelled() -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


class ChatQuestions:
    """Answers the agent's permission requests and questions by asking the session's chat.

    ``stopping`` says whether the bridge is stopping (then nothing is asked any more); ``platform``
    names the surface a person answered on in the agent's audit.
    """

    def __init__(
        self, routes: RouteTable, timeout: float, platform: str, stopping: Callable[[], bool]
    ) -> None:
        self._routes = routes
        self._timeout = timeout
        self._platform = platform
        self._stopping = stopping
        #: asks the chat a permission question; None: the platform cannot, and each is denied
        self.ask_permission: PermissionAsker | None = None
        #: asks the chat for one line (the agent's questions, field by field); None: the platform
        #: cannot, and every question is declined
        self.ask_line: LineAsker | None = None

    async def permission(self, request: PermissionRequest) -> RequestPermissionResponse:
        """The client driver's permission policy: a person of the session's chat decides."""
        route = self._routes.of_session(request.session_id)
        if self._stopping():
            return _cancelled()
        if route is None or self.ask_permission is None:
            return permission_response(request, False, automatic=True)
        route.show_typing(False)  # waiting for the person, not working
        try:
            allowed = await self.ask_permission(route.chat_id, request, self._timeout, route.sender)
        except Exception as exc:
            log.warning("permission prompt failed, denying: %s", redact_text(str(exc)))
            return permission_response(request, False, automatic=True)
        if allowed is None:  # the bridge is stopping: nobody answered, nobody denied
            return _cancelled()
        if isinstance(allowed, Verdict):
            return permission_response(
                request, allowed.allowed, decided_by=allowed.by, surface=self._platform
            )
        return permission_response(request, allowed, surface=self._platform)

    async def question(self, request: QuestionRequest) -> QuestionResponse:
        """The agent's question, asked in the chat of its session (only its sender answers)."""
        route = self._routes.of_session(request.session_id or "")
        asker = self.ask_line
        if self._stopping():
            return cancel()
        if route is None or asker is None:
            return decline()
        route.show_typing(False)  # waiting for the person, not working
        chat = _ChatLines(asker, route.chat_id, self._timeout, route.sender)
        try:
            return await ask_by_lines(chat, request, chat.notes.append)
        except Exception as exc:
            log.warning("a question to the chat failed, declining: %s", redact_text(str(exc)))
            return decline()
