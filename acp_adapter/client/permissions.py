"""Permission requests as the client side sees them, and the answers a policy gives.

Why a module of its own: every front-end decides ``session/request_permission`` its own way (a
terminal prompt, chat buttons, a web dialog, ``--yes``), but all of them see the same
:class:`PermissionRequest` and answer through :func:`permission_response`, which picks the agent's
allow or reject option and marks who decided (a person, or a policy) for the agent's audit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from acp_adapter.protocol.meta import ProgressMeta, meta_field, meta_of

#: ``_meta`` on a permission answer that no person gave (a policy decided), so the agent can say so.
AUTOMATIC_META: dict[str, Any] = meta_field(ProgressMeta(automatic=True))


@dataclass(frozen=True)
class PermissionRequest:
    """One ``session/request_permission`` from the agent, as the policy sees it."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]

    @property
    def title(self) -> str:
        return self.tool_call.title or self.tool_call.tool_call_id

    @property
    def command(self) -> str | None:
        """The whole command the agent asks to run (``rawInput.command``), when it says so: a
        card's title is cut, and nobody can approve what they cannot see."""
        raw = self.tool_call.raw_input
        command = raw.get("command") if isinstance(raw, dict) else None
        return command if isinstance(command, str) and command.strip() else None

    @property
    def command_beside_title(self) -> str | None:
        """The whole command, stripped, when the question must show it beside the title: whenever
        the title does not hold it character for character on one line. A title is cut (at 160
        characters), drops the characters a reader cannot see and joins lines — and
        ``echo ok⏎rm -rf data`` joined reads as one harmless ``echo``. ``None``: the title shows
        it all (or the request names no command)."""
        command = self.command
        if command is None:
            return None
        whole = command.strip()
        if "\n" not in whole and "\r" not in whole and whole in self.title:
            return None
        return whole


PermissionPolicy = Callable[[PermissionRequest], Awaitable[RequestPermissionResponse]]


def permission_response(
    request: PermissionRequest,
    allow: bool,
    *,
    automatic: bool = False,
    decided_by: str | None = None,
    surface: str | None = None,
) -> RequestPermissionResponse:
    """Answer ``request`` by picking its allow (or reject) option. ``automatic`` marks a policy
    decision; ``decided_by`` names the person who answered (the agent keeps both in its audit, with
    ``surface``, which the driver fills in with its front-end's name when the policy did not)."""
    wanted = "allow" if allow else "reject"
    ranked = sorted(
        (o for o in request.options if o.kind.startswith(wanted)),
        key=lambda o: not o.kind.endswith("once"),  # prefer a one-time answer over "always"
    )
    who = ProgressMeta(automatic=True if automatic else None, decided_by=decided_by, surface=surface)
    meta = meta_field(who) if who.dump() else None
    if not ranked:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"), field_meta=meta)
    return RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id=ranked[0].option_id), field_meta=meta
    )


def with_surface(response: RequestPermissionResponse, surface: str) -> RequestPermissionResponse:
    """``response`` with ``_meta.acpProgress.surface`` set, unless its policy already named one."""
    meta = meta_of(response) or ProgressMeta()
    if meta.surface is not None:
        return response
    field_meta = dict(response.field_meta or {})
    field_meta.update(meta_field(meta.model_copy(update={"surface": surface})))
    return response.model_copy(update={"field_meta": field_meta})


async def allow_all(request: PermissionRequest) -> RequestPermissionResponse:
    """Policy: allow every request without asking (``--yes``)."""
    return permission_response(request, True, automatic=True)


async def deny_all(request: PermissionRequest) -> RequestPermissionResponse:
    """Policy: deny every request; the answer says no person was asked."""
    return permission_response(request, False, automatic=True)
