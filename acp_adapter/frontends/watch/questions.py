"""The agent's questions (ACP ``elicitation/create``: an MCP tool's form or link) asked on the
terminal by ``watch`` and ``chat``.

Why here: the person at the terminal is the one who can answer; each field is asked on its own
line, typed answers are checked against the form (a wrong one is asked again, twice at most), and
Ctrl-C or the end of input cancels. Every string of the question came from a tool: the renderer
writes it through the terminal-text sanitizer, and a link is shown whole, as it is.
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
from acp_adapter.frontends.watch.view import _yes

#: Tries per field before the question is declined.
TRIES = 3


class LineAsker(Protocol):
    """What draws the question and reads one typed line (None: Ctrl-C or the end of input)."""

    async def ask_line(self, question: str) -> str | None: ...


async def ask_on_terminal(
    view: LineAsker, request: QuestionRequest, note: Callable[[str], None]
) -> QuestionResponse:
    """Ask ``request`` on the terminal ``view`` draws on; the person's answer, decline or cancel."""
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
