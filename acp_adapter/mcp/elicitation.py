"""Questions from MCP tools to the person: an MCP server's ``elicitation/create`` during a call
becomes ACP ``elicitation/create`` to the editor, and the answer goes back to the server.

Why here and this way: a tool that needs an answer must reach the person who can give it, or be
told plainly that nobody can. The editor is asked when it advertises elicitation (form and/or URL
mode, session scope, tied to the call's card); otherwise the question is declined with a reason
the server (and the model, through the tool's result) can read — the agent never answers for the
person, whatever the session's mode. Everything the server sends is untrusted: the message and
every string of the form's schema are stripped of escape sequences and control characters,
redacted and capped; the schema is bounded in size, depth and fields and must be one ACP can
show; a URL must be http(s). The person's answer is bounded before it goes back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    DeclineElicitationResponse,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationUrlSessionMode,
)
from pydantic import AnyUrl, ValidationError

from acp_adapter.errors import AcpProgressError
from acp_adapter.mcp.clean import clean_text
from acp_adapter.protocol.meta import META_KEY
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.mcp")

#: Bounds on what a server may ask.
MAX_MESSAGE = 2000
MAX_SCHEMA_BYTES = 32 * 1024
MAX_DEPTH = 6
MAX_FIELDS = 50
MAX_TEXT = 1000
MAX_URL = 2048
#: Bounds on the answer that goes back.
MAX_ANSWER_BYTES = 64 * 1024

#: What the card shows while the person is asked.
WAITING = "waiting for your answer"
NOBODY = "no person can answer here: the editor does not offer questions (ACP elicitation)"


class UnfitQuestion(AcpProgressError, ValueError):
    """A question this agent will not show (too big, too deep, not a form ACP can show)."""


def _clean(text: str, cap: int = MAX_TEXT) -> str:
    return redact_text(clean_text(text))[:cap]


def _depth(value: object, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(value, Mapping):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


def _clean_tree(value: object) -> object:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, Mapping):
        return {_clean(str(k), 200): _clean_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_tree(v) for v in value]
    return value


def form_schema(schema: object) -> ElicitationSchema:
    """The server's form schema as one ACP can show, every string cleaned; else :class:`UnfitQuestion`."""
    if not isinstance(schema, Mapping):
        raise UnfitQuestion("its form is not an object schema")
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        raise UnfitQuestion("its form is not JSON") from None
    if size > MAX_SCHEMA_BYTES:
        raise UnfitQuestion(f"its form is too big ({size:,} bytes; at most {MAX_SCHEMA_BYTES:,})")
    if _depth(schema) > MAX_DEPTH:
        raise UnfitQuestion(f"its form is nested too deep (at most {MAX_DEPTH} levels)")
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and len(properties) > MAX_FIELDS:
        raise UnfitQuestion(f"its form has too many fields ({len(properties)}; at most {MAX_FIELDS})")
    try:
        return ElicitationSchema.model_validate(_clean_tree(schema))
    except ValidationError:
        raise UnfitQuestion("its form is not one an editor can show (ACP elicitation schema)") from None


def safe_url(url: object) -> str:
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise UnfitQuestion("its link is not a URL of at most 2,048 characters")
    if clean_text(url) != url or any(ch.isspace() for ch in url):
        raise UnfitQuestion("its link holds control characters or spaces")
    if not url.lower().startswith(("https://", "http://")):
        raise UnfitQuestion("its link is not http(s)")
    return url


def answer_content(content: object) -> dict[str, str | int | float | bool | list[str] | None] | None:
    """The person's form answer as MCP takes it: flat, primitive values, bounded."""
    if content is None:
        return None
    if not isinstance(content, Mapping):
        raise UnfitQuestion("the answer is not an object")
    out: dict[str, str | int | float | bool | list[str] | None] = {}
    for key, value in list(content.items())[:MAX_FIELDS]:
        if isinstance(value, list):
            out[str(key)] = [str(v) for v in value[:MAX_FIELDS]]
        elif value is None or isinstance(value, str | int | float | bool):
            out[str(key)] = value
        else:
            raise UnfitQuestion(f"the answer's field {str(key)[:40]!r} is not a plain value")
    if len(json.dumps(out)) > MAX_ANSWER_BYTES:
        raise UnfitQuestion("the answer is too big")
    return out


def declined(server: str, why: str, call: AskedCall | None) -> types.ElicitResult:
    """A decline that says why (in ``_meta.acpProgress.reason``, and on the call's card)."""
    log.info("MCP server %s asked a question: declined (%s)", server, why)
    if call is not None:
        call.show(f"question declined: {why}")
    return types.ElicitResult(action="decline", _meta={META_KEY: {"reason": why}})


def decline_reason(answer: DeclineElicitationResponse) -> str | None:
    """The reason an editor gave for declining (``_meta.acpProgress.reason``: nobody answered in
    time, nobody can answer), cleaned like everything from outside; None when it gave none."""
    meta = answer.field_meta if isinstance(answer.field_meta, dict) else {}
    ours = meta.get(META_KEY)
    why = ours.get("reason") if isinstance(ours, dict) else None
    return _clean(why, 300) or None if isinstance(why, str) else None


@dataclass
class AskedCall:
    """The call a question belongs to: its card, and how the card shows that it waits."""

    card_id: str
    show: Callable[[str], None]


class SessionQuestions:
    """Asks the person of one session (through the editor) what its MCP servers ask."""

    def __init__(self, session_id: str, client: Callable[[], tuple[Any, Any, Any]]) -> None:
        self.session_id = session_id
        #: () -> (the ACP connection to the editor, the capabilities it advertised, an awaitable
        #: flush of the updates queued for it: the card says it waits before the question shows)
        self._client = client

    async def completed(self, server: str, elicitation_id: str) -> None:
        """The server says a link question is done (``notifications/elicitation/complete``): the
        editor is told (``elicitation/complete``) when it takes link questions."""
        _, url = self.offers()
        if not url:
            return
        conn, _, _ = self._client()
        try:
            await conn.complete_elicitation(elicitation_id=_clean(elicitation_id, 200) or "mcp")
        except Exception as exc:
            log.info("telling the editor that %s's link question is done failed: %r", server, exc)

    def offers(self) -> tuple[bool, bool]:
        """Whether the editor takes form and URL questions."""
        _, caps, _ = self._client()
        elicitation = getattr(caps, "elicitation", None)
        if elicitation is None:
            return False, False
        return elicitation.form is not None, elicitation.url is not None

    async def ask(
        self,
        server: str,
        params: types.ElicitRequestFormParams | types.ElicitRequestURLParams,
        call: AskedCall | None,
    ) -> types.ElicitResult | types.ErrorData:
        form, url = self.offers()
        wanted = "form" if isinstance(params, types.ElicitRequestFormParams) else "url"
        if not (form if wanted == "form" else url):
            why = NOBODY if not (form or url) else f"the editor does not offer {wanted} questions"
            return declined(server, why, call)
        message = f"[{_clean(server, 100)}] {_clean(params.message, MAX_MESSAGE)}"
        card = call.card_id if call is not None else None
        try:
            if isinstance(params, types.ElicitRequestFormParams):
                mode: Any = ElicitationFormSessionMode(
                    session_id=self.session_id,
                    tool_call_id=card,
                    requested_schema=form_schema(params.requested_schema),
                )
            else:
                mode = ElicitationUrlSessionMode(
                    session_id=self.session_id,
                    tool_call_id=card,
                    elicitation_id=_clean(params.elicitation_id or "", 200) or "mcp",
                    url=AnyUrl(safe_url(params.url)),
                )
        except UnfitQuestion as exc:
            return declined(server, f"the question was not shown: {exc}", call)
        conn, _, flush = self._client()
        if call is not None:
            call.show(WAITING)
            await flush()
        try:
            answer = await conn.create_elicitation(message=message, mode=mode)
        finally:
            if call is not None:
                call.show("answered")
        if isinstance(answer, AcceptElicitationResponse):
            try:
                content = answer_content(answer.content) if wanted == "form" else None
            except UnfitQuestion as exc:
                return declined(server, str(exc), call)
            return types.ElicitResult(action="accept", content=content)
        if isinstance(answer, DeclineElicitationResponse):
            reason = decline_reason(answer)
            return declined(server, reason, call) if reason else types.ElicitResult(action="decline")
        if isinstance(answer, CancelElicitationResponse):
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="cancel")
