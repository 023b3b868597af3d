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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from acp_adapter._config_file import (
    ConfigFileError,
    config_file_path,
    file_label,
    read_config_file,
    warn_if_secret_exposed,
)
from acp_adapter.errors import AcpProgressError

__all__ = [
    "LOG_LEVELS",
    "MODEL_CHOICES",
    "AguiSettings",
    "ConfigError",
    "LoadedSettings",
    "OpenAISettings",
    "SettingSource",
    "Settings",
    "StreamSettings",
    "SummaryOpenAISettings",
    "TelegramSettings",
    "parse_bool",
    "setting",
]

MODEL_CHOICES = ("embedded", "openai")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

ModelName = Literal["embedded", "openai"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
#: ``auto`` is each front-end's own default: embedded for watch, agui and bridges, off for serve and relay.
SummaryModeSetting = Literal["auto", "off", "embedded", "openai"]


class ConfigError(AcpProgressError, ValueError):
    """A setting has a value the agent cannot use; the message names the setting."""


def setting(
    default: Any,
    *,
    env: str,
    help: str,
    flag: str | None = None,
    metavar: str | None = None,
    secret: bool = False,
    **constraints: Any,
) -> Any:
    """Declare one setting: its default, environment variable, optional CLI flag and bounds.

    ``secret=True`` marks a key or token: ``acp-progress config`` never prints it, and a settings
    file that holds it is warned about when others may read the file."""
    extra: dict[str, Any] = {"env": env}
    if secret:
        extra["secret"] = True
    if flag is not None:
        extra["flag"] = flag
    if metavar is not None:
        extra["metavar"] = metavar
    return Field(default, description=help, json_schema_extra=extra, **constraints)


def parse_bool(name: str, raw: str) -> bool:
    """Parse a yes/no value the way every boolean setting does (kept for callers outside the model)."""
    try:
        return _BoolProbe.model_validate({"v": raw}).v
    except ValidationError:
        raise ConfigError(f"{name}: {_BOOL_HINT}; got {raw!r}") from None


_BOOL_HINT = "expected one of 1/0, true/false, yes/no, on/off"


class _BoolProbe(BaseModel):
    v: bool


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _describe(error: ErrorDetails) -> str:
    """Pydantic's error, phrased for a person setting an environment variable or flag."""
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in {"float_parsing", "float_type"}:
        return "expected a number"
    if kind in {"int_parsing", "int_type", "int_from_float"}:
        return "expected a whole number"
    if kind == "bool_parsing":
        return _BOOL_HINT
    if kind == "bool_type":  # only a settings file gives a non-string here
        return "expected true or false"
    if kind == "string_type":
        return "expected a string"
    if kind in {"tuple_type", "list_type"}:
        return "expected a list of strings"
    if kind == "finite_number":
        return "must be a finite number"
    if kind == "greater_than":
        return f"must be > {_num(ctx['gt'])}"
    if kind == "greater_than_equal":
        return f"must be >= {_num(ctx['ge'])}"
    if kind == "less_than":
        return f"must be < {_num(ctx['lt'])}"
    if kind == "less_than_equal":
        return f"must be <= {_num(ctx['le'])}"
    if kind == "literal_error":
        return f"expected one of {ctx['expected']}".replace("'", "")
    if kind == "extra_forbidden":
        return "is not a setting"
    if kind == "string_pattern_mismatch" and str(ctx.get("pattern", "")).startswith("^https?://"):
        return "expected an http:// or https:// URL"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    return str(error["msg"])


_S = TypeVar("_S", bound="_Section")


class _Section(BaseModel):
    """Base of the settings models: frozen, closed (unknown keys are errors), validated.

    Constructing one validates exactly the values given, so a test or an embedder that builds
    ``Settings(...)`` never picks up the variables of whoever runs it. The settings file, the
    environment and the flags are read by pydantic-settings sources in :meth:`Settings.load`,
    which layers them itself so it can say where each value came from and name the variable, flag
    or ``file: [table] key`` of a bad one. (The models are not ``BaseSettings``: its own
    ``__init__`` would run on every ``model_validate``, re-reading sources and dropping the strict
    check a settings file gets.)"""

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        allow_inf_nan=False,  # "inf"/"nan" are refused as "must be a finite number"
        case_sensitive=True,  # as POSIX variable names are: acp_progress_model is not a setting
        enable_decoding=False,  # a variable's text is the field's to parse (lists split on commas), not JSON
    )

    @classmethod
    def _fields_with_env(cls) -> Iterator[tuple[str, str]]:
        for name, info in cls.model_fields.items():
            var = _declared_env(info)
            if var is not None:
                yield name, var

    @classmethod
    def _sections(cls) -> Iterator[tuple[str, type[_Section]]]:
        for name, info in cls.model_fields.items():
            section = _section_type(info)
            if section is not None:
                yield name, section

    @classmethod
    def _section_from_env(
        cls: type[_S], environ: Mapping[str, str] | None, config_file: ConfigFileChoice
    ) -> _S:
        """One section read on its own: its table of the settings file, the environment over it;
        errors name the file's ``table.key`` or the variable, as :meth:`Settings.load` does."""
        env = os.environ if environ is None else environ
        _, file_layer = _file_layer(cls, env, config_file)
        return _validate(cls, [file_layer, _env_layer(cls, env)])[0]

    def to_env(self) -> dict[str, str]:
        """The environment variables that reproduce these settings (for a child agent process)."""
        out: dict[str, str] = {}
        for name, var in self._fields_with_env():
            value = getattr(self, name)
            if value is None:
                continue
            out[var] = ("1" if value else "0") if isinstance(value, bool) else str(value)
        for name, _section in self._sections():
            out.update(getattr(self, name).to_env())
        return out


def _source_target(model: type[_Section]) -> type[BaseSettings]:
    """A settings model as the class pydantic-settings' sources read: they use only its
    ``model_config`` and ``model_fields``, which every pydantic model has."""
    return cast("type[BaseSettings]", model)


def _declared_env(info: FieldInfo) -> str | None:
    """The environment variable :func:`setting` declared for a field (None: a section)."""
    extra = info.json_schema_extra
    var = extra.get("env") if isinstance(extra, dict) else None
    return var if isinstance(var, str) else None


def _declared_flag(info: FieldInfo) -> str | None:
    """The command-line flag :func:`setting` declared for a field, if any."""
    extra = info.json_schema_extra
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return flag if isinstance(flag, str) else None


def _section_type(info: FieldInfo) -> type[_Section] | None:
    ann = info.annotation
    return ann if isinstance(ann, type) and issubclass(ann, _Section) else None


def _declared_env_at(model: type[_Section], loc: tuple[str, ...]) -> str | None:
    """The variable of the setting at ``loc`` (``("openai", "timeout")``), if it has one."""
    current: type[_Section] = model
    for i, part in enumerate(loc):
        info = current.model_fields.get(part)
        if info is None:
            return None
        section = _section_type(info)
        if section is None:
            return _declared_env(info) if i + 1 == len(loc) else None
        current = section
    return None


class _DeclaredEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source, reading each setting from the one variable its
    :func:`setting` declares.

    Only the lookup is ours. The stock one derives variable names from field names — and, with
    ``validate_by_name`` (which the settings file and the flags need), also reads the bare field
    name, so a stray ``STATE`` or ``MODEL`` in someone's environment would become a setting — and
    has no scheme for the variables this package documents (``OPENAI_BASE_URL`` →
    ``openai.base_url``, ``ACP_PROGRESS_MAX_LINE_BYTES`` → ``streams.max_line_bytes``). Reading the
    mapping, building the layer field by field and handing sections over as tables stay the
    library's; a blank variable counts as unset and values lose surrounding blanks."""

    def __init__(self, settings_cls: type[_Section], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(_source_target(settings_cls))

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {name: value.strip() for name, value in self._environ.items() if value.strip()}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        section = _section_type(field)
        if section is not None:
            env = self.env_vars
            table = {name: env[var] for name, var in section._fields_with_env() if var in env}
            return table or None, field_name, True
        var = _declared_env(field)
        return (self.env_vars.get(var) if var is not None else None), field_name, False


@dataclass(frozen=True)
class _Layer:
    """One source of values and, for each value it gives, where it came from and how an error
    about it names it (a variable, a flag, ``file: [table] key``)."""

    source: PydanticBaseSettingsSource
    origin: Callable[[tuple[str, ...]], SettingSource]
    label: Callable[[tuple[str, ...]], str]


def _env_layer(model: type[_Section], env: Mapping[str, str]) -> _Layer:
    def origin(loc: tuple[str, ...]) -> SettingSource:
        return SettingSource("env", _declared_env_at(model, loc))

    return _Layer(_DeclaredEnvSource(model, env), origin, lambda loc: str(_declared_env_at(model, loc)))


def _flag_layer(model: type[_Section], flags: Mapping[str, tuple[str, Any]]) -> _Layer:
    """Flag values (``{field: (flag, value)}``, None skipped) as the topmost source."""
    given = {name: value for name, (_flag, value) in flags.items() if value is not None}
    names = {name: flag for name, (flag, _value) in flags.items()}
    return _Layer(
        InitSettingsSource(_source_target(model), init_kwargs=given),
        lambda loc: SettingSource("flag", names[loc[0]]),
        lambda loc: names[loc[0]],
    )


def _validate(
    model: type[_S], layers: Sequence[_Layer | None]
) -> tuple[_S, dict[tuple[str, ...], SettingSource]]:
    """The layers' values, each over the ones before it (table by table), validated by ``model``;
    and where each value came from. Errors are :class:`ConfigError` naming what set the value."""
    data: dict[str, Any] = {}
    labels: dict[tuple[str, ...], str] = {}
    origins: dict[tuple[str, ...], SettingSource] = {}
    for layer in layers:
        if layer is None:
            continue
        values = layer.source()
        data = _overlay(data, values)
        for loc in _leaves(values):
            labels[loc] = layer.label(loc)
            origins[loc] = layer.origin(loc)
    try:
        return model.model_validate(data), origins
    except ValidationError as exc:
        raise _config_error(exc, model, data, labels) from None


def _label_for(
    model: type[_Section], loc: tuple[str | int, ...], labels: Mapping[tuple[str, ...], str]
) -> str:
    key = tuple(str(part) for part in loc)
    for end in range(len(key), 0, -1):  # an item of a list value: the list's label, then its index
        if key[:end] in labels:
            return ".".join((labels[key[:end]], *key[end:]))
    # Not from a source with labels: name the variable if the field has one, else the field.
    return _declared_env_at(model, key) or ".".join(key)


def _raw_at(data: Mapping[str, Any], loc: tuple[str | int, ...]) -> Any:
    current: Any = data
    for part in loc:
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, tuple | list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]  # an item of a list value (a settings file's array)
        else:
            return None
    return current


def _config_error(
    exc: ValidationError,
    model: type[_Section],
    data: Mapping[str, Any],
    labels: Mapping[tuple[str, ...], str],
) -> ConfigError:
    lines = []
    for error in exc.errors():
        loc = error["loc"]
        label = _label_for(model, loc, labels)
        raw = _raw_at(data, loc)
        got = f", got {raw!r}" if raw is not None and error["type"] != "extra_forbidden" else ""
        lines.append(f"{label}: {_describe(error)}{got}")
    return ConfigError("; ".join(lines))


SourceKind = Literal["default", "file", "env", "flag"]


@dataclass(frozen=True)
class SettingSource:
    """Where one setting's value came from: its default, the settings file (``name`` = its
    path), an environment variable or a flag (``name`` = the variable or flag)."""

    kind: SourceKind
    name: str | None = None

    def __str__(self) -> str:
        return self.kind if self.name is None else f"{self.kind} {self.name}"


DEFAULT_SOURCE = SettingSource("default")


def _leaves(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in data.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, (*prefix, key))
        else:
            yield (*prefix, key)


def _overlay(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``, table by table (a section in both is merged key by key)."""
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        out[key] = (
            _overlay(below, value) if isinstance(value, Mapping) and isinstance(below, Mapping) else value
        )
    return out


ConfigFileChoice = bool | str | os.PathLike[str] | None
"""``True``: the settings file of this environment (the default); ``False``/``None``: none; a
path: that file."""


def _file_layer(
    model: type[_Section], env: Mapping[str, str], config_file: ConfigFileChoice
) -> tuple[Path | None, _Layer | None]:
    """The settings file's path and, when it exists, its values as the lowest source (for a
    section read on its own: just its table). :mod:`acp_adapter._config_file` reads and
    shape-checks the TOML; the model checks its types strictly here (``"10"`` is not a number in a
    file); the values then enter as pydantic-settings' init source, as its own TOML source does."""
    if config_file is True:
        path = config_file_path(env)
    elif config_file is False or config_file is None:
        path = None
    else:
        path = Path(config_file)
    try:
        raw = read_config_file(Settings, path)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from None
    if raw is None or path is None:
        return path, None
    file_path: Path = path
    table: tuple[str, ...] = ()
    if model is not Settings:  # a section read on its own: just its table
        name = next(n for n, sec in Settings._sections() if sec is model)
        raw, table = dict(raw.get(name, {})), (name,)
    labels = {loc: file_label(path, (*table, *loc)) for loc in _leaves(raw)}
    try:
        model.model_validate(raw, strict=True)  # a file has types: "10" is not a number there
    except ValidationError as exc:
        raise _config_error(exc, model, raw, labels) from None
    if model is Settings:
        warn_if_secret_exposed(Settings, path, raw)
    origin = SettingSource("file", str(path))
    return path, _Layer(
        InitSettingsSource(_source_target(model), init_kwargs=raw),
        lambda loc: origin,
        lambda loc: file_label(file_path, (*table, *loc)),
    )


class OpenAISettings(_Section):
    """Connection settings of the OpenAI-compatible back-end."""

    base_url: str = setting(
        "https://api.openai.com/v1", env="OPENAI_BASE_URL", help="the server's /v1 base URL"
    )
    api_key: str = setting(
        "", env="OPENAI_API_KEY", secret=True, help="bearer token; local servers usually need none"
    )
    model: str = setting("gpt-4o-mini", env="ACP_PROGRESS_OPENAI_MODEL", help="model name", min_length=1)
    timeout: float = setting(
        120.0,
        env="ACP_PROGRESS_OPENAI_TIMEOUT",
        help="seconds without any byte from the server before the call fails",
        gt=0,
        le=3600,
    )
    max_retries: int = setting(
        2,
        env="ACP_PROGRESS_OPENAI_MAX_RETRIES",
        help="retries for 429 / 5xx / dropped connections before the first token",
        ge=0,
        le=10,
    )
    context_window: int | None = setting(
        None,
        env="ACP_PROGRESS_OPENAI_CONTEXT_WINDOW",
        help="context size in tokens; when set, usage is sent as usage_update",
        ge=1,
        le=100_000_000,
    )


class SummaryOpenAISettings(_Section):
    """The progress-summary model's own connection: independent of the primary model's."""

    base_url: str = setting(
        "https://api.openai.com/v1",
        env="ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL",
        help="the summary server's /v1 base URL",
    )
    model: str = setting(
        "gpt-4o-mini", env="ACP_PROGRESS_SUMMARY_OPENAI_MODEL", help="summary model name", min_length=1
    )
    api_key: str = setting(
        "", env="ACP_PROGRESS_SUMMARY_OPENAI_API_KEY", secret=True, help="bearer token of the summary server"
    )
    timeout: float = setting(
        20.0,
        env="ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT",
        help="seconds one summary request may take",
        gt=0,
        le=600,
    )


class TelegramSettings(_Section):
    """Limits of the Telegram bridge (``bridge run`` of a telegram instance)."""

    retry_after_cap: float = setting(
        60.0,
        env="ACP_PROGRESS_TELEGRAM_RETRY_AFTER_CAP",
        help="longest 429 retry_after (seconds) a delivery waits; a longer one drops that delivery",
        ge=0,
        le=3600,
    )
    answer_retries: int = setting(
        4,
        env="ACP_PROGRESS_TELEGRAM_ANSWER_RETRIES",
        help="retries of an answer, error or question after a 5xx, malformed reply or timeout",
        ge=0,
        le=10,
    )
    retry_backoff: float = setting(
        0.5,
        env="ACP_PROGRESS_TELEGRAM_RETRY_BACKOFF",
        help="first backoff (seconds) between those retries; doubles each time, at most 8 s",
        gt=0,
        le=60,
    )
    http_timeout: float = setting(
        10.0,
        env="ACP_PROGRESS_TELEGRAM_HTTP_TIMEOUT",
        help="seconds one Bot API call may take (connect, write, read) before it counts as a timeout",
        gt=0,
        le=300,
    )
    refusal_interval: float = setting(
        3600.0,
        env="ACP_PROGRESS_TELEGRAM_REFUSAL_INTERVAL",
        help="seconds between two refusals sent to the same stranger chat",
        ge=0,
        le=604800,
    )
    refusals_per_hour: int = setting(
        60,
        env="ACP_PROGRESS_TELEGRAM_REFUSALS_PER_HOUR",
        help="refusals sent to all strangers together per hour (the rest are silent)",
        ge=0,
        le=100000,
    )
    refusal_memory: int = setting(
        4096,
        env="ACP_PROGRESS_TELEGRAM_REFUSAL_MEMORY",
        help="stranger chats the refusal limiter remembers (oldest forgotten first)",
        ge=1,
        le=1_000_000,
    )
    stop_grace: float = setting(
        3.0,
        env="ACP_PROGRESS_TELEGRAM_STOP_GRACE",
        help="seconds Ctrl-C/SIGTERM leaves for the last edits (stopped lines, unanswered questions)",
        gt=0,
        le=4,
    )
    api_url: str = setting(
        "https://api.telegram.org",
        env="ACP_PROGRESS_TELEGRAM_API_URL",
        help="the Bot API server (a self-hosted one, or a test's fake); /bot<token>/METHOD is appended",
        pattern=r"^https?://\S+$",
        max_length=2000,
    )


def _name_list(value: Any) -> Any:
    """``a,b`` from an environment variable, or a list from repeated flags, as a tuple of names."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class AguiSettings(_Section):
    """Who the AG-UI endpoint admits and how much it takes (issue 18); ``acp-progress agui`` only.

    Read from the environment with everything else; ``acp-progress agui`` lays its own flags on top
    with :meth:`with_flags`. These are the endpoint's own: :meth:`to_env` exports none of them, so
    the token never travels to a child agent through :meth:`Settings.to_env`.
    """

    token: SecretStr | None = setting(
        None,
        env="ACP_PROGRESS_AGUI_TOKEN",
        secret=True,
        help="bearer token every request must carry (Authorization: Bearer ...); "
        "required when bound to a non-loopback address (at least 16 characters, checked by the command)",
    )
    allowed_hosts: tuple[str, ...] = setting(
        (),
        env="ACP_PROGRESS_AGUI_ALLOWED_HOSTS",
        help="extra Host names admitted besides the bound loopback names (comma-separated)",
    )
    allowed_origins: tuple[str, ...] = setting(
        (),
        env="ACP_PROGRESS_AGUI_ALLOWED_ORIGINS",
        help="extra browser origins admitted, with CORS (comma-separated, e.g. https://app.example)",
    )
    body_timeout: float = setting(
        5.0,
        env="ACP_PROGRESS_AGUI_BODY_TIMEOUT",
        help="seconds a request's headers, and then its body, may take to arrive (408 after)",
        gt=0,
        le=600,
    )
    max_body_bytes: int = setting(
        16 * 1024 * 1024,
        env="ACP_PROGRESS_AGUI_MAX_BODY_BYTES",
        help="largest POST body accepted (413 beyond)",
        ge=1024,
        le=1024 * 1024 * 1024,
    )
    max_connections: int = setting(
        256,
        env="ACP_PROGRESS_AGUI_MAX_CONNECTIONS",
        help="open HTTP connections at once (beyond: 503 and closed); also kept below the fd limit",
        ge=1,
        le=100_000,
    )
    max_runs: int = setting(
        32,
        env="ACP_PROGRESS_AGUI_MAX_RUNS",
        help="runs in flight at once (beyond: 503 with Retry-After)",
        ge=1,
        le=10_000,
    )
    max_id_length: int = setting(
        256,
        env="ACP_PROGRESS_AGUI_MAX_ID_LENGTH",
        help="longest threadId, runId or message id in characters (422 beyond)",
        ge=8,
        le=4096,
    )
    max_queued_events: int = setting(
        1024,
        env="ACP_PROGRESS_AGUI_MAX_QUEUED_EVENTS",
        help="events a run queues for a slow SSE reader before snapshots coalesce and the agent waits",
        ge=16,
        le=1_000_000,
    )
    tool_progress: bool = setting(
        False,
        env="ACP_PROGRESS_AGUI_TOOL_PROGRESS",
        help="publish TOOL_PROGRESS activity snapshots for every run (--tool-progress); a run "
        "overrides it with forwardedProps.emitToolProgress",
    )

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        return _name_list(value)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> AguiSettings:
        """Just the endpoint's settings from the settings file's ``[agui]`` and the environment
        (for :func:`~acp_adapter.frontends.agui.app.create_app` called without them)."""
        return cls._section_from_env(environ, config_file)

    def to_env(self) -> dict[str, str]:
        return {}  # the endpoint's own settings: never handed to a child process

    def with_flags(self, flags: Mapping[str, tuple[str, Any]]) -> AguiSettings:
        """A validated copy with ``{field: (flag, value)}`` applied (``None`` values skipped).

        Errors are :class:`ConfigError` naming the flag, as :meth:`Settings.load` does.
        """
        model = type(self)
        data: dict[str, Any] = self.model_dump()
        if self.token is not None:
            data["token"] = self.token.get_secret_value()
        current = _Layer(
            InitSettingsSource(_source_target(model), init_kwargs=data),
            lambda loc: DEFAULT_SOURCE,  # not reported: only the copy is returned
            lambda loc: _label_for(model, loc, {}),
        )
        return _validate(model, [current, _flag_layer(model, flags)])[0]


class StreamSettings(_Section):
    """Limits of every JSON-RPC stream the package reads (``serve``, the relay both ways, the client
    driver): enforced in one place, :mod:`acp_adapter.protocol.ndjson`."""

    max_line_bytes: int = setting(
        50 * 1024 * 1024,
        env="ACP_PROGRESS_MAX_LINE_BYTES",
        help="longest JSON-RPC line in bytes; a longer line is skipped whole and answered once",
        ge=1024,
        le=50 * 1024 * 1024,
    )
    max_json_depth: int = setting(
        256,
        env="ACP_PROGRESS_MAX_JSON_DEPTH",
        help="deepest nesting of arrays/objects in a JSON-RPC line; deeper lines are refused unparsed",
        ge=2,
        le=512,
    )
    max_in_flight: int = setting(
        1024,
        env="ACP_PROGRESS_MAX_IN_FLIGHT",
        help="requests from the peer handled at once; at the limit the reader waits for answers",
        ge=1,
        le=100_000,
    )
    write_high_water: int = setting(
        1024 * 1024,
        env="ACP_PROGRESS_WRITE_HIGH_WATER",
        help="bytes queued for a peer that is not reading before the reader stops reading",
        ge=4096,
        le=64 * 1024 * 1024,
    )
    max_queued_updates: int = setting(
        1024,
        env="ACP_PROGRESS_MAX_QUEUED_UPDATES",
        help="a turn's updates waiting for a slow front-end before the client driver stops reading the agent",
        ge=1,
        le=1_000_000,
    )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> StreamSettings:
        """Just these limits from the settings file's ``[streams]`` and the environment (for code
        that has no :class:`Settings`)."""
        return cls._section_from_env(environ, config_file)


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
        help="keep sessions in the SQLite session store (off: in memory only, as before)",
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
