"""The agent's questions (ACP ``elicitation/create``: an MCP tool's form or link) asked one line at
a time: on ``watch``'s and ``chat``'s terminal, in the console bridge's chat.

Why one home: every surface that reads typed lines asks the same way — the message, then each
field on its own line, typed answers checked against the form (a wrong one is asked again, twice
at most); no line (Ctrl-C, the end of input, no answer in time) cancels. Every string of the
question came from a tool: each surface writes it through its sanitizer, and a link is shown
whole, as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from acp_adapter.client.questions import (
    BadAnswer,
    QuestionRequest,
    QuestionResponse,
    cancel,
    decline,
    field_value,
    form_answer,
    form_fields,
)

#: Tries per field before the question is declined.
TRIES = 3


class LineAsker(Protocol):
    """What draws the question and reads one typed line (None: Ctrl-C or the end of input)."""

    async def ask_line(self, question: str) -> str | None: ...


def _yes(answer: str) -> bool:
    return answer.strip().lower() in ("y", "yes")


async def ask_by_lines(
    view: LineAsker, request: QuestionRequest, note: Callable[[str], None]
) -> QuestionResponse:
    """Ask ``request`` through ``view`` (one typed line per field); the answer, decline or cancel."""
    note(f"❓ {' '.join(request.message.split())}")
    url = request.url
    if url is not None:
        note(f"   link: {url}")
        answer = await view.ask_line("   Open the link and go on? [y/N] ")
        if answer is None:
            return cancel()
        return form_answer({}) if _yes(answer) else decline()
    values: dict[str, object] = {}
    for field in form_fields(request):
        hint = f" ({'/'.join(field.options)})" if field.options else ""
        hint += " [y/n]" if field.kind == "boolean" else ""
        hint += "" if field.required else " (optional)"
        if field.description:
            note(f"   {field.description}")
        for _ in range(TRIES):
            typed = await view.ask_line(f"   {field.title}{hint}: ")
            if typed is None:  # Ctrl-C or the end of input
                return cancel()
            try:
                values[field.name] = field_value(field, typed)
                break
            except BadAnswer as exc:
                note(f"   {exc}")
        else:
            note("   declined: no answer fitted the form")
            return decline()
    return form_answer(values)
