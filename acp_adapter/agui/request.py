"""Reading a POSTed ``RunAgentInput``: validation with a message a person can act on, and the prompt.

The body is validated by the ag-ui-protocol model itself, so "valid" means exactly what the
protocol says. A rejection names the offending fields (``threadId: Field required``) in one short
line instead of a pydantic dump. The ACP prompt is the text of the latest ``user`` message: the
rest of ``messages`` is history the ACP session already holds, since one session serves a thread.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ag_ui.core import RunAgentInput, TextInputContent, UserMessage
from pydantic import ValidationError

from ..redact import redact_text
from .options import ForwardedSwitchError, run_progress_summary, run_tool_progress

__all__ = ["MAX_BODY_BYTES", "BadRunInput", "RunRequest", "parse_run_request", "prompt_text"]

log = logging.getLogger("acp_progress.agui.request")

#: Larger bodies are refused (413) before parsing: a thread's history, not a data upload.
MAX_BODY_BYTES: Final = 16 * 1024 * 1024
_MAX_ERRORS: Final = 5


class BadRunInput(ValueError):
    """A body that is not a usable ``RunAgentInput``; ``str(exc)`` is the client-facing message."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(redact_text(message)[:1000])
        self.status = status


class RunRequest:
    """A validated run: the protocol input, the prompt for the agent, the per-run switches."""

    __slots__ = ("input", "progress_summary", "prompt", "tool_progress")

    def __init__(
        self, input: RunAgentInput, prompt: str, tool_progress: bool, progress_summary: bool = False
    ) -> None:
        self.input = input
        self.prompt = prompt
        self.tool_progress = tool_progress
        self.progress_summary = progress_summary


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


def parse_run_request(
    body: bytes, global_tool_progress: bool, global_progress_summary: bool = False
) -> RunRequest:
    """Validate ``body``; raise :class:`BadRunInput` with a clear message when it is unusable.

    The ``global_*`` arguments are the endpoint's defaults for the per-run switches, which the
    run's ``forwardedProps`` may override (:mod:`.options`).
    """
    if not body.strip():
        raise BadRunInput("the request body is empty; POST a RunAgentInput as JSON")
    try:
        run_input = RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        raise BadRunInput(f"invalid RunAgentInput: {_describe(exc)}") from None
    if not run_input.thread_id or not run_input.run_id:
        raise BadRunInput("invalid RunAgentInput: threadId and runId must not be empty")
    prompt = prompt_text(run_input)
    if not prompt.strip():
        raise BadRunInput(
            "RunAgentInput has no user message with text: the latest user message is the prompt"
        )
    try:
        tool_progress = run_tool_progress(global_tool_progress, run_input.forwarded_props)
        progress_summary = run_progress_summary(global_progress_summary, run_input.forwarded_props)
    except ForwardedSwitchError as exc:
        raise BadRunInput(str(exc)) from None
    return RunRequest(run_input, prompt, tool_progress, progress_summary)
