"""What ``chat`` knows about its agent: the agent's slash commands beside chat's own, Tab completion
of both, and the status line (mode, model, session title, usage).

The agent says which commands it offers (``available_commands_update``), which modes and models
it has (``modes``, ``configOptions``) and the session's title (``session_info_update``); the
driver keeps the latest of each in :class:`~acp_adapter.client.session_state.SessionFacts`. Here
they become words: ``/help``'s list, the completer's candidates, the bottom toolbar. Every name and
description is the agent's text, so it is made terminal-safe before it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from acp_adapter.client.session_state import SessionFacts
from acp_adapter.frontends._updates import usage_line
from acp_adapter.safety.terminal_text import terminal_safe

#: chat's own commands and what they do (they win over an agent command of the same name)
OWN_COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/mode": "NAME — switch the agent's mode (no name: list them)",
    "/model": "NAME — switch the agent's model (no name: list them)",
    "/new": "a new session",
    "/cancel": "Ctrl-C cancels a running turn",
    "/quit": "leave (Ctrl-D too)",
}
HELP = "/help, /mode, /model, /new (new session), /quit — Ctrl-C cancels a turn, Ctrl-D quits"
#: what is shown of one description (the agent's text, one line)
DESCRIPTION_CHARS = 120


def _flat(text: str | None, limit: int = DESCRIPTION_CHARS) -> str:
    flat = " ".join(terminal_safe(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


#: a command name chat offers: a word (``deploy``, ``review-pr``, ``mcp:tool``); any other name —
#: spaces, escapes, 60+ characters — could not be typed back as itself, so it is not offered
COMMAND_NAME = re.compile(r"\w[\w.:-]{0,59}")


def agent_command_names(facts: SessionFacts) -> list[str]:
    """``/name`` of every command the agent offers that is not one of chat's own."""
    return [
        f"/{c.name}"
        for c in facts.commands
        if COMMAND_NAME.fullmatch(c.name) and f"/{c.name}" not in OWN_COMMANDS
    ]


def hint_of(facts: SessionFacts, name: str) -> str:
    """The agent's hint for a command's input (``<environment>``), or ``""``."""
    command = facts.command(name)
    unstructured = getattr(getattr(command, "input", None), "root", None) if command else None
    hint = getattr(unstructured, "hint", None)
    return f" <{_flat(hint, 40)}>" if hint else ""


def help_lines(facts: SessionFacts) -> list[str]:
    """``/help``: chat's commands, then the agent's (with their hints and descriptions)."""
    lines = ["chat's commands:"]
    lines += [f"  {name:<8} {what}" for name, what in OWN_COMMANDS.items()]
    agent = agent_command_names(facts)
    if agent:
        lines.append("the agent's commands (sent to the agent as typed):")
        for name in agent:
            command = facts.command(name[1:])
            description = _flat(command.description if command else "")
            lines.append(f"  {_flat(name, 60)}{hint_of(facts, name[1:])} — {description}")
    else:
        lines.append("the agent offers no commands of its own")
    return [terminal_safe(line) for line in lines]


def choices_line(facts: SessionFacts, category: str) -> str:
    """``/mode`` alone: the current value and every one on offer (or that there are none)."""
    choices = facts.choices(category)
    if not choices:
        return f"the agent offers no {category} to choose"
    current = facts.current(category)
    names = ", ".join(
        _flat(f"{name} ({value})" if name.lower() != value.lower() else name, 60) for value, name in choices
    )
    return f"{category}: {_flat(current or '?', 60)} — the agent offers: {names}"


def status_line(facts: SessionFacts) -> str:
    """The bottom toolbar: ``mode Code · model Small · “Fix the greeting” · tokens …``."""
    parts = []
    for category in ("mode", "model"):
        current = facts.current(category)
        if current:
            parts.append(f"{category} {_flat(current, 40)}")
    if facts.title:
        parts.append(f"“{_flat(facts.title, 80)}”")
    if facts.usage is not None:
        parts.append(terminal_safe(usage_line(facts.usage)))
    return " · ".join(parts)


class ChatCompleter(Completer):
    """Tab completes a slash command (chat's and the agent's) and the value after ``/mode`` or
    ``/model``. The facts are read at each key press: a command the agent adds later completes."""

    def __init__(self, facts: Callable[[], SessionFacts]) -> None:
        self._facts = facts

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/"):
            return
        facts = self._facts()
        head, space, rest = text.partition(" ")
        if not space:
            for name in [*OWN_COMMANDS, *agent_command_names(facts)]:
                if name.startswith(head):
                    command = facts.command(name[1:]) if name not in OWN_COMMANDS else None
                    meta = _flat(command.description, 60) if command else OWN_COMMANDS.get(name, "")
                    yield Completion(name, start_position=-len(head), display_meta=meta)
            return
        if head in ("/mode", "/model") and " " not in rest:
            for value, name in facts.choices(head[1:]):
                if value.lower().startswith(rest.lower()):
                    yield Completion(value, start_position=-len(rest), display_meta=_flat(name, 40))
