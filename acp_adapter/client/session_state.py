"""What a client knows about one session besides its turns: the agent's commands, modes, config
options, title and usage.

An agent says these things at any time — in the ``session/new`` answer (``modes``,
``configOptions``), and in updates that may come between turns (``available_commands_update``
right after the session opens, ``current_mode_update``, ``config_option_update``,
``session_info_update``, ``usage_update``). The driver folds every update of a session into its
:class:`SessionFacts`, whoever else sees it, so a front-end can ask "which commands does the agent
offer?" or "which mode is it in?" whenever it likes.

The agent's lists are bounded (:data:`MAX_COMMANDS`, :data:`MAX_OPTIONS`): a hostile agent cannot
grow a client's memory with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionModeState,
    UsageUpdate,
)

MAX_COMMANDS = 200
MAX_OPTIONS = 100

ConfigOption = SessionConfigOptionSelect | SessionConfigOptionBoolean


def option_values(option: SessionConfigOptionSelect) -> list[SessionConfigSelectOption]:
    """Every value a select offers (its groups flattened)."""
    values: list[SessionConfigSelectOption] = []
    for item in option.options:
        if isinstance(item, SessionConfigSelectGroup):
            values.extend(item.options)
        else:
            values.append(item)
    return values


def _config_list(options: Any) -> list[ConfigOption]:
    found: list[ConfigOption] = []
    for item in list(options or [])[:MAX_OPTIONS]:
        inner = getattr(item, "root", item)  # the schema wraps the union in a RootModel
        if isinstance(inner, SessionConfigOptionSelect | SessionConfigOptionBoolean):
            found.append(inner)
    return found


@dataclass
class SessionFacts:
    """The latest of each session-level thing the agent said."""

    commands: list[AvailableCommand] = field(default_factory=list)
    modes: SessionModeState | None = None
    config_options: list[ConfigOption] = field(default_factory=list)
    title: str | None = None
    usage: UsageUpdate | None = None

    @classmethod
    def from_response(cls, response: Any) -> SessionFacts:
        """From a ``session/new`` or ``session/load`` answer."""
        facts = cls()
        facts.modes = getattr(response, "modes", None)
        facts.config_options = _config_list(getattr(response, "config_options", None))
        return facts

    def observe(self, update: Any) -> bool:
        """Fold in one update; True when it was a session-level one (something here changed)."""
        if isinstance(update, AvailableCommandsUpdate):
            self.commands = list(update.available_commands)[:MAX_COMMANDS]
        elif isinstance(update, CurrentModeUpdate):
            if self.modes is not None:
                self.modes = self.modes.model_copy(update={"current_mode_id": update.current_mode_id})
            else:
                self.modes = SessionModeState(current_mode_id=update.current_mode_id, available_modes=[])
            mode = self.option("mode")
            if isinstance(mode, SessionConfigOptionSelect):
                self._set_current(mode, update.current_mode_id)
        elif isinstance(update, ConfigOptionUpdate):
            self.set_config_options(update.config_options)
        elif isinstance(update, SessionInfoUpdate):
            if "title" in update.model_fields_set:
                self.title = update.title
        elif isinstance(update, UsageUpdate):
            self.usage = update
        else:
            return False
        return True

    def set_config_options(self, options: Any) -> None:
        self.config_options = _config_list(options)

    def _set_current(self, option: SessionConfigOptionSelect, value: str) -> None:
        self.config_options = [
            o.model_copy(update={"current_value": value}) if o is option else o for o in self.config_options
        ]

    # ------------------------------------------------------------ questions

    def option(self, category: str) -> ConfigOption | None:
        """The config option of a category (``mode``, ``model``), or with that id."""
        for option in self.config_options:
            if option.category == category:
                return option
        return next((o for o in self.config_options if o.id == category), None)

    def command(self, name: str) -> AvailableCommand | None:
        return next((c for c in self.commands if c.name == name), None)

    def current(self, category: str) -> str | None:
        """The current value's name of ``mode`` or ``model`` (a config option, else the modes)."""
        option = self.option(category)
        if isinstance(option, SessionConfigOptionSelect):
            value = option.current_value
            return next((v.name for v in option_values(option) if v.value == value), value)
        if category == "mode" and self.modes is not None:
            current = self.modes.current_mode_id
            return next((m.name for m in self.modes.available_modes if m.id == current), current)
        return None

    def choices(self, category: str) -> list[tuple[str, str]]:
        """``(id, name)`` of every value ``/mode`` or ``/model`` may pick."""
        option = self.option(category)
        if isinstance(option, SessionConfigOptionSelect):
            return [(v.value, v.name) for v in option_values(option)]
        if category == "mode" and self.modes is not None:
            return [(m.id, m.name) for m in self.modes.available_modes]
        return []

    def resolve(self, category: str, wanted: str) -> str | None:
        """The id of the value ``wanted`` names (its id or its name, any case), else None."""
        lowered = wanted.strip().lower()
        for value_id, name in self.choices(category):
            if lowered in (value_id.lower(), name.lower()):
                return value_id
        return None
