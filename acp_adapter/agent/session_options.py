"""A session's configuration as the client sees it: its mode and model (the config options and the
older ``session/set_mode``), the "always" answers its policy keeps, the slash commands the agent
answers itself (``/help``, ``/title``) and the commands update a client gets for a new session.

Everything it uses is handed to it: the session store and its writer (each change is stored off
the loop), the model menu (a sign-in rebuilds it), the recorder (``/title``) and the outbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    PromptResponse,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
)

from acp_adapter.agent.commands import Command, clean_title, commands_update, help_text
from acp_adapter.agent.permissions import SessionPolicy
from acp_adapter.agent.session_config import (
    MODE_IDS,
    SESSION_CONFIG,
    ModelChoice,
    SessionConfig,
    config_options,
)
from acp_adapter.agent.session_parts import BUSY
from acp_adapter.agent.turn_outcome import iso_now
from acp_adapter.agent.turn_output import new_message_id
from acp_adapter.store import StoreError

if TYPE_CHECKING:
    from acp_adapter.agent.outbox import UpdateOutbox
    from acp_adapter.agent.session import Session
    from acp_adapter.store import BackgroundWriter, SessionStore
    from acp_adapter.store.recorder import ConversationRecorder

__all__ = ["SessionOptions"]

log = logging.getLogger("acp_progress.server")


class SessionOptions:
    """Modes, models, config options and the agent's own commands, for every live session."""

    def __init__(
        self,
        *,
        store: SessionStore,
        writer: BackgroundWriter,
        recorder: ConversationRecorder,
        model_menu: Callable[[], list[ModelChoice]],
        outbox: Callable[[], UpdateOutbox],
    ) -> None:
        self._store = store
        self._writer = writer
        self._recorder = recorder
        self._model_menu = model_menu
        self._outbox = outbox

    # ------------------------------------------------------------ configuration

    def defaults(self) -> SessionConfig:
        """A new session's configuration: the default mode, the menu's first model."""
        return SessionConfig(model=self._model_menu()[0].id)

    def listed(self, config: SessionConfig) -> list[Any]:
        """The config options a response or update lists for ``config``."""
        return config_options(config, self._model_menu())

    def config_of(self, session: Session) -> SessionConfig:
        if session.policy is None:
            session.policy = self.policy_for(session.id, self.defaults())
        return session.policy.config

    def policy_for(self, session_id: str, config: SessionConfig) -> SessionPolicy:
        """The session's policy; each change is stored (through the writer: off the loop and off
        the tool's worker thread)."""

        def store(changed: SessionConfig) -> None:
            snapshot = changed.to_json()
            self._writer.submit(lambda: self._store.put(SESSION_CONFIG, session_id, snapshot))

        return SessionPolicy(config, on_change=store)

    def stored_config(self, session_id: str) -> SessionConfig:
        """On a worker thread: the stored configuration, checked, or the defaults."""
        menu = self._model_menu()
        try:
            value = self._store.get(SESSION_CONFIG, session_id)
        except StoreError as exc:
            log.warning("session %s: its stored configuration could not be read: %s", session_id, exc)
            value = None
        return SessionConfig.from_json(value, menu[0].id, menu)

    def announce(self, session: Session) -> None:
        """What a client learns of a session it just opened: the commands it may type."""
        self._outbox().submit(session.id, commands_update())

    def _config_updates(self, session: Session, mode_changed: bool) -> list[Any]:
        config = self.config_of(session)
        updates: list[Any] = [
            ConfigOptionUpdate(session_update="config_option_update", config_options=self.listed(config))
        ]
        if mode_changed:
            updates.append(
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=config.mode)
            )
        return updates

    async def set_mode(self, session: Session, mode_id: str) -> SetSessionModeResponse:
        """The older ``session/set_mode``: the same switch as the ``mode`` config option."""
        await self._switch(session, "mode", mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, session: Session, config_id: str, value: str | bool
    ) -> SetSessionConfigOptionResponse:
        """``session/set_config_option``: ``mode`` or ``model``; the answer holds every option."""
        await self._switch(session, config_id, value)
        return SetSessionConfigOptionResponse(config_options=self.listed(self.config_of(session)))

    async def _switch(self, session: Session, config_id: str, value: object) -> None:
        """Switch ``mode`` or ``model``; the client is told (config options, current mode)."""
        self.config_of(session)  # makes the session's policy when it has none yet
        policy: SessionPolicy = session.policy
        if config_id == "mode":
            if value not in MODE_IDS:
                raise RequestError.invalid_params(
                    {
                        "value": str(value)[:100],
                        "details": f"unknown mode; one of {', '.join(sorted(MODE_IDS))}",
                    }
                )
            policy.set_mode(str(value))
            log.info("session %s: mode %s", session.id, value)
        elif config_id == "model":
            known = [choice.id for choice in self._model_menu()]
            if value not in known:
                raise RequestError.invalid_params(
                    {"value": str(value)[:100], "details": f"unknown model; one of {', '.join(known)}"}
                )
            policy.set_model(str(value))
            log.info("session %s: model %s", session.id, value)
        else:
            raise RequestError.invalid_params(
                {"configId": str(config_id)[:100], "details": "unknown config option; one of mode, model"}
            )
        outbox = self._outbox()
        for update in self._config_updates(session, mode_changed=config_id == "mode"):
            outbox.submit(session.id, update)
        await outbox.flush()

    # ------------------------------------------------------------ commands

    async def answer_command(self, session: Session, command: Command) -> PromptResponse:
        """Answer a slash command without the model (and without a turn of the model's)."""
        if session.cancel is not None:
            raise RequestError.invalid_request({"sessionId": session.id, "details": BUSY})
        config = self.config_of(session)
        outbox = self._outbox()
        if command.name == "title":
            title = clean_title(command.argument)
            if title is None:
                text = "Usage: /title NAME — renames this session."
            else:
                self._recorder.set_title(session.id, session.cwd, title)
                info = SessionInfoUpdate(
                    session_update="session_info_update", title=title, updated_at=iso_now()
                )
                outbox.submit(session.id, info)
                text = f"Session renamed: {title}"
        else:
            specs = session.toolbox.specs() if session.toolbox is not None else []
            text = help_text([(s.name, s.description) for s in specs], config, self._model_menu())
        chunk = AgentMessageChunk(
            session_update="agent_message_chunk",
            content=TextContentBlock(type="text", text=text),
            message_id=new_message_id(),
        )
        outbox.submit(session.id, chunk)
        await outbox.flush()
        await self._writer.flush_async(1.0)
        return PromptResponse(stop_reason="end_turn")
