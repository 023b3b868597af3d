"""Sign-in the protocol's way: the auth methods ``initialize`` lists, ``authenticate`` and ``logout``.

The agent has one real credential, the OpenAI-compatible back-end's key and endpoint, and one
back-end that needs none, the embedded model. ACP's auth methods let a client show the person how
to set them up, and the ACP Registry lists only agents that offer an ``agent`` or ``terminal``
method. The methods, as the SDK's types:

* ``embedded`` (``agent``): the embedded offline model; no credential, so ``authenticate`` always
  succeeds and makes it the model of new sessions.
* ``openai-api-key`` (``env_var``): the variables the OpenAI-compatible back-end reads. The key is
  secret and required; the base URL and the model are not secret and optional (they have
  defaults). The client sets them in the agent's environment; ``authenticate`` then checks them
  against the endpoint and makes that back-end the model of new sessions, or says which variable
  is missing or what the server answered.
* ``setup`` (``terminal``), offered only to a client that says it runs terminal sign-in
  (``clientCapabilities.auth.terminal``): the client runs the agent's own command with ``--setup``
  appended in a terminal (``acp-progress serve --setup``), where the person picks a back-end and
  types the key hidden; the choice is saved in the settings file and read by the next start.
  The client does not call ``authenticate`` for it; if one does, the answer says whether a choice
  is saved.

Nothing is forced: with the embedded default, ``session/new`` works without ``authenticate``.
``logout`` removes what ``--setup`` saved and forgets the key the running agent holds.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import (
    AuthEnvVar,
    AuthMethodAgent,
    EnvVarAuthMethod,
    TerminalAuthMethod,
)

from acp_adapter._config_file import ConfigFileError
from acp_adapter.config import ConfigError, Settings

if TYPE_CHECKING:
    pass

__all__ = [
    "EMBEDDED_METHOD",
    "ENV_METHOD",
    "SETUP_ARGS",
    "TERMINAL_METHOD",
    "AuthMethod",
    "SignIn",
    "auth_methods",
    "terminal_sign_in",
]

log = logging.getLogger("acp_progress.sign_in")

EMBEDDED_METHOD = "embedded"
ENV_METHOD = "openai-api-key"
TERMINAL_METHOD = "setup"
#: what a client appends to the agent's command line for the terminal method
SETUP_ARGS = ("--setup",)

#: the variables the OpenAI-compatible back-end reads (the settings model declares the same names)
KEY_VAR, BASE_URL_VAR, MODEL_VAR = "OPENAI_API_KEY", "OPENAI_BASE_URL", "ACP_PROGRESS_OPENAI_MODEL"

#: the longest an endpoint check inside ``authenticate`` may take
CHECK_TIMEOUT = 15.0

AuthMethod = EnvVarAuthMethod | TerminalAuthMethod | AuthMethodAgent


def terminal_sign_in(client_capabilities: Any) -> bool:
    """Whether the client runs terminal sign-in: ``auth.terminal`` (the protocol's capability), or
    the ``terminal-auth`` flag in its ``_meta`` that clients used before the capability existed."""
    auth = getattr(client_capabilities, "auth", None)
    if getattr(auth, "terminal", False) is True:
        return True
    meta = getattr(client_capabilities, "field_meta", None)
    return isinstance(meta, Mapping) and meta.get("terminal-auth") is True


def auth_methods(client_capabilities: Any) -> list[AuthMethod]:
    """The methods ``initialize`` lists for this client (the terminal one only where it runs)."""
    methods: list[AuthMethod] = [
        AuthMethodAgent(
            id=EMBEDDED_METHOD,
            name="Embedded model",
            description="The built-in offline model: no account, no key, no network",
        ),
        EnvVarAuthMethod(
            type="env_var",
            id=ENV_METHOD,
            name="OpenAI-compatible API key",
            description="OpenAI, or any OpenAI-compatible server (Ollama, vLLM, LM Studio …)",
            vars=[
                AuthEnvVar(name=KEY_VAR, label="API key", secret=True, optional=False),
                AuthEnvVar(
                    name=BASE_URL_VAR,
                    label="Base URL (default https://api.openai.com/v1)",
                    secret=False,
                    optional=True,
                ),
                AuthEnvVar(name=MODEL_VAR, label="Model (default gpt-4o-mini)", secret=False, optional=True),
            ],
            link="https://platform.openai.com/api-keys",
        ),
    ]
    if terminal_sign_in(client_capabilities):
        methods.append(
            TerminalAuthMethod(
                type="terminal",
                id=TERMINAL_METHOD,
                name="Set up in a terminal",
                description="Pick the embedded model or an OpenAI-compatible endpoint and type its key",
                args=list(SETUP_ARGS),
            )
        )
    return methods


def _failed(method_id: str, details: str, **data: Any) -> RequestError:
    """An ``authenticate`` error whose message itself says what is wrong (clients show the message)."""
    from acp_adapter.safety.redact import redact_text

    text = redact_text(details)
    data = {"methodId": method_id, "details": text, **data}
    return RequestError(-32000, f"Authentication failed: {text}", data)


class SignIn:
    """``authenticate`` and ``logout`` for one agent: each returns the settings new sessions use."""

    def __init__(self, settings_file: Path | None) -> None:
        #: the settings file ``--setup`` writes (None: this environment has no home for one)
        self.settings_file = settings_file

    async def authenticate(self, method_id: str, settings: Settings) -> Settings:
        if method_id == EMBEDDED_METHOD:
            return settings.replace(model="embedded")
        if method_id == ENV_METHOD:
            return await self._from_environment(settings)
        if method_id == TERMINAL_METHOD:
            return self._after_setup(settings)
        known = ", ".join((EMBEDDED_METHOD, ENV_METHOD, TERMINAL_METHOD))
        raise RequestError.invalid_params(
            {"methodId": method_id[:200], "details": f"unknown auth method; this agent offers: {known}"}
        )

    async def _from_environment(self, settings: Settings) -> Settings:
        openai = settings.openai
        if not openai.api_key:
            raise _failed(
                ENV_METHOD,
                f"{KEY_VAR} is not set in the agent's environment; set it (and optionally "
                f"{BASE_URL_VAR} and {MODEL_VAR}) and start the agent again",
                missing=[KEY_VAR],
            )
        import anyio

        from acp_adapter.models.openai_check import check_endpoint

        check = await anyio.to_thread.run_sync(
            lambda: check_endpoint(
                openai.base_url, openai.api_key, openai.model, timeout=min(openai.timeout, CHECK_TIMEOUT)
            ),
            abandon_on_cancel=True,
        )
        if not check.ok:
            raise _failed(ENV_METHOD, check.message)
        log.info("signed in with %s: %s", KEY_VAR, check.message)
        return settings.replace(model="openai")

    def _after_setup(self, settings: Settings) -> Settings:
        from acp_adapter.config.sign_in_file import stored_backend

        try:
            stored = stored_backend(self.settings_file) if self.settings_file is not None else None
        except (ConfigError, ConfigFileError) as exc:
            raise _failed(TERMINAL_METHOD, str(exc)) from None
        if stored is None:
            raise _failed(
                TERMINAL_METHOD,
                "nothing is set up yet: the client runs this method in a terminal "
                "(acp-progress serve --setup), then starts the agent again",
            )
        return settings

    def logout(self, settings: Settings) -> Settings:
        """Remove the saved choice from the settings file; forget the key this process holds."""
        from acp_adapter.config.sign_in_file import clear_choice

        if self.settings_file is not None:
            try:
                removed = clear_choice(self.settings_file)
            except (ConfigError, ConfigFileError, OSError) as exc:
                from acp_adapter.safety.redact import redact_text

                details = redact_text(f"logout could not clear the saved back-end: {exc}")
                raise RequestError.internal_error({"details": details}) from None
            if removed:
                log.info("logout: cleared the saved back-end from %s", self.settings_file)
        openai = {**settings.openai.model_dump(), "api_key": ""}
        return settings.replace(model="embedded", openai=openai)
