"""A session's switchable settings: its permission mode and its model, as ACP config options.

ACP has two ways for an editor to show and switch them: the stable *session config options* (a
``mode`` and a ``model`` selector, ``session/set_config_option``) and the older *modes*
(``modes`` in the session's answer, ``session/set_mode``). Both are answered from one
:class:`SessionConfig`, so a client that reads either sees the same state.

The modes are permission policies, not personas:

* ``ask`` — ask the client before every command and edit (the behaviour before modes existed);
* ``read-only`` — commands, edits and the tools of MCP servers the person did not mark trusted are
  refused without asking (a server's own "read-only" hint is not believed), the card says why;
* ``auto`` — everything is allowed for this session, each call logged in the audit as automatic.

The configuration is stored with the session (the key-value namespace :data:`SESSION_CONFIG`),
so ``session/load`` and ``session/resume`` bring back the mode, the model and the "always"
answers of the permission policy (:mod:`acp_adapter.agent.permissions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acp.schema import (
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

__all__ = [
    "DEFAULT_MODE",
    "MODES",
    "SESSION_CONFIG",
    "ModelChoice",
    "SessionConfig",
    "config_options",
    "mode_state",
    "model_choices",
]

#: the key-value namespace of each session's stored configuration (keyed by session id)
SESSION_CONFIG = "session_config"

ASK, READ_ONLY, AUTO = "ask", "read-only", "auto"
DEFAULT_MODE = ASK

#: the modes in the order the editor shows them
MODES: tuple[SessionMode, ...] = (
    SessionMode(id=ASK, name="Ask", description="Ask before every command and edit"),
    SessionMode(
        id=READ_ONLY,
        name="Read-only",
        description=(
            "Read and search only: commands, edits and every tool of an MCP server not marked "
            "trusted are refused without asking"
        ),
    ),
    SessionMode(
        id=AUTO,
        name="Auto",
        description="Allow every command and edit in this session without asking (audited as automatic)",
    ),
)
MODE_IDS = frozenset(mode.id for mode in MODES)

#: the most "always" answers a session remembers (a client cannot grow the stored record unbounded)
MAX_RULES = 256


@dataclass(frozen=True)
class ModelChoice:
    """One entry of the model selector: ``id`` is what ``session/set_config_option`` sends."""

    id: str
    name: str
    description: str
    #: ``embedded`` or ``openai``; for ``openai`` the model name the server is asked for
    backend: str
    model_name: str | None = None


def model_choices(settings: Any) -> list[ModelChoice]:
    """The embedded model and the configured OpenAI-compatible model(s), the default first.

    The OpenAI back-end is offered when it is the configured back-end or when a server is
    configured for it (an API key, or a base URL other than the default); a settings object with
    an ``openai_models`` sequence (embedders) offers those names beside the configured model.
    """
    openai = settings.openai
    embedded = ModelChoice("embedded", "Embedded", "The built-in offline model (no network)", "embedded")
    names = [openai.model]
    for extra in getattr(settings, "openai_models", ()) or ():
        if extra and extra not in names:
            names.append(extra)
    configured = (
        settings.model == "openai"
        or bool(openai.api_key)
        or openai.base_url.rstrip("/") != "https://api.openai.com/v1"
    )
    remote = [
        ModelChoice(f"openai:{name}", name, f"{name} at {openai.base_url}", "openai", name) for name in names
    ]
    if settings.model == "openai":
        return [*remote, embedded]
    return [embedded, *remote] if configured else [embedded]


@dataclass
class SessionConfig:
    """The mode, the model and the remembered permission answers of one session."""

    mode: str = DEFAULT_MODE
    model: str = "embedded"
    #: rule key (see :func:`acp_adapter.agent.permissions.rule_for`) -> allowed (True) or rejected
    always: dict[str, bool] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "model": self.model, "always": dict(self.always)}

    @classmethod
    def from_json(cls, value: Any, default_model: str, models: list[ModelChoice]) -> SessionConfig:
        """The stored configuration, each part checked: what this version cannot read (a model no
        longer configured, a mode it does not know) falls back to the default, never fails the load."""
        config = cls(model=default_model)
        if not isinstance(value, dict):
            return config
        if value.get("mode") in MODE_IDS:
            config.mode = value["mode"]
        if any(choice.id == value.get("model") for choice in models):
            config.model = value["model"]
        always = value.get("always")
        if isinstance(always, dict):
            for key, allowed in list(always.items())[:MAX_RULES]:
                if isinstance(key, str) and isinstance(allowed, bool):
                    config.always[key] = allowed
        return config


def mode_state(config: SessionConfig) -> SessionModeState:
    """The older ``modes`` field: the same modes as the ``mode`` selector."""
    return SessionModeState(current_mode_id=config.mode, available_modes=list(MODES))


def config_options(config: SessionConfig, models: list[ModelChoice]) -> list[Any]:
    """The ``configOptions`` of a session: the ``mode`` and the ``model`` selectors."""
    return [
        _selector("mode", "Mode", "What the agent may do without asking", config.mode, MODES),
        _selector("model", "Model", "The model that answers the next prompt", config.model, models),
    ]


def _selector(
    option: Literal["mode", "model"],
    name: str,
    description: str,
    current: str,
    choices: Sequence[SessionMode | ModelChoice],
) -> SessionConfigOptionSelect:
    """One select option (its id is also its category), listing ``choices`` by id, name, description."""
    return SessionConfigOptionSelect(
        id=option,
        name=name,
        description=description,
        category=option,
        type="select",
        current_value=current,
        options=[
            SessionConfigSelectOption(value=c.id, name=c.name, description=c.description) for c in choices
        ],
    )
