"""One validated configuration: every environment variable and command-line flag, checked up front.

A typo in ``ACP_PROGRESS_HEARTBEAT_INTERVAL`` must stop the agent at start-up with a message that
names the variable, not surface as a silent default or a traceback mid-turn; a value that is a
number but a silly one (``1e-9`` s between heartbeats, ``inf``) is refused with its bounds.

How it works, and how to add a setting (a one-place change)
-----------------------------------------------------------
Every setting is one field of :class:`Settings` (or of a section model such as
:class:`OpenAISettings`, held in a field of :class:`Settings`), declared with :func:`setting`::

    my_limit: int = setting(10, env="ACP_PROGRESS_MY_LIMIT", ge=1, le=1000, help="what it limits")

That one line gives the variable, its parsing and bounds (pydantic constraints: ``gt``/``ge``/
``lt``/``le``, a ``Literal`` type for choices), the error message naming the variable, the README-
style help, and — with ``flag="--my-limit"`` — a command-line flag on ``serve``/``watch``/``run``
(``acp_adapter.cli`` adds every flagged field; the flag's value is validated by the same field).
Section models found in fields of :class:`Settings` are read from the environment the same way.

Where values come from: three pydantic-settings sources, lowest first — the settings file
(:mod:`acp_adapter._config_file` reads the TOML; its tables enter as an ``InitSettingsSource``, as
pydantic-settings' own TOML source does), the environment (an ``EnvSettingsSource`` that reads
each setting from the variable its :func:`setting` declares, see :class:`_DeclaredEnvSource`) and
the flags (an ``InitSettingsSource``). :meth:`Settings.load` layers them table by table and
validates once, keeping for every value the variable, flag or ``file: [table] key`` it came from —
for the error messages and for ``acp-progress config``.

API:

* ``Settings.from_env(environ=None)`` — read and validate the environment (unrelated variables
  are ignored; an empty variable counts as unset).
* ``Settings.load(environ=None, flags={field: raw})`` — environment, then flags on top; errors name
  the flag for flag values.
* ``settings.replace(**changes)`` — a validated copy with field values changed (errors name the field).
* ``settings.to_env()`` — the variables that reproduce these settings in a child process.
* Constructing ``Settings(...)``/``OpenAISettings(...)`` directly (tests, embedders) also validates,
  raising pydantic's ``ValidationError``; the three calls above raise :class:`ConfigError` (both are
  ``ValueError``) whose message starts with the variable or flag name.

Modules: :mod:`._model` (the base model, :func:`setting`, field helpers, error wording),
:mod:`._sources` (the file, environment and flag sources and the layering), :mod:`._sections` (the
section models), :mod:`._settings` (:class:`Settings` and loading). Import from this package.
"""

from __future__ import annotations

from acp_adapter.config._model import (
    DEFAULT_SOURCE,
    LOG_LEVELS,
    MODEL_CHOICES,
    ConfigError,
    SettingSource,
    SourceKind,
    parse_bool,
    setting,
)
from acp_adapter.config._sections import (
    AguiSettings,
    McpSettings,
    OpenAISettings,
    StoreSettings,
    StreamSettings,
    SummaryOpenAISettings,
    TelegramSettings,
)
from acp_adapter.config._settings import LoadedSettings, Settings
from acp_adapter.config._sources import ConfigFileChoice

__all__ = [
    "DEFAULT_SOURCE",
    "LOG_LEVELS",
    "MODEL_CHOICES",
    "AguiSettings",
    "ConfigError",
    "ConfigFileChoice",
    "LoadedSettings",
    "McpSettings",
    "OpenAISettings",
    "SettingSource",
    "Settings",
    "SourceKind",
    "StoreSettings",
    "StreamSettings",
    "SummaryOpenAISettings",
    "TelegramSettings",
    "parse_bool",
    "setting",
]
