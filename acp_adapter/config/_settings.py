"""The root of the settings, :class:`Settings`, and loading it from the file, the environment and
the flags with the provenance of every value (:class:`LoadedSettings`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from acp_adapter.config._model import (
    DEFAULT_SOURCE,
    LogLevel,
    ModelName,
    SettingSource,
    SummaryModeSetting,
    _config_error,
    _declared_env,
    _declared_flag,
    _Section,
    _section_type,
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
from acp_adapter.config._sources import (
    ConfigFileChoice,
    _env_layer,
    _file_layer,
    _flag_layer,
    _validate,
    register_root,
)


class Settings(_Section):
    """Everything the agent reads from its environment and flags, already validated."""

    heartbeat_interval: float = setting(
        30.0,
        env="ACP_PROGRESS_HEARTBEAT_INTERVAL",
        flag="--heartbeat-interval",
        metavar="SECONDS",
        help="seconds between spinner heartbeats (0.01 to 86400)",
        ge=0.01,
        le=86400,
    )
    heartbeat_disabled: bool = setting(
        False,
        env="ACP_PROGRESS_HEARTBEAT_DISABLED",
        flag="--no-heartbeat",
        help="disable the heartbeat timer entirely",
    )
    model: ModelName = setting(
        "embedded", env="ACP_PROGRESS_MODEL", flag="--model", help="model back-end: embedded or openai"
    )
    embedded_delay: float = setting(
        2.0,
        env="ACP_PROGRESS_EMBEDDED_DELAY",
        flag="--embedded-delay",
        metavar="SECONDS",
        help="think delay of the embedded model (0 to 3600)",
        ge=0,
        le=3600,
    )
    embedded_chunk_delay: float = setting(
        0.03,
        env="ACP_PROGRESS_EMBEDDED_CHUNK_DELAY",
        help="pause between the embedded model's streamed answer chunks",
        ge=0,
        le=60,
    )
    max_turns: int = setting(
        8, env="ACP_PROGRESS_MAX_TURNS", help="model calls per prompt before the turn stops", ge=1, le=1000
    )
    max_workers: int = setting(
        256, env="ACP_PROGRESS_MAX_WORKERS", help="worker threads for concurrent turns", ge=1, le=4096
    )
    command_output_wait: float = setting(
        2.0,
        env="ACP_PROGRESS_COMMAND_OUTPUT_WAIT",
        metavar="SECONDS",
        help="seconds run_command waits for a finished command's last output while a background job "
        "it started still holds the output pipe (0 to 60)",
        ge=0,
        le=60,
    )
    relay_stop_grace: float = setting(
        2.0,
        env="ACP_PROGRESS_RELAY_STOP_GRACE",
        metavar="SECONDS",
        help="seconds the agent the relay wraps gets to exit once its input is closed (half of it) and "
        "after SIGTERM, before its process group is killed (0 to 60)",
        ge=0,
        le=60,
    )
    log_level: LogLevel = setting(
        "WARNING", env="ACP_PROGRESS_LOG_LEVEL", help="level of the stderr log: DEBUG, INFO, WARNING, ERROR"
    )
    max_sessions: int = setting(
        4096,
        env="ACP_PROGRESS_MAX_SESSIONS",
        help="open sessions kept; beyond it the longest-idle session is freed",
        ge=1,
        le=1_000_000,
    )
    session_idle_timeout: float = setting(
        3600.0,
        env="ACP_PROGRESS_SESSION_IDLE_TIMEOUT",
        help="seconds a session may go unused (no prompt running) before it is freed",
        gt=0,
        le=30 * 86400,
    )
    state: bool = setting(
        True,
        env="ACP_PROGRESS_STATE",
        help="keep sessions in the SQLite session store (off: in memory only, gone when the process ends)",
    )
    state_dir: str | None = setting(
        None,
        env="ACP_PROGRESS_STATE_DIR",
        metavar="DIR",
        help="directory of the session store (default $XDG_STATE_HOME/acp-progress, "
        "else ~/.local/state/acp-progress)",
    )
    session_retention_days: float = setting(
        30.0,
        env="ACP_PROGRESS_SESSION_RETENTION_DAYS",
        help="days a stored session is kept after its last use (0 keeps sessions forever)",
        ge=0,
        le=36500,
    )
    max_session_bytes: int = setting(
        20 * 1024 * 1024,
        env="ACP_PROGRESS_MAX_SESSION_BYTES",
        metavar="BYTES",
        help="most bytes one stored session (an AG-UI thread, an editor's conversation) keeps: beyond, "
        "its oldest entries are dropped and a note says so",
        ge=64 * 1024,
        le=1 << 40,
    )
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    summary: SummaryModeSetting = setting(
        "auto",
        env="ACP_PROGRESS_SUMMARY",
        flag="--summary",
        metavar="MODE",
        help="progress summaries: off, embedded, openai (auto: on in watch/agui/bridge, off in serve/relay)",
    )
    summary_interval: float = setting(
        10.0,
        env="ACP_PROGRESS_SUMMARY_INTERVAL",
        flag="--summary-interval",
        metavar="SECONDS",
        help="seconds between progress summaries; 0 = event-driven (0, or 0.01 to 3600)",
        ge=0,
        le=3600,
    )
    summary_max_length: int = setting(
        180,
        env="ACP_PROGRESS_SUMMARY_MAX_LENGTH",
        flag="--summary-max-length",
        metavar="N",
        help="longest progress summary in characters (20 to 1000)",
        ge=20,
        le=1000,
    )
    summary_guidance: str | None = setting(
        None,
        env="ACP_PROGRESS_SUMMARY_GUIDANCE",
        help="extra direction for the summarizer, appended to its safety rules",
        max_length=2000,
    )
    summary_openai: SummaryOpenAISettings = Field(default_factory=SummaryOpenAISettings)
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    agui: AguiSettings = Field(default_factory=AguiSettings)
    streams: StreamSettings = Field(default_factory=StreamSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)

    @field_validator("state_dir")
    @classmethod
    def _state_dir_absolute(cls, value: str | None) -> str | None:
        """A relative state directory would put the database inside whatever workspace the agent
        runs in (where the model's tools can read and write it): refused."""
        if value is not None and not os.path.isabs(os.path.expanduser(value)):
            raise PydanticCustomError(
                "relative_path",
                "must be an absolute path (or start with ~/): a relative one would put the "
                "session database inside whatever workspace the agent runs in",
            )
        return value

    @field_validator("summary", mode="before")
    @classmethod
    def _fold_summary_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("summary_interval")
    @classmethod
    def _summary_interval_not_tiny(cls, value: float) -> float:
        if 0 < value < 0.01:
            raise PydanticCustomError("summary_interval", "must be 0 (event-driven) or at least 0.01 seconds")
        return value

    @field_validator("model", "log_level", mode="before")
    @classmethod
    def _fold_case(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            return value.lower() if info.field_name == "model" else value.upper()
        return value

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> Settings:
        """Settings from the settings file and the environment (``os.environ`` by default);
        unrelated variables are ignored."""
        return cls.load(environ, config_file=config_file)

    @classmethod
    def load(
        cls,
        environ: Mapping[str, str] | None = None,
        flags: Mapping[str, Any] | None = None,
        *,
        config_file: ConfigFileChoice = True,
    ) -> Settings:
        """Settings from the settings file, the environment over it, flag values (keyed by field
        name) over both."""
        return cls.load_with_sources(environ, flags, config_file=config_file).settings

    @classmethod
    def load_with_sources(
        cls,
        environ: Mapping[str, str] | None = None,
        flags: Mapping[str, Any] | None = None,
        *,
        config_file: ConfigFileChoice = True,
    ) -> LoadedSettings:
        """:meth:`load`, and where each setting came from (what ``acp-progress config`` shows)."""
        env = os.environ if environ is None else environ
        path, file_layer = _file_layer(cls, env, config_file)
        given = flags or {}
        named = {name: (_declared_flag(cls.model_fields[name]) or name, given[name]) for name in given}
        flag_layer = _flag_layer(cls, named)
        settings, origins = _validate(cls, [file_layer, _env_layer(cls, env), flag_layer])
        return LoadedSettings(
            settings,
            {".".join(loc): source for loc, source in origins.items()},
            path,
            file_layer is not None,
        )

    @classmethod
    def fields(cls) -> Iterator[tuple[str, FieldInfo]]:
        """``(dotted name, field)`` of every setting, sections' fields included, in order."""
        for name, info in cls.model_fields.items():
            section = _section_type(info)
            if section is not None:
                for sub, sub_info in section.model_fields.items():
                    yield f"{name}.{sub}", sub_info
            else:
                yield name, info

    @classmethod
    def flag_fields(cls) -> Iterator[tuple[str, str, str | None, str, Any]]:
        """``(field, flag, metavar, help, type)`` of every field with a command-line flag."""
        for name, info in cls.model_fields.items():
            flag = _declared_flag(info)
            extra = info.json_schema_extra
            if flag is not None and isinstance(extra, dict):
                metavar = extra.get("metavar")
                yield (
                    name,
                    flag,
                    str(metavar) if metavar is not None else None,
                    f"{info.description} (env {_declared_env(info)}, default {info.default})",
                    info.annotation,
                )

    def replace(self, **changes: Any) -> Settings:
        """A validated copy with ``changes`` (field names) applied; errors name the field."""
        data = {**self.model_dump(), **changes}
        labels: dict[tuple[str, ...], str] = {(name,): name for name in changes}
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise _config_error(exc, type(self), data, labels) from None


@dataclass(frozen=True)
class LoadedSettings:
    """Settings with the provenance of each value (:meth:`Settings.load_with_sources`)."""

    settings: Settings
    #: dotted field name (``openai.timeout``) → where it came from; absent means the default
    sources: Mapping[str, SettingSource]
    #: the settings file looked for (None: none for this environment), and whether it was read
    config_file: Path | None
    config_file_found: bool

    def source(self, name: str) -> SettingSource:
        return self.sources.get(name, DEFAULT_SOURCE)


register_root(Settings)
