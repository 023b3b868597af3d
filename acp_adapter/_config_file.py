"""The settings file: where it is, what it may hold, and reading it without surprises.

``config.toml`` holds any setting of :class:`~acp_adapter.config.Settings` under its field name;
the sections are TOML tables (``[openai]``, ``[summary_openai]``, ``[telegram]``, ``[agui]``,
``[streams]``; and ``[mcp_servers.NAME]``, which is not a setting but a server list, read by
:mod:`acp_adapter.mcp.config`)::

    heartbeat_interval = 10
    summary = "embedded"

    [openai]
    base_url = "http://localhost:11434/v1"
    model = "llama3.2"

The schema is closed: an unknown table or key, a table where a value belongs (or the reverse) and
a value of the wrong TOML type are errors naming the file, the table and the key — the settings
model checks types strictly for the file (``heartbeat_interval = "fast"`` or ``= true`` is refused,
where the environment's text ``"10"`` is parsed). The environment and flags win over the file.

Where: ``$ACP_PROGRESS_CONFIG_DIR/config.toml``, else ``$XDG_CONFIG_HOME/acp-progress/config.toml``,
else ``~/.config/acp-progress/config.toml``. The location is read from the same environment the
settings come from, so a test (or an embedder) that passes its own mapping reads no file of the
user's unless that mapping points at one.

This module knows TOML and the file system; the validation itself is the model's
(:meth:`Settings.load <acp_adapter.config.Settings.load>`).
"""

from __future__ import annotations

import difflib
import logging
import os
import stat
import threading
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.private_path import UnsafePathError, check_parent, check_private

log = logging.getLogger("acp_progress.config")

CONFIG_DIR_ENV = "ACP_PROGRESS_CONFIG_DIR"
CONFIG_FILE_NAME = "config.toml"


class ConfigFileError(AcpProgressError, ValueError):
    """The settings file cannot be used; the message names the file (and the table and key)."""


def config_file_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the settings file is for this environment (it may not exist); None when the
    environment names no home at all (an explicit mapping without ``HOME``)."""
    env = os.environ if environ is None else environ

    def var(name: str) -> str:
        return (env.get(name) or "").strip()

    if var(CONFIG_DIR_ENV):
        return Path(var(CONFIG_DIR_ENV)).expanduser() / CONFIG_FILE_NAME
    xdg = var("XDG_CONFIG_HOME")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: a relative value is to be ignored
        return Path(xdg) / "acp-progress" / CONFIG_FILE_NAME
    home = var("HOME")
    if home:
        return Path(home) / ".config" / "acp-progress" / CONFIG_FILE_NAME
    if environ is None:
        try:
            return Path.home() / ".config" / "acp-progress" / CONFIG_FILE_NAME
        except RuntimeError:
            return None
    return None


def file_label(path: Path, loc: tuple[str, ...]) -> str:
    """``/x/config.toml: [openai] timeout`` (a top-level key has no table)."""
    if len(loc) > 1:
        return f"{path}: [{loc[0]}] {'.'.join(loc[1:])}"
    return f"{path}: {loc[0]}" if loc else str(path)


def _setting_names(model: type[BaseModel]) -> list[str]:
    """The keys of ``model`` that hold a value (not a table)."""
    return [name for name in model.model_fields if _section_model(model, name) is None]


def _section_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    info = model.model_fields.get(name)
    ann = info.annotation if info is not None else None
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


#: Tables of the settings file that are not settings: each is read by its own module
#: (``[mcp_servers.NAME]``: :func:`acp_adapter.mcp.config.servers_from_settings_file`).
OWN_TABLES = frozenset({"mcp_servers"})

#: the largest settings file read (a real one is a few hundred bytes)
MAX_FILE_BYTES = 1024 * 1024
#: the deepest nesting of tables and arrays accepted (the schema needs 3: a table's list of names)
MAX_DEPTH = 8


class _Shape:
    """Every problem of the file's shape, collected (a file with three mistakes names all three)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []

    def value(self, loc: tuple[str, ...], value: Any) -> tuple[bool, Any]:
        if isinstance(value, dict):
            self.problems.append(f"{file_label(self.path, loc)}: expected a value, got a table")
            return False, None
        if isinstance(value, list):
            if any(isinstance(item, list | dict) for item in value):
                self.problems.append(
                    f"{file_label(self.path, loc)}: expected a list of values, got nested lists"
                )
                return False, None
            return True, tuple(value)  # TOML arrays are the model's tuples; the model checks the items
        return True, value

    def check(self, model: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
        """The file's tables and keys checked against the model's fields (by field name only:
        ``ACP_PROGRESS_…`` variable names are for the environment); what is well-shaped is kept."""
        path = self.path
        data: dict[str, Any] = {}
        for key, value in raw.items():
            section = _section_model(model, key)
            if section is not None:
                if not isinstance(value, dict):
                    self.problems.append(f"{path}: [{key}] must be a table, got {_short(value)}")
                    continue
                table: dict[str, Any] = {}
                for sub, item in value.items():
                    if sub not in section.model_fields or _section_model(section, sub) is not None:
                        hint = did_you_mean(sub, _setting_names(section))
                        self.problems.append(f"{file_label(path, (key, sub))}: is not a setting{hint}")
                        continue
                    ok, checked = self.value((key, sub), item)
                    if ok:
                        table[sub] = checked
                data[key] = table
            elif key in OWN_TABLES:  # read and checked by its own module (read_config_table)
                if not isinstance(value, dict):
                    self.problems.append(f"{path}: [{key}] must be a table, got {_short(value)}")
            elif key in model.model_fields:
                ok, checked = self.value((key,), value)
                if ok:
                    data[key] = checked
            elif isinstance(value, dict):
                tables = [name for name in model.model_fields if _section_model(model, name)] + list(
                    OWN_TABLES
                )
                hint = did_you_mean(key, tables).replace("mean ", "mean [").replace("?)", "]?)")
                self.problems.append(f"{path}: [{key}] is not a settings table{hint}")
            else:
                hint = did_you_mean(key, _setting_names(model))
                self.problems.append(f"{file_label(path, (key,))}: is not a setting{hint}")
        return data


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean base_url?)`` when ``word`` is a near miss of one of ``choices``, else ``""``."""
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _depth(value: Any, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` levels of tables and arrays (iteratively)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        current, level = todo.pop()
        if level > limit:
            return False
        if isinstance(current, dict):
            todo.extend((item, level + 1) for item in current.values())
        elif isinstance(current, list):
            todo.extend((item, level + 1) for item in current)
    return True


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, read only if it is a regular file of the current user that nobody else
    may write, in a directory nobody else may write (the ssh rule), and at most
    :data:`MAX_FILE_BYTES` long. None when there is no file.

    A FIFO, a device (``/dev/zero``) or a socket is refused without reading: it is opened with
    ``O_NONBLOCK`` (a FIFO's open would wait for a writer) and checked with ``fstat``. The
    ownership check is made on the opened file, so a file swapped in between is what is judged."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigFileError(f"{path}: is a directory, not a settings file") from None
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise ConfigFileError(f"{path}: is a directory, not a settings file")
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(st.st_mode):
            raise ConfigFileError(
                f"{path}: is not a regular file (a FIFO, device or socket is never read as settings)"
            )
        try:
            check_parent(path, what="the settings file")
            checked = check_private(path, what="the settings file")
        except UnsafePathError as exc:
            raise ConfigFileError(str(exc)) from None
        except OSError as exc:
            raise ConfigFileError(
                f"{path}: cannot be checked ({exc.strerror or type(exc).__name__})"
            ) from None
        if (checked.st_dev, checked.st_ino) != (st.st_dev, st.st_ino):
            raise ConfigFileError(f"{path}: changed while it was being read; try again")
        if st.st_size > MAX_FILE_BYTES:
            raise ConfigFileError(
                f"{path}: is larger than {MAX_FILE_BYTES // 1024} KiB; a settings file is not"
            )
        content = handle.read(MAX_FILE_BYTES + 1)
    if content is None or len(content) > MAX_FILE_BYTES:
        raise ConfigFileError(
            f"{path}: is larger than {MAX_FILE_BYTES // 1024} KiB, too large for a settings file"
        )
    return content


def read_config_file_checked(
    model: type[BaseModel], path: Path | None
) -> tuple[dict[str, Any], list[str]] | None:
    """The file's well-shaped settings keyed by field name (sections as dicts), and every problem
    of its shape (unknown keys and tables, a table where a value belongs …); None when there is
    no file. Types and bounds are left to the model. A file that cannot be used at all (unsafe,
    too large, not a regular file, not TOML) raises :class:`ConfigFileError`."""
    raw = _parse(path)
    if raw is None or path is None:
        return None
    shape = _Shape(path)
    data = shape.check(model, raw)
    return data, shape.problems


def read_config_table(path: Path | None, name: str) -> Any:
    """The raw value of one of :data:`OWN_TABLES` in the settings file (None when the file or the
    table is absent); its own module checks it (the file itself is checked as for settings)."""
    raw = _parse(path)
    return None if raw is None else raw.get(name)


def _parse(path: Path | None) -> dict[str, Any] | None:
    """The file as TOML, read safely (:func:`_read_bounded`) and bounded in depth."""
    if path is None:
        return None
    content = _read_bounded(path)
    if content is None:
        return None
    try:
        raw = tomllib.loads(content.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path}: not valid TOML: the file is not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigFileError(f"{path}: nested too deeply (at most {MAX_DEPTH} levels)") from None
    if not _depth(raw, MAX_DEPTH):
        raise ConfigFileError(f"{path}: nested too deeply (at most {MAX_DEPTH} levels)")
    return raw


def secret_fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every field declared ``secret=True``, as a path of field names."""
    for name, info in model.model_fields.items():
        section = _section_model(model, name)
        if section is not None:
            yield from secret_fields(section, (*prefix, name))
            continue
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("secret"):
            yield (*prefix, name)


_warned: set[tuple[str, int]] = set()
_warned_lock = threading.Lock()


def warn_if_secret_exposed(model: type[BaseModel], path: Path, data: Mapping[str, Any]) -> bool:
    """Warn (once per file and mode) when the file holds a secret and its group or others may
    read it. Returns whether this call warned."""
    held = []
    for loc in secret_fields(model):
        current: Any = data
        for part in loc:
            current = current.get(part) if isinstance(current, Mapping) else None
        if current not in (None, ""):
            held.append(".".join(loc))
    if not held:
        return False
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return False
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return False
    with _warned_lock:
        if (str(path), mode) in _warned:
            return False
        _warned.add((str(path), mode))
    log.warning(
        "%s holds a secret (%s) and is readable by others (mode %04o): run chmod 600 %s, "
        "or set it in the environment instead",
        path,
        ", ".join(held),
        mode,
        path,
    )
    return True
