"""Where values come from: the pydantic-settings sources (the settings file, the environment, the
flags) and the layering that validates them once, remembering where each value came from.

:mod:`acp_adapter._config_file` reads and shape-checks the TOML; the model checks its types strictly
here (``"10"`` is not a number in a file); the values then enter as pydantic-settings' init source,
as its own TOML source does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource, InitSettingsSource, PydanticBaseSettingsSource

from acp_adapter._config_file import (
    ConfigFileError,
    config_file_path,
    file_label,
    read_config_file_checked,
    warn_if_secret_exposed,
)
from acp_adapter.config._model import (
    _S,
    ConfigError,
    SettingSource,
    _config_error,
    _declared_env,
    _declared_env_at,
    _leaves,
    _overlay,
    _Section,
    _section_type,
    _source_target,
)

ConfigFileChoice = bool | str | os.PathLike[str] | None
"""``True``: the settings file of this environment (the default); ``False``/``None``: none; a
path: that file."""

_root: list[type[_Section]] = []


def register_root(model: type[_Section]) -> None:
    """Name the root model (:class:`~acp_adapter.config.Settings`) whose schema a settings file
    follows; a section read on its own takes its table of that file."""
    _root[:] = [model]


def _file_root() -> type[_Section]:
    if not _root:  # pragma: no cover - the package's __init__ registers it on import
        raise RuntimeError("acp_adapter.config: no root settings model registered")
    return _root[0]


def section_from_env(cls: type[_S], environ: Mapping[str, str] | None, config_file: ConfigFileChoice) -> _S:
    """One section read on its own: its table of the settings file, the environment over it;
    errors name the file's ``table.key`` or the variable, as ``Settings.load`` does."""
    env = os.environ if environ is None else environ
    _, file_layer = _file_layer(cls, env, config_file)
    return _validate(cls, [file_layer, _env_layer(cls, env)])[0]


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


def _file_layer(
    model: type[_Section], env: Mapping[str, str], config_file: ConfigFileChoice
) -> tuple[Path | None, _Layer | None]:
    """The settings file's path and, when it exists, its values as the lowest source (for a
    section read on its own: just its table)."""
    if config_file is True:
        path = config_file_path(env)
    elif config_file is False or config_file is None:
        path = None
    else:
        path = Path(config_file)
    root = _file_root()
    try:
        read = read_config_file_checked(root, path)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from None
    if read is None or path is None:
        return path, None
    raw, problems = read
    file_path: Path = path
    table: tuple[str, ...] = ()
    if model is not root:  # a section read on its own: just its table
        name = next(n for n, sec in root._sections() if sec is model)
        raw, table = dict(raw.get(name, {})), (name,)
    labels = {loc: file_label(path, (*table, *loc)) for loc in _leaves(raw)}
    try:
        model.model_validate(raw, strict=True)  # a file has types: "10" is not a number there
    except ValidationError as exc:
        # every problem of the file at once: its shape's, then each bad value's
        problems = [*problems, *_config_error(exc, model, raw, labels).problems]
    if problems:
        raise ConfigError("; ".join(problems), problems, file=str(path))
    if model is root:
        warn_if_secret_exposed(root, path, raw)
    origin = SettingSource("file", str(path))
    return path, _Layer(
        InitSettingsSource(_source_target(model), init_kwargs=raw),
        lambda loc: origin,
        lambda loc: file_label(file_path, (*table, *loc)),
    )
