"""For the permission tests: a client that answers each question with the option it was told to
choose, this project's agent configured by an environment (in this process), and the card of a
command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse

from tests.helpers.acp_agent import RecordingClient
from tests.helpers.shared_agent import progress_agent


@dataclass
class ChoosingClient(RecordingClient):
    """Answers each permission request with the next option id of ``choices`` (then allow_once),
    and keeps the options it was offered."""

    choices: list[str] = field(default_factory=list)
    offered: list[list[str]] = field(default_factory=list)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append(tool_call)
        self.offered.append([o.option_id for o in options])
        wanted = self.choices.pop(0) if self.choices else "allow_once"
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=wanted))


def agent_from_env(env: dict[str, str]) -> Any:
    """This project's agent configured by ``env``, as a process started with it would be."""
    from acp_adapter.config import Settings

    return progress_agent(Settings.from_env(env))


def card_of(client: RecordingClient, session_id: str, command: str) -> list[Any]:
    """The updates of the card of the tool call that ran ``command``."""
    for updates in client.cards(session_id).values():
        if (updates[0].raw_input or {}).get("command") == command:
            return updates
    raise AssertionError(f"no card for {command!r}")
