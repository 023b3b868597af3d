"""The session's permission policy: its mode, and the "always" answers the person gave.

Before a dangerous tool call asks the client, :meth:`SessionPolicy.before_asking` may answer on
its own: ``read-only`` refuses every call that would ask (commands, edits), ``auto`` allows it,
and an earlier "always allow" / "always reject" for the same rule answers again. Every such
answer is still audited (``decided_by = auto`` with the rule that answered), so the audit says
why nobody was asked.

A rule is per tool kind (``edit``, ``delete`` …), and for commands per command name
(``execute:ls``). "Always allow" of a command is offered and applied only to a *simple*
command — one program with arguments, no shell operators (``;`` ``&&`` ``|`` ``$( )`` redirections,
variable assignments): otherwise "always allow ls" would also allow ``ls; rm -rf ~``. "Always
reject" needs no such care and matches every command that starts with that name.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import PermissionOption

from acp_adapter.agent.session_config import AUTO, MAX_RULES, READ_ONLY, SessionConfig

__all__ = ["SessionPolicy", "Verdict", "command_name", "permission_options", "rule_key"]

log = logging.getLogger("acp_progress.permissions")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
)
ALLOWING = frozenset({ALLOW_ONCE, ALLOW_ALWAYS})
ALWAYS = frozenset({ALLOW_ALWAYS, REJECT_ALWAYS})

#: characters that make a command line more than one simple command (or change what it runs)
_SHELL_OPERATORS = frozenset(";&|`$<>(){}\n\r\\*?[]~!#")

READ_ONLY_REFUSAL = (
    "Refused without asking: this session is in read-only mode (no commands, no edits); "
    "switch the mode to ask or auto to allow them"
)


@dataclass(frozen=True)
class Verdict:
    """An answer the policy gave without asking anyone."""

    allowed: bool
    #: what answered, for the audit: ``mode auto``, ``mode read-only``, ``always allow execute:ls``
    rule: str
    #: the card's text for a refusal
    reason: str | None = None


def command_name(command: str) -> tuple[str, bool]:
    """The program a command line runs (its base name) and whether the line is a *simple*
    command: one program and its plain arguments, nothing a shell would treat specially."""
    simple = not any(ch in _SHELL_OPERATORS for ch in command)
    try:
        words = shlex.split(command)
    except ValueError:
        words, simple = command.split(), False
    if not words:
        return "", False
    first = words[0]
    if "=" in first:  # FOO=bar prog: an assignment changes what prog does
        simple = False
    return os.path.basename(first) or first, simple


def rule_key(kind: str, call: Any, tool: Any) -> tuple[str, bool]:
    """The "always" rule a call falls under, and whether an "always allow" may cover it.

    ``execute:NAME`` for a command (``arguments.command``), ``KIND:mcp:SERVER/TOOL`` for an MCP
    server's tool (one server's tool is not another's), else the tool kind itself."""
    command = call.arguments.get("command") if isinstance(call.arguments, dict) else None
    if isinstance(command, str) and command.strip():
        name, simple = command_name(command.strip())
        return f"{kind}:{name}", simple and bool(name)
    server = getattr(tool, "server", "")
    if server:
        return f"{kind}:mcp:{server}/{getattr(tool, 'mcp_name', '') or call.name}", True
    return kind, True


def _what(key: str) -> str:
    """``execute:ls`` -> ``ls commands``; ``edit`` -> ``edit calls`` (for the option's name)."""
    kind, _, rest = key.partition(":")
    if kind == "execute" and rest and not rest.startswith("mcp:"):
        return f"`{rest}` commands"
    if rest.startswith("mcp:"):
        return f"MCP tool {rest[4:]}"
    return f"{kind} calls"


def permission_options(key: str, may_allow_always: bool) -> list[PermissionOption]:
    """The four answers (allow once first: clients that pick "the first allow" stay one-time);
    "always allow" only when the rule may cover the call."""
    what = _what(key)
    options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once")]
    if may_allow_always:
        options.append(
            PermissionOption(
                option_id=ALLOW_ALWAYS, name=f"Always allow {what} in this session", kind="allow_always"
            )
        )
    options.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    options.append(
        PermissionOption(
            option_id=REJECT_ALWAYS, name=f"Always reject {what} in this session", kind="reject_always"
        )
    )
    return options


class SessionPolicy:
    """One session's mode and "always" rules; thread-safe (tool calls ask from worker threads
    while ``session/set_mode`` switches on the event loop). ``on_change`` persists the config."""

    def __init__(
        self, config: SessionConfig, on_change: Callable[[SessionConfig], None] | None = None
    ) -> None:
        self.config = config
        self._lock = threading.Lock()
        self.on_change = on_change

    @property
    def mode(self) -> str:
        return self.config.mode

    def before_asking(self, kind: str, call: Any, tool: Any) -> Verdict | None:
        """The answer without asking anyone, or None: ask the client."""
        key, may_allow_always = rule_key(kind, call, tool)
        with self._lock:
            mode = self.config.mode
            if mode == READ_ONLY:
                return Verdict(False, f"mode {READ_ONLY}", READ_ONLY_REFUSAL)
            remembered = self.config.always.get(key)
        if remembered is False:
            why = f"Refused without asking: you chose to always reject {_what(key)} in this session"
            return Verdict(False, f"always reject {key}", why)
        if remembered is True and may_allow_always:
            return Verdict(True, f"always allow {key}")
        if mode == AUTO:
            return Verdict(True, f"mode {AUTO}")
        return None

    def options_for(self, kind: str, call: Any, tool: Any) -> list[PermissionOption]:
        return permission_options(*rule_key(kind, call, tool))

    def remember(self, kind: str, call: Any, tool: Any, allowed: bool) -> str | None:
        """Keep an "always" answer for the session; returns the audit's rule text, or None when
        it could not be kept (an "always allow" of a command that is not simple, or too many)."""
        key, may_allow_always = rule_key(kind, call, tool)
        if allowed and not may_allow_always:
            return None
        with self._lock:
            if key not in self.config.always and len(self.config.always) >= MAX_RULES:
                log.warning(
                    "the session keeps at most %d always-answers; %s is not remembered", MAX_RULES, key
                )
                return None
            self.config.always[key] = allowed
        self._changed()
        return f"always {'allow' if allowed else 'reject'} {key}"

    def set_mode(self, mode: str) -> None:
        with self._lock:
            self.config.mode = mode
        self._changed()

    def set_model(self, model: str) -> None:
        with self._lock:
            self.config.model = model
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change(self.config)
            except Exception:
                log.exception("storing the session's configuration failed")
