"""The settings models' base and their field helpers: :func:`setting`, how a field names its
variable and flag, and how pydantic's errors are phrased for a person.

Nothing here reads a source; :mod:`._sources` does that, :mod:`._sections` and :mod:`._settings`
declare the settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

from acp_adapter.errors import AcpProgressError

#: C0 controls but tab and newline, DEL and C1 controls: never part of a setting's text
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

MODEL_CHOICES = ("embedded", "openai")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

ModelName = Literal["embedded", "openai"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
#: ``auto`` is each front-end's own default: embedded for watch, agui and bridges, off for serve and relay.
SummaryModeSetting = Literal["auto", "off", "embedded", "openai"]


class ConfigError(AcpProgressError, ValueError):
    """A setting has a value the agent cannot use; the message names the setting.

    ``problems`` holds each problem on its own (a settings file with three mistakes has three),
    the message joins them; ``file`` is the settings file they are about, when they are (its path
    begins each of those problems). :meth:`report` is what a command prints."""

    def __init__(
        self, message: str, problems: Sequence[str] | None = None, *, file: str | None = None
    ) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems is not None else [message]
        self.file = file

    def report(self, prefix: str) -> str:
        """``prefix: problem`` for one problem; for several, a line naming how many (and the settings
        file, once, when they are all in it) and then one indented line per problem."""
        if len(self.problems) == 1:
            return f"{prefix}: {self.problems[0]}"
        head = f"{self.file}: " if self.file else None
        in_file = head is not None and all(p.startswith(head) for p in self.problems)
        if in_file:
            lines = [p[len(head or "") :] for p in self.problems]
            return f"{prefix}: {len(lines)} mistakes in {self.file}:" + "".join(
                f"\n  {line}" for line in lines
            )
        return f"{prefix}: {len(self.problems)} problems:" + "".join(f"\n  {p}" for p in self.problems)


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

    @field_validator("*")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        """A NUL or another control character in a string setting is refused here, naming the
        setting, instead of failing later (an environment variable cannot hold a NUL: the agent
        would not start) or reaching a terminal or a URL raw. Newlines and tabs stay allowed."""
        texts = value if isinstance(value, tuple) else (value,)
        for text in texts:
            raw = text.get_secret_value() if isinstance(text, SecretStr) else text
            if isinstance(raw, str):
                bad = _CONTROL.search(raw)
                if bad is not None:
                    code = f"U+{ord(bad.group()):04X}"
                    raise PydanticCustomError(
                        "control_character",
                        "must not contain control characters (found {code})",
                        {"code": code},
                    )
        return value

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


def _is_secret_at(model: type[_Section], loc: tuple[str | int, ...]) -> bool:
    """Whether the setting at ``loc`` is a secret: its bad value is never echoed in an error."""
    current: type[_Section] = model
    for part in loc:
        info = current.model_fields.get(str(part))
        if info is None:
            return False
        section = _section_type(info)
        if section is None:
            extra = info.json_schema_extra
            return isinstance(extra, dict) and bool(extra.get("secret"))
        current = section
    return False


def _config_error(
    exc: ValidationError,
    model: type[_Section],
    data: Mapping[str, Any],
    labels: Mapping[tuple[str, ...], str],
) -> ConfigError:
    from acp_adapter.safety.redact import redact_text

    lines = []
    for error in exc.errors():
        loc = error["loc"]
        label = _label_for(model, loc, labels)
        raw = _raw_at(data, loc)
        shown = raw is not None and error["type"] != "extra_forbidden" and not _is_secret_at(model, loc)
        got = f", got {redact_text(repr(raw))}" if shown else ""  # a URL may hold a password
        lines.append(f"{label}: {_describe(error)}{got}")
    return ConfigError("; ".join(lines), lines)


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
