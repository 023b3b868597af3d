"""The errors the client driver raises, each one redacted line fit for a user.

Why a module of its own: every front-end catches these (``watch`` exits 1 on :class:`AgentCrashed`,
2 on :class:`AgentLogError`; a bridge tells the chat why the agent refused a prompt), and a turn
raises them as well as the driver; in one small module, nothing that only needs to say "the agent
failed" has to import the whole driver.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text


class AgentError(AcpProgressError):
    """A failure talking to the agent; ``str(exc)`` is one redacted line fit for a user."""

    def __init__(self, message: str) -> None:
        super().__init__(redact_text(" ".join(message.split())))


class AgentStartError(AgentError):
    """The agent could not be started or did not complete ``initialize``."""


class AgentLogError(AgentStartError):
    """The ``--agent-log`` file cannot be written (a usage error: the front-end exits 2)."""


class AgentCrashed(AgentError):
    """The agent process died, or its connection broke, while a request was outstanding."""


class PromptRefused(AgentError):
    """The agent answered ``session/prompt`` with a JSON-RPC error: ``reason`` is its message,
    ``details`` its ``data.details`` (when present), ``code`` and ``data`` as received (redacted)."""

    def __init__(self, exc: RequestError) -> None:
        super().__init__(f"the agent answered the prompt with an error: {exc}")
        self.code: int = exc.code
        self.reason = redact_text(str(exc))
        data = exc.data
        details = data.get("details") if isinstance(data, dict) else None
        self.details: str | None = redact_text(str(details)) if details is not None else None
        self.data: Any = data


def describe_error(exc: RequestError) -> str:
    """A JSON-RPC error as one redacted phrase: its message, then its ``data.details`` when they say
    more (``Internal error: ANTHROPIC_API_KEY is not set``): the message alone is often only the
    generic text of the code, and the reason is in the details."""
    message = " ".join(str(exc).split())
    data = exc.data
    details = data.get("details") if isinstance(data, dict) else None
    if details is None:
        return redact_text(message)
    said = " ".join(str(details).split())
    if not said or said in message:
        return redact_text(message)
    return redact_text(f"{message}: {said}" if message else said)


class TurnInProgress(AgentError):
    """ACP allows one prompt per session at a time."""
