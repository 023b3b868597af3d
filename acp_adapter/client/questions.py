"""Questions an agent asks the person (ACP ``elicitation/create``), as the client side sees them, and
the answers a front-end's policy gives.

Why a module of its own: the agent passes on what its tools ask (an MCP server's form or link);
each front-end asks its own way (a terminal prompt, a chat message, a web form), but all of them
see the same :class:`QuestionRequest`, read its form through :func:`form_fields` and build the
answer through :func:`form_answer`. A front-end with nobody to ask declines (:func:`decline_all`):
nothing is ever answered for the person.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    DeclineElicitationResponse,
    ElicitationFormRequestMode,
    ElicitationFormSessionMode,
    ElicitationUrlRequestMode,
    ElicitationUrlSessionMode,
)

from acp_adapter.errors import AcpProgressError

QuestionResponse = AcceptElicitationResponse | DeclineElicitationResponse | CancelElicitationResponse
#: The most fields a terminal asks one by one (a longer form is declined).
MAX_FIELDS = 50


@dataclass(frozen=True)
class QuestionRequest:
    """One ``elicitation/create`` from the agent."""

    message: str
    mode: Any

    @property
    def session_id(self) -> str | None:
        return getattr(self.mode, "session_id", None)

    @property
    def url(self) -> str | None:
        """The link of a URL question (None for a form)."""
        if isinstance(self.mode, ElicitationUrlSessionMode | ElicitationUrlRequestMode):
            return str(self.mode.url)
        return None

    @property
    def is_form(self) -> bool:
        return isinstance(self.mode, ElicitationFormSessionMode | ElicitationFormRequestMode)


QuestionPolicy = Callable[[QuestionRequest], Awaitable[QuestionResponse]]


@dataclass(frozen=True)
class FormField:
    """One field of a question's form, as a prompt shows it."""

    name: str
    title: str
    kind: str  # string, number, integer, boolean, array, or another type a prompt takes as text
    required: bool
    options: tuple[str, ...] = ()
    description: str = ""


def form_fields(request: QuestionRequest) -> list[FormField]:
    """The fields of a form question, in order (at most :data:`MAX_FIELDS`)."""
    if not request.is_form:
        return []
    schema = request.mode.requested_schema
    required = set(schema.required or [])
    out: list[FormField] = []
    for name, prop in list((schema.properties or {}).items())[:MAX_FIELDS]:
        kind = str(getattr(prop, "type", "string"))
        options = tuple(str(o) for o in (getattr(prop, "enum", None) or ()))
        items = getattr(prop, "items", None)
        if not options and items is not None:
            options = tuple(str(o) for o in (getattr(items, "enum", None) or ()))
        title = getattr(prop, "title", None) or name
        description = getattr(prop, "description", None) or ""
        out.append(FormField(name, str(title), kind, name in required, options, str(description)))
    return out


class BadAnswer(AcpProgressError, ValueError):
    """What was typed does not fit the field (the message says why)."""


def field_value(field: FormField, typed: str) -> Any:
    """What the person typed for ``field``, as the form's type wants it; :class:`BadAnswer` when it
    does not fit. An empty answer is None (the field is left out)."""
    text = typed.strip()
    if not text:
        if field.required:
            raise BadAnswer(f"{field.title} is required")
        return None
    if field.kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise BadAnswer(f"{field.title}: answer yes or no")
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise BadAnswer(f"{field.title}: a whole number") from None
    if field.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise BadAnswer(f"{field.title}: a number") from None
    if field.kind == "array":
        values = [v.strip() for v in text.split(",") if v.strip()]
        if field.options and any(v not in field.options for v in values):
            raise BadAnswer(f"{field.title}: choose from {', '.join(field.options)}")
        return values
    if field.options and text not in field.options:
        raise BadAnswer(f"{field.title}: choose one of {', '.join(field.options)}")
    return text


def form_answer(values: dict[str, Any]) -> AcceptElicitationResponse:
    return AcceptElicitationResponse(
        action="accept", content={k: v for k, v in values.items() if v is not None}
    )


def decline() -> DeclineElicitationResponse:
    return DeclineElicitationResponse(action="decline")


def cancel() -> CancelElicitationResponse:
    return CancelElicitationResponse(action="cancel")


async def decline_all(request: QuestionRequest) -> QuestionResponse:
    """Policy: nobody here can answer; every question is declined."""
    return decline()
