"""Reading a POSTed ``RunAgentInput``: validation with a message a person can act on, and the prompt.

The body is validated by the ag-ui-protocol model itself, so "valid" means exactly what the
protocol says. A rejection names the offending fields (``threadId: Field required``) in one short
line instead of a pydantic dump. The ACP prompt is the text of the latest ``user`` message: the
rest of ``messages`` is history the ACP session already holds, since one session serves a thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Final

from ag_ui.core import RunAgentInput, TextInputContent, UserMessage
from pydantic import ValidationError

from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.agui.limits import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_ID_LENGTH
from acp_adapter.frontends.agui.options import (
    ForwardedSwitchError,
    run_permission_interrupts,
    run_progress_summary,
    run_tool_progress,
)
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.request")

#: Larger bodies are refused (413) before parsing: a thread's history, not a data upload.
MAX_BODY_BYTES: Final = DEFAULT_MAX_BODY_BYTES
_MAX_ERRORS: Final = 5


class BadRunInput(AcpProgressError, ValueError):
    """A body that is not a usable ``RunAgentInput``; ``str(exc)`` is the client-facing message."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(redact_text(message)[:1000])
        self.status = status


class RunRequest:
    """A validated run: the protocol input, the prompt for the agent, the per-run switches."""

    __slots__ = ("asks_permission", "input", "progress_summary", "prompt", "tool_progress")

    def __init__(
        self,
        input: RunAgentInput,
        prompt: str,
        tool_progress: bool,
        progress_summary: bool = False,
        asks_permission: bool = False,
    ) -> None:
        self.input = input
        self.prompt = prompt
        self.tool_progress = tool_progress
        self.progress_summary = progress_summary
        #: permission questions pause the run as AG-UI interrupts (:mod:`.interrupts`)
        self.asks_permission = asks_permission


def _describe(exc: ValidationError) -> str:
    parts: list[str] = []
    for error in exc.errors()[:_MAX_ERRORS]:
        where = ".".join(str(p) for p in error.get("loc", ())) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def prompt_text(run_input: RunAgentInput) -> str:
    """The text of the latest user message (text parts joined by newlines); ``""`` when there is none."""
    for message in reversed(run_input.messages):
        if not isinstance(message, UserMessage):
            continue
        content: Any = message.content
        if isinstance(content, str):
            return content
        texts = [part.text for part in content if isinstance(part, TextInputContent)]
        if len(texts) != len(content):
            log.info("non-text parts of the user message were not sent to the agent")
        return "\n".join(texts)
    return ""


def _ids(run_input: RunAgentInput) -> Iterator[tuple[str, Any]]:
    """Every id of the input that the endpoint echoes into events or logs, with where it is."""
    yield "threadId", run_input.thread_id
    yield "runId", run_input.run_id
    yield "parentRunId", run_input.parent_run_id
    for index, message in enumerate(run_input.messages):
        yield f"messages.{index}.id", message.id
        yield f"messages.{index}.toolCallId", getattr(message, "tool_call_id", None)
        for call_index, call in enumerate(getattr(message, "tool_calls", None) or ()):
            yield f"messages.{index}.toolCalls.{call_index}.id", call.id
    for index, entry in enumerate(run_input.resume or ()):
        yield f"resume.{index}.interruptId", entry.interrupt_id


def check_id_lengths(run_input: RunAgentInput, max_length: int = DEFAULT_MAX_ID_LENGTH) -> None:
    """Raise :class:`BadRunInput` (422, naming the field) for an id longer than ``max_length``.

    Ids are repeated in every event of a run and in log lines: a megabyte ``runId`` would be
    written into the stream ten times over.
    """
    for where, value in _ids(run_input):
        if isinstance(value, str) and len(value) > max_length:
            raise BadRunInput(f"invalid RunAgentInput: {where}: longer than {max_length} characters")


def parse_run_request(
    body: bytes,
    global_tool_progress: bool,
    global_progress_summary: bool = False,
    *,
    max_id_length: int = DEFAULT_MAX_ID_LENGTH,
    global_interrupts: bool = False,
) -> RunRequest:
    """Validate ``body``; raise :class:`BadRunInput` with a clear message when it is unusable.

    The ``global_*`` arguments are the endpoint's defaults for the per-run switches, which the
    run's ``forwardedProps`` may override (:mod:`.options`); ids longer than ``max_id_length``
    are refused.
    """
    if not body.strip():
        raise BadRunInput("the request body is empty; POST a RunAgentInput as JSON")
    try:
        run_input = RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        raise BadRunInput(f"invalid RunAgentInput: {_describe(exc)}") from None
    if not run_input.thread_id or not run_input.run_id:
        raise BadRunInput("invalid RunAgentInput: threadId and runId must not be empty")
    check_id_lengths(run_input, max_id_length)
    prompt = prompt_text(run_input)
    if not prompt.strip() and not run_input.resume:
        raise BadRunInput(
            "RunAgentInput has no user message with text: the latest user message is the prompt"
        )
    try:
        tool_progress = run_tool_progress(global_tool_progress, run_input.forwarded_props)
        progress_summary = run_progress_summary(global_progress_summary, run_input.forwarded_props)
        asks = run_permission_interrupts(global_interrupts, run_input.forwarded_props)
    except ForwardedSwitchError as exc:
        raise BadRunInput(str(exc)) from None
    return RunRequest(run_input, prompt, tool_progress, progress_summary, asks)
