"""Questions from tools as AG-UI interrupts: the run pauses, the person fills a form, the next run resumes.

An MCP tool may ask the person something mid-call; the agent passes it on as ACP
``elicitation/create`` (:mod:`acp_adapter.mcp.elicitation`), and the endpoint's driver gets it
through its question policy, :class:`QuestionBroker`. A run whose client answers interrupts (the
same switch as permission questions: ``forwardedProps.permissionInterrupts`` or
``--permission-interrupts``) pauses on it exactly as on a permission question (:mod:`.interrupts`):

1. The run ends with ``RUN_FINISHED`` whose outcome is ``interrupt``: one
   :class:`~ag_ui.core.Interrupt` with reason ``input_required``, the question as ``message``,
   a ``responseSchema`` for the answer, ``expiresAt``, and ``metadata.acpProgress`` with the
   form's fields (``name``, ``title``, ``kind`` — string, number, integer, boolean, array —,
   ``required``, ``options``, ``description``) or, for a link question, the ``url``. Every string
   is redacted and made safe to show (:func:`~acp_adapter.safety.web_text.web_visible`) here as
   well as on the wire: the agent already bounded and cleaned the server's schema, but the
   endpoint does not rely on it.
2. The client resumes with ``payload: {"action": "accept", "content": {...}}``, ``{"action":
   "decline"}`` or ``{"action": "cancel"}`` (a resume entry with status ``cancelled`` cancels).
   Accepted content is checked against the form (types, options, required fields): a payload that
   does not fit is refused with a 422 and the question stays pending.
3. Nobody answers within the bounded wait (``--permission-timeout``), or the client starts a plain
   run on the thread: the question is **declined with its reason** (``_meta.acpProgress.reason``,
   which the agent passes on to the tool and shows on its card) and the unattended turn is
   cancelled. A run that does not take interrupts has its questions declined at once, saying so.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
import secrets
from typing import Any, Final

from acp.schema import DeclineElicitationResponse
from ag_ui.core import Interrupt, ResumeEntry

from acp_adapter.client.questions import (
    FormField,
    QuestionRequest,
    QuestionResponse,
    cancel,
    decline,
    form_answer,
    form_fields,
)
from acp_adapter.frontends.agui.interrupts import DEFAULT_PERMISSION_TIMEOUT, PermissionBroker, ResumeError
from acp_adapter.protocol.meta import META_KEY
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.web_text import web_visible

log = logging.getLogger("acp_progress.agui.questions")

INTERRUPT_REASON: Final = "input_required"
#: Characters of one text answer, at most (the agent bounds the whole answer again).
MAX_ANSWER_TEXT: Final = 10_000
#: Why a question is declined when its run's client does not answer interrupts.
NO_INTERRUPTS: Final = "no person can answer here: this AG-UI run does not take interrupts"
#: Why a question is declined when the client started another run instead of answering.
NOT_ANSWERED: Final = "the question was left unanswered: the client went on without answering"


def shown(text: str) -> str:
    """A string of the question as the endpoint sends it: redacted and safe to show."""
    return web_visible(redact_text(text))


def declined_because(why: str) -> DeclineElicitationResponse:
    """A decline that says why (the agent passes the reason on to the tool)."""
    return DeclineElicitationResponse(action="decline", field_meta={META_KEY: {"reason": why}})


def _field_info(field: FormField) -> dict[str, Any]:
    return {
        "name": shown(field.name),
        "title": shown(field.title),
        "kind": shown(field.kind),
        "required": field.required,
        "options": [shown(option) for option in field.options],
        "description": shown(field.description),
    }


def _field_schema(field: FormField) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": field.kind if field.kind in _KINDS else "string"}
    if field.options and field.kind == "array":
        schema["items"] = {"type": "string", "enum": [shown(o) for o in field.options]}
    elif field.options:
        schema["enum"] = [shown(o) for o in field.options]
    return schema


_KINDS: Final = ("string", "number", "integer", "boolean", "array")


class PendingQuestion:
    """One question waiting for its answer: the interrupt sent, and the future its answer sets."""

    def __init__(self, interrupt_id: str, request: QuestionRequest, timeout: float) -> None:
        self.id = interrupt_id
        self.request = request
        self.fields = form_fields(request)
        self.future: asyncio.Future[QuestionResponse | None] = asyncio.get_running_loop().create_future()
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=timeout)
        self.expires_at = expires.isoformat(timespec="seconds").replace("+00:00", "Z")

    def interrupt(self) -> Interrupt:
        """The AG-UI interrupt that asks this question: its message and its form (or link)."""
        info: dict[str, Any] = {"kind": "question", "fields": [_field_info(f) for f in self.fields]}
        url = self.request.url
        if url is not None:
            info["url"] = shown(url)
        content = {
            "type": "object",
            "properties": {shown(f.name): _field_schema(f) for f in self.fields},
            "required": [shown(f.name) for f in self.fields if f.required],
        }
        card = getattr(self.request.mode, "tool_call_id", None)
        return Interrupt(
            id=self.id,
            reason=INTERRUPT_REASON,
            message=shown(self.request.message),
            tool_call_id=shown(card) if isinstance(card, str) else None,
            response_schema={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["accept", "decline", "cancel"]},
                    "content": content,
                },
                "required": ["action"],
            },
            expires_at=self.expires_at,
            metadata={META_KEY: info},
        )

    def answer(self, response: QuestionResponse | None) -> None:
        """Set the answer (``None``: nobody answered, the question is declined); later ones are ignored."""
        if not self.future.done():
            self.future.set_result(response)

    def choice(self, entry: ResumeEntry) -> QuestionResponse:
        """The answer a resume entry gives; :class:`ResumeError` (422) for a payload that does not
        fit the question (the question stays pending: the client may send a better one)."""
        if entry.status == "cancelled":
            return cancel()
        payload = entry.payload
        action = payload.get("action") if isinstance(payload, dict) else None
        if action == "decline":
            return decline()
        if action == "cancel":
            return cancel()
        if action != "accept":
            raise self._unfit('payload must be {"action": "accept" | "decline" | "cancel", "content"?: …}')
        assert isinstance(payload, dict)
        content = payload.get("content", {})
        if not isinstance(content, dict):
            raise self._unfit("content must be an object of the form's fields")
        if self.request.url is not None:
            return form_answer({})
        return form_answer(self._checked(content))

    def _checked(self, content: dict[str, Any]) -> dict[str, Any]:
        # a client knows the names and options as they were sent (shown): both spellings are taken
        by_name = {shown(f.name): f for f in self.fields} | {f.name: f for f in self.fields}
        unknown = [str(k)[:40] for k in content if k not in by_name]
        if unknown:
            raise self._unfit(f"the form has no field {unknown[0]!r}")
        given = {by_name[k].name: v for k, v in content.items()}
        values: dict[str, Any] = {}
        for field in self.fields:
            value = _as_sent(field, given.get(field.name))
            if value is None or value == "":
                if field.required:
                    raise self._unfit(f"{field.title!r} is required")
                continue
            values[field.name] = _fitted(field, value, self._unfit)
        return values

    def _unfit(self, why: str) -> ResumeError:
        return ResumeError(f"resume of question {self.id!r}: {why}", status=422)


def _as_sent(field: FormField, value: Any) -> Any:
    """``value`` with an option spelled as it was shown turned back into the option itself."""
    if not field.options:
        return value
    options = {shown(o): o for o in field.options}
    if isinstance(value, list):
        return [options.get(v, v) if isinstance(v, str) else v for v in value]
    return options.get(value, value) if isinstance(value, str) else value


def _fitted(field: FormField, value: Any, unfit: Any) -> Any:
    """``value`` when it fits ``field``; else raises what ``unfit(why)`` makes."""
    name = repr(field.title[:60])
    if field.kind == "boolean":
        if not isinstance(value, bool):
            raise unfit(f"{name} takes true or false")
        return value
    if field.kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise unfit(f"{name} takes a number")
        if field.kind == "integer" and not float(value).is_integer():
            raise unfit(f"{name} takes a whole number")
        return int(value) if field.kind == "integer" else value
    if field.kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise unfit(f"{name} takes a list of strings")
        if field.options and any(v not in field.options for v in value):
            raise unfit(f"{name}: choose from its options")
        return value[:100]
    if not isinstance(value, str) or len(value) > MAX_ANSWER_TEXT:
        raise unfit(f"{name} takes text of at most {MAX_ANSWER_TEXT} characters")
    if field.options and value not in field.options:
        raise unfit(f"{name}: choose one of its options")
    return value


class QuestionBroker:
    """The driver's question policy: the question pauses the run on its session, or is declined."""

    def __init__(self, runs: PermissionBroker, *, timeout: float = DEFAULT_PERMISSION_TIMEOUT) -> None:
        #: the permission broker knows which run serves which session
        self.runs = runs
        self.timeout = timeout

    async def __call__(self, request: QuestionRequest) -> QuestionResponse:
        run = self.runs.run_for(request.session_id)
        if run is None or not run.asks_permission:
            return declined_because(NO_INTERRUPTS)
        for _ in range(3):
            await asyncio.sleep(0)  # the card's "waiting for your answer" reaches the run first
        pending = PendingQuestion(f"question-{secrets.token_hex(8)}", request, self.timeout)
        if not run.pause(pending):
            return declined_because(NO_INTERRUPTS)
        log.info("asked the AG-UI client a tool's question (interrupt %s)", pending.id)
        response: QuestionResponse | None = None
        try:
            async with asyncio.timeout(self.timeout):
                response = await asyncio.shield(pending.future)
        except TimeoutError:
            why = f"nobody answered within {self.timeout:g} s"
            log.info("interrupt %s: %s; declined", pending.id, why)
            pending.answer(None)
            run.expire(pending)
            return declined_because(why)
        return response if response is not None else declined_because(NOT_ANSWERED)
