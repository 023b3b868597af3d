"""The model back-ends the agent serves its sessions with: the configured one, the other entries
of the model selector (built when a session first picks one, then shared), and the ones a sign-in
left behind (still closed at shutdown: a running turn may use one)."""

from __future__ import annotations

import logging

from acp_adapter.agent.session_config import ModelChoice, model_choices
from acp_adapter.config import Settings
from acp_adapter.models import ChatModel, create_model

__all__ = ["ModelBackends"]

log = logging.getLogger("acp_progress.server")


class ModelBackends:
    """The model selector's entries and their back-ends. A model passed in belongs to the caller,
    who closes it; every back-end built here is closed by :meth:`close`."""

    def __init__(self, settings: Settings, given: ChatModel | None = None) -> None:
        self._settings = settings
        self._given = given
        #: the configured back-end (the menu's first entry)
        self.default: ChatModel = given or create_model(settings)
        #: the model selector's entries, the configured back-end first
        self.menu: list[ModelChoice] = model_choices(settings)
        self._built: dict[str, ChatModel] = {self.menu[0].id: self.default}
        self._retired: list[ChatModel] = []

    def for_choice(self, choice_id: str) -> ChatModel:
        """The back-end of a menu entry (built on first use, then shared); the default for an
        entry no longer offered."""
        model = self._built.get(choice_id)
        if model is not None:
            return model
        choice = next((c for c in self.menu if c.id == choice_id), None)
        if choice is None:
            return self.default
        if choice.backend == "openai":
            openai = self._settings.openai.model_copy(update={"model": choice.model_name})
            settings = self._settings.model_copy(update={"model": "openai", "openai": openai})
        else:
            settings = self._settings.model_copy(update={"model": "embedded"})
        model = self._built[choice_id] = create_model(settings)
        log.info("model %s ready", choice_id)
        return model

    def use(self, settings: Settings) -> None:
        """Serve new sessions with ``settings``' back-end: the menu is rebuilt from them and the
        OpenAI-compatible back-ends built with the old ones are retired (closed at shutdown: a
        running turn may still use one); a session whose model is no longer offered falls back to
        the new default."""
        self._settings = settings
        self.menu = model_choices(settings)
        for choice_id in [cid for cid in self._built if cid != "embedded"]:
            self._retired.append(self._built.pop(choice_id))
        default = self.menu[0].id
        model = self._built.get(default)
        if model is None:
            model = self._built[default] = create_model(settings)
        self.default = model
        log.info("new sessions use %s", default)

    def close(self) -> None:
        for model in [*self._built.values(), *self._retired]:
            close = getattr(model, "close", None)
            if model is not self._given and callable(close):
                try:
                    close()
                except Exception:
                    log.exception("closing the model back-end failed")
