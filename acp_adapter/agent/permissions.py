"""The session's permission policy: its mode, and the "always" answers the person gave.

Before a dangerous tool call asks the client, :meth:`SessionPolicy.before_asking` may answer on
its own: ``read-only`` refuses every call that would ask (commands, edits), ``auto`` allows it,
and an earlier "always allow" / "always reject" for the same rule answers again. Every such
answer is still audited (``decided_by = auto`` with the rule that answered), so the audit says
why nobody was asked.

A rule is per tool kind (``edit``, ``delete`` …), per MCP server tool, and for commands per
*program* (:mod:`acp_adapter.agent.command_rules`): "always allow" of a command is offered and
applied only to a simple command (one program with plain arguments, no shell operators) naming a
program bare that ``PATH`` resolves outside the workspace, and it is stored under that program's
absolute path (``execute:program:/usr/bin/ls``), so ``./ls``, ``bin/ls -la`` or a workspace
script called ``ls`` never match it. "Always reject" needs no such care and matches every
command whose program has that base name (``execute:ls``). The question names what "always"
covers. A stored "always allow" of the older form (``execute:ls``: a base name) matches nothing:
the person is asked again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import PermissionOption

from acp_adapter.agent.command_rules import CommandRule, command_rule, pinned_command, split_command
from acp_adapter.agent.session_config import AUTO, MAX_RULES, READ_ONLY, SessionConfig

__all__ = ["Rule", "SessionPolicy", "Verdict", "command_name", "permission_options", "rule_for", "rule_key"]

log = logging.getLogger("acp_progress.permissions")

ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS = (
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
)
ALLOWING = frozenset({ALLOW_ONCE, ALLOW_ALWAYS})
ALWAYS = frozenset({ALLOW_ALWAYS, REJECT_ALWAYS})

READ_ONLY_REFUSAL = (
    "Refused without asking: this session is in read-only mode (no commands, no edits, no tool of "
    "an MCP server not marked trusted); "
    "switch the mode to ask or auto to allow them"
)


@dataclass(frozen=True)
class Verdict:
    """An answer the policy gave without asking anyone."""

    allowed: bool
    #: what answered, for the audit: ``mode auto``, ``mode read-only``,
    #: ``always allow execute:program:/usr/bin/ls``
    rule: str
    #: the card's text for a refusal
    reason: str | None = None
    #: an "always allow" of a command: the command with its program by the approved absolute path
    pinned: str | None = None


def command_name(command: str) -> tuple[str, bool]:
    """The program a command line runs (its base name) and whether the line is a *simple*
    command: one program and its plain arguments, nothing a shell would treat specially."""
    first, simple = split_command(command)
    return (os.path.basename(first) or first), simple


@dataclass(frozen=True)
class Rule:
    """The "always" keys one call falls under, and what each would cover, in words."""

    #: what an "always reject" stores and matches
    reject_key: str
    #: what an "always allow" stores and matches; None: "always allow" is not offered
    allow_key: str | None
    allow_covers: str
    reject_covers: str
    #: the command line of a command's rule ('' for any other call)
    command: str = ""

    @classmethod
    def same(cls, key: str, covers: str) -> Rule:
        return cls(key, key, covers, covers)

    @classmethod
    def of_command(cls, rule: CommandRule, command: str) -> Rule:
        return cls(rule.reject_key, rule.allow_key, rule.allow_covers, rule.reject_covers, command)


def rule_for(kind: str, call: Any, tool: Any, workspace: str | None = None) -> Rule:
    """The rule a call falls under (``workspace``: where a command runs, for finding its program).

    ``KIND:mcp:SERVER/TOOL`` for an MCP server's tool (one server's tool is not another's, and a
    ``command`` argument of a server's tool is that server's business, never a local program),
    ``execute:…`` for a command (``arguments.command``, see :func:`command_rule`), else the kind."""
    server = getattr(tool, "server", "")
    if server:
        name = getattr(tool, "mcp_name", "") or call.name
        return Rule.same(f"{kind}:mcp:{server}/{name}", f"MCP tool {server}/{name}")
    command = call.arguments.get("command") if isinstance(call.arguments, dict) else None
    if isinstance(command, str) and command.strip():
        return Rule.of_command(command_rule(kind, command, workspace), command)
    return Rule.same(kind, f"{kind} calls")


def rule_key(kind: str, call: Any, tool: Any, workspace: str | None = None) -> tuple[str, bool]:
    """The "always reject" key of a call and whether an "always allow" may cover it."""
    rule = rule_for(kind, call, tool, workspace)
    return rule.reject_key, rule.allow_key is not None


def permission_options(rule: Rule, with_always: bool = True) -> list[PermissionOption]:
    """The four answers (allow once first: clients that pick "the first allow" stay one-time);
    "always allow" only when the rule may cover the call. Each "always" names what it covers."""
    options = [PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once")]
    if with_always and rule.allow_key is not None:
        options.append(
            PermissionOption(
                option_id=ALLOW_ALWAYS,
                name=f"Always allow {rule.allow_covers} in this session",
                kind="allow_always",
            )
        )
    options.append(PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"))
    options.append(
        PermissionOption(
            option_id=REJECT_ALWAYS,
            name=f"Always reject {rule.reject_covers} in this session",
            kind="reject_always",
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

    def before_asking(self, rule: Rule) -> Verdict | None:
        """The answer without asking anyone, or None: ask the client."""
        with self._lock:
            mode = self.config.mode
            if mode == READ_ONLY:
                return Verdict(False, f"mode {READ_ONLY}", READ_ONLY_REFUSAL)
            rejected = self.config.always.get(rule.reject_key) is False
            allowed = rule.allow_key is not None and self.config.always.get(rule.allow_key) is True
        if rejected:
            why = f"Refused without asking: you chose to always reject {rule.reject_covers} in this session"
            return Verdict(False, f"always reject {rule.reject_key}", why)
        if allowed:
            pinned = pinned_command(rule.command, rule.allow_key or "") if rule.command else None
            return Verdict(True, f"always allow {rule.allow_key}", pinned=pinned)
        if mode == AUTO:
            return Verdict(True, f"mode {AUTO}")
        return None

    def remember(self, rule: Rule, allowed: bool) -> str | None:
        """Keep an "always" answer for the session; returns the audit's rule text, or None when
        it could not be kept (an "always allow" the rule does not offer, or too many)."""
        key = rule.allow_key if allowed else rule.reject_key
        if key is None:
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
