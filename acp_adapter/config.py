"""Settings from the environment (and CLI flags), validated up front with clear errors.

A typo in ``ACP_PROGRESS_HEARTBEAT_INTERVAL`` should stop the agent at start-up with a message that
names the variable, not surface as a silent 30-second default or a traceback mid-turn.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["MODEL_CHOICES", "ConfigError", "OpenAISettings", "Settings", "parse_bool"]

MODEL_CHOICES = ("embedded", "openai")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigError(ValueError):
    """A setting has a value the agent cannot use; the message names the setting."""


def parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}: expected one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def _parse_float(name: str, raw: str, *, minimum: float, allow_equal: bool) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}: expected a number of seconds, got {raw!r}") from None
    if not math.isfinite(value) or value < minimum or (value == minimum and not allow_equal):
        op = ">=" if allow_equal else ">"
        raise ConfigError(f"{name}: must be {op} {minimum:g}, got {raw!r}")
    return value


def _parse_int(name: str, raw: str, *, minimum: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}: expected a whole number, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name}: must be >= {minimum}, got {raw!r}")
    return value


@dataclass(frozen=True)
class OpenAISettings:
    """Connection settings of the OpenAI-compatible back-end."""

    base_url: str = "https://api.openai.com/v1"
    api_key: str = ""
    model: str = "gpt-4o-mini"
    timeout: float = 120.0
    max_retries: int = 2
    context_window: int | None = None


@dataclass(frozen=True)
class Settings:
    """Everything the agent reads from its environment, already validated."""

    heartbeat_interval: float = 30.0
    heartbeat_disabled: bool = False
    model: str = "embedded"
    embedded_delay: float = 2.0
    embedded_chunk_delay: float = 0.03
    max_turns: int = 8
    max_workers: int = 256
    openai: OpenAISettings = field(default_factory=OpenAISettings)

    def __post_init__(self) -> None:
        if self.model not in MODEL_CHOICES:
            raise ConfigError(
                f"ACP_PROGRESS_MODEL: expected one of {', '.join(MODEL_CHOICES)}; got {self.model!r}"
            )
        if not self.heartbeat_interval > 0:
            raise ConfigError(f"heartbeat interval must be > 0 seconds, got {self.heartbeat_interval!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        kwargs: dict[str, object] = {}
        if (raw := env.get("ACP_PROGRESS_HEARTBEAT_INTERVAL")) is not None:
            kwargs["heartbeat_interval"] = _parse_float(
                "ACP_PROGRESS_HEARTBEAT_INTERVAL", raw, minimum=0, allow_equal=False
            )
        if (raw := env.get("ACP_PROGRESS_HEARTBEAT_DISABLED")) is not None:
            kwargs["heartbeat_disabled"] = parse_bool("ACP_PROGRESS_HEARTBEAT_DISABLED", raw)
        if (raw := env.get("ACP_PROGRESS_MODEL")) is not None:
            kwargs["model"] = raw.strip().lower() or "embedded"
        if (raw := env.get("ACP_PROGRESS_EMBEDDED_DELAY")) is not None:
            kwargs["embedded_delay"] = _parse_float(
                "ACP_PROGRESS_EMBEDDED_DELAY", raw, minimum=0, allow_equal=True
            )
        if (raw := env.get("ACP_PROGRESS_EMBEDDED_CHUNK_DELAY")) is not None:
            kwargs["embedded_chunk_delay"] = _parse_float(
                "ACP_PROGRESS_EMBEDDED_CHUNK_DELAY", raw, minimum=0, allow_equal=True
            )
        if (raw := env.get("ACP_PROGRESS_MAX_TURNS")) is not None:
            kwargs["max_turns"] = _parse_int("ACP_PROGRESS_MAX_TURNS", raw, minimum=1)
        if (raw := env.get("ACP_PROGRESS_MAX_WORKERS")) is not None:
            kwargs["max_workers"] = _parse_int("ACP_PROGRESS_MAX_WORKERS", raw, minimum=1)
        kwargs["openai"] = _openai_from_env(env)
        return cls(**kwargs)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> Settings:
        """A copy with ``changes`` applied (CLI flags override the environment)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _openai_from_env(env: Mapping[str, str]) -> OpenAISettings:
    defaults = OpenAISettings()
    timeout = defaults.timeout
    if (raw := env.get("ACP_PROGRESS_OPENAI_TIMEOUT")) is not None:
        timeout = _parse_float("ACP_PROGRESS_OPENAI_TIMEOUT", raw, minimum=0, allow_equal=False)
    retries = defaults.max_retries
    if (raw := env.get("ACP_PROGRESS_OPENAI_MAX_RETRIES")) is not None:
        retries = _parse_int("ACP_PROGRESS_OPENAI_MAX_RETRIES", raw, minimum=0)
    context_window = defaults.context_window
    if (raw := env.get("ACP_PROGRESS_OPENAI_CONTEXT_WINDOW", "").strip()) != "":
        context_window = _parse_int("ACP_PROGRESS_OPENAI_CONTEXT_WINDOW", raw, minimum=1)
    return OpenAISettings(
        base_url=env.get("OPENAI_BASE_URL", "").strip() or defaults.base_url,
        api_key=env.get("OPENAI_API_KEY", ""),
        model=env.get("ACP_PROGRESS_OPENAI_MODEL", "").strip() or defaults.model,
        timeout=timeout,
        max_retries=retries,
        context_window=context_window,
    )
