"""Permission questions as AG-UI interrupts: the run pauses, the person answers, the next run resumes.

Without this an AG-UI client has no channel to its person, so the endpoint answers every
``session/request_permission`` with a static policy (deny, or allow with ``--yes``). A run that
asks for interrupts (``forwardedProps.permissionInterrupts: true``, or ``--permission-interrupts``
for every run) gets the AG-UI interrupt flow instead:

1. The agent asks. The run ends with ``RUN_FINISHED`` whose outcome is ``interrupt``: one
   :class:`~ag_ui.core.Interrupt` (reason ``tool_approval``) whose ``message`` is the question with
   the **whole** command (never cut: nobody can approve what they cannot see; redacted like
   everything this endpoint sends), ``toolCallId``, a ``responseSchema`` naming the option ids,
   ``expiresAt``, and ``metadata.acpProgress`` with the title, the command and the options. The
   ACP turn stays open: the agent waits for the answer.
2. The client starts a new run on the thread with ``resume: [{interruptId, status: "resolved",
   payload: {"optionId": ...}}]``. The agent gets that option; the new run streams the rest of the
   same turn (the updates that arrived meanwhile first).
3. Nobody answers within the bounded wait (``--permission-timeout``, 120 s by default), the
   resume says ``cancelled``, or the client starts a plain run on the thread instead: the static
   policy answers, as for a client that does not ask, and an unattended turn is cancelled.

:class:`PermissionBroker` is the driver's permission policy: it finds the run on the request's
session and pauses it, or falls back to the static policy at once.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import secrets
from collections.abc import Sequence
from typing import Any, Final, Protocol

from acp.schema import AllowedOutcome, RequestPermissionResponse
from ag_ui.core import Interrupt, ResumeEntry

from acp_adapter.client.driver import PermissionPolicy, PermissionRequest
from acp_adapter.errors import AcpProgressError
from acp_adapter.protocol.meta import META_KEY
from acp_adapter.safety.redact import redact_text, redact_value

log = logging.getLogger("acp_progress.agui.interrupts")

#: Seconds a paused run waits for its resume before the static policy answers.
DEFAULT_PERMISSION_TIMEOUT: Final = 120.0
INTERRUPT_REASON: Final = "tool_approval"
#: Characters of a command an interrupt carries at most (a command line, not a file).
MAX_COMMAND_CHARS: Final = 64 * 1024


class ResumeError(AcpProgressError, ValueError):
    """A ``resume`` that cannot be honoured; ``status`` is the HTTP answer (409 or 422)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(redact_text(message)[:500])
        self.status = status


def _command_text(request: PermissionRequest) -> str | None:
    """The whole command the agent asks to run, or its raw input as JSON when it names none."""
    command = request.command
    if command is None and request.tool_call.raw_input is not None:
        command = json.dumps(request.tool_call.raw_input, ensure_ascii=False, default=str, indent=1)
    if command is None:
        return None
    if len(command) > MAX_COMMAND_CHARS:
        # said, never silently cut: the person sees that there is more than shown
        cut = len(command) - MAX_COMMAND_CHARS
        command = (
            f"{command[:MAX_COMMAND_CHARS]}\n… {cut} more characters not shown: deny unless you know them"
        )
    return redact_text(command)


class PendingPermission:
    """One question waiting for its answer: the interrupt sent, and the future its answer sets."""

    def __init__(self, interrupt_id: str, request: PermissionRequest, timeout: float) -> None:
        self.id = interrupt_id
        self.request = request
        self.option_ids = [option.option_id for option in request.options]
        self.future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=timeout)
        self.expires_at = expires.isoformat(timespec="seconds").replace("+00:00", "Z")

    def interrupt(self) -> Interrupt:
        """The AG-UI interrupt that asks this question, whole command included."""
        title = redact_text(self.request.title)
        command = _command_text(self.request)
        options = [
            {"optionId": o.option_id, "name": redact_text(o.name), "kind": str(o.kind)}
            for o in self.request.options
        ]
        message = f"The agent asks to run: {title}" + (f"\n\n{command}" if command else "")
        return Interrupt(
            id=self.id,
            reason=INTERRUPT_REASON,
            message=message,
            tool_call_id=redact_text(self.request.tool_call.tool_call_id),
            response_schema={
                "type": "object",
                "properties": {"optionId": {"type": "string", "enum": list(self.option_ids)}},
                "required": ["optionId"],
            },
            expires_at=self.expires_at,
            metadata={
                META_KEY: redact_value(
                    {
                        "title": title,
                        "command": command,
                        "kind": self.request.tool_call.kind,
                        "options": options,
                    }
                )
            },
        )

    def answer(self, option_id: str | None) -> None:
        """Set the answer (``None``: the static policy decides); later answers are ignored."""
        if not self.future.done():
            self.future.set_result(option_id)

    def choice(self, entry: ResumeEntry) -> str | None:
        """The option a resume entry picks (``None`` for ``cancelled``); :class:`ResumeError` (422)
        for a payload that names no offered option."""
        if entry.status == "cancelled":
            return None
        payload = entry.payload
        option = payload.get("optionId") if isinstance(payload, dict) else payload
        if not isinstance(option, str) or option not in self.option_ids:
            offered = ", ".join(self.option_ids)
            raise ResumeError(
                f'resume of interrupt {self.id!r}: payload must be {{"optionId": one of {offered}}}',
                status=422,
            )
        return option


class PendingInterrupt(Protocol):
    """A question a run is paused on: a permission (:class:`PendingPermission`) or a tool's
    question (:class:`~.questions.PendingQuestion`)."""

    @property
    def id(self) -> str: ...

    def interrupt(self) -> Interrupt:
        """The AG-UI interrupt that asks it."""
        ...

    def answer(self, value: Any) -> None:
        """Set the answer (``None``: nobody answered)."""
        ...

    def choice(self, entry: ResumeEntry) -> Any:
        """The answer a resume entry gives; :class:`ResumeError` when it gives none."""
        ...


class Pausable(Protocol):
    """A run the broker can pause on a question (:class:`~.active.ActiveRun`)."""

    @property
    def asks_permission(self) -> bool:
        """The run's client answers interrupts (else the static policy answers at once)."""
        ...

    def pause(self, pending: PendingInterrupt) -> bool:
        """End the run's stream with the interrupt; ``False`` when it cannot (then the policy answers)."""
        ...

    def expire(self, pending: PendingInterrupt) -> None:
        """Nobody answered in time: the run is given up (its turn is cancelled)."""
        ...


class PermissionBroker:
    """The driver's permission policy: the question goes to the run on its session, or to ``fallback``."""

    def __init__(self, fallback: PermissionPolicy, *, timeout: float = DEFAULT_PERMISSION_TIMEOUT) -> None:
        self.fallback = fallback
        self.timeout = timeout
        self._runs: dict[str, Pausable] = {}

    def attach(self, session_id: str, run: Pausable) -> None:
        self._runs[session_id] = run

    def detach(self, session_id: str | None, run: Pausable) -> None:
        if session_id is not None and self._runs.get(session_id) is run:
            del self._runs[session_id]

    def run_for(self, session_id: str | None) -> Pausable | None:
        """The run serving ``session_id`` now (the question broker asks it too)."""
        return self._runs.get(session_id) if session_id is not None else None

    async def __call__(self, request: PermissionRequest) -> RequestPermissionResponse:
        run = self._runs.get(request.session_id)
        if run is None or not run.asks_permission:
            return await self.fallback(request)
        for _ in range(3):
            await asyncio.sleep(0)  # the updates sent before the question reach the run first
        pending = PendingPermission(f"permission-{secrets.token_hex(8)}", request, self.timeout)
        if not run.pause(pending):
            return await self.fallback(request)
        log.info("asked the AG-UI client about %s (interrupt %s)", redact_text(request.title), pending.id)
        choice: str | None = None
        try:
            async with asyncio.timeout(self.timeout):
                choice = await asyncio.shield(pending.future)
        except TimeoutError:
            log.info(
                "interrupt %s: no answer within %g s; the static policy answers", pending.id, self.timeout
            )
            pending.answer(None)
            run.expire(pending)
        if choice is None:
            return await self.fallback(request)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))


def resume_entry(entries: Sequence[ResumeEntry], pending: PendingInterrupt) -> ResumeEntry:
    """The entry that answers ``pending``; :class:`ResumeError` (409) when none does."""
    for entry in entries:
        if entry.interrupt_id == pending.id:
            return entry
    named = ", ".join(repr(e.interrupt_id) for e in entries[:5])
    raise ResumeError(f"resume names {named}, but the interrupt pending on this thread is {pending.id!r}")
