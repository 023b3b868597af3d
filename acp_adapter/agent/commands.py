"""The slash commands the agent itself answers, without the model.

Advertised with ``available_commands_update`` after ``session/new``, ``session/load`` and
``session/resume`` (the editor offers them as the person types ``/``); only commands the agent
really handles are advertised:

* ``/help`` — what the agent can do: its tools, modes, models and these commands;
* ``/title NAME`` — renames the session (``session_info_update``, stored: ``session/list`` shows it).

A prompt whose text starts with one of these names is answered here; any other ``/word`` goes to
the model like any other text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from acp_adapter.agent.session_config import MODES, ModelChoice, SessionConfig
from acp_adapter.tools import one_line

__all__ = ["COMMANDS", "Command", "commands_update", "help_text", "parse_command"]

#: longest title ``/title`` keeps (as the first prompt's title is capped)
TITLE_CAP = 120

COMMANDS: tuple[AvailableCommand, ...] = (
    AvailableCommand(name="help", description="What this agent can do: tools, modes, models, commands"),
    AvailableCommand(
        name="title",
        description="Rename this session (shown in the session list)",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="the new title")),
    ),
)
_NAMES = frozenset(c.name for c in COMMANDS)


@dataclass(frozen=True)
class Command:
    name: str
    argument: str


def commands_update() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=list(COMMANDS)
    )


def parse_command(text: str) -> Command | None:
    """The command a prompt's text invokes (``/title  My work`` -> title, "My work"), or None."""
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    name, _, argument = stripped[1:].partition(" ")
    name = name.strip().lower()
    if name not in _NAMES:
        return None
    return Command(name, argument.strip())


def clean_title(argument: str) -> str | None:
    """The session title ``/title`` asks for: one line, redacted, capped; None when empty."""
    title = one_line(argument, TITLE_CAP).strip()
    return title or None


def help_text(tools: Sequence[tuple[str, str]], config: SessionConfig, models: Sequence[ModelChoice]) -> str:
    """The ``/help`` answer: the session's tools, its mode and model, the other choices."""
    lines = ["I am acp-progress, a coding agent working in this session's workspace.", "", "Tools:"]
    lines += [f"- {name}: {one_line(description, 100)}" for name, description in tools] or ["- (none)"]
    lines += ["", f"Mode (now {config.mode}):"]
    lines += [f"- {m.id}: {m.description}" for m in MODES]
    current = next((m.name for m in models if m.id == config.model), config.model)
    lines += ["", f"Model (now {current}):"]
    lines += [f"- {m.id}: {m.description}" for m in models]
    lines += ["", "Commands:"]
    lines += [f"- /{c.name}: {c.description}" for c in COMMANDS]
    lines += [
        "",
        "When I ask before a command or an edit you may allow or reject it once, or always for this "
        "session (per kind of tool, and per command name for commands).",
    ]
    return "\n".join(lines)
