"""What ``acp-progress serve --setup`` keeps in the settings file, and what ``logout`` removes.

The choice of back-end is ordinary settings (the top-level ``model`` and the ``[openai]`` table's
``base_url``, ``model`` and ``api_key``), so the agent reads it back the way it reads any setting,
under the environment and the flags. Only those keys are written or removed: whatever else the
person keeps in the file, comments included, stays as it was (the file is edited with ``tomlkit``,
which keeps a document's formatting).

The file holds a key, so it is written as every private file of this package is: the directory
``0700`` when created and never one another user may write, the file replaced atomically by a
temporary file created ``0600`` (the key is never on disk with a wider mode, not even briefly).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp_adapter._config_file import ConfigFileError, _read_bounded
from acp_adapter.safety.private_path import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, UnsafePathError, check_parent

__all__ = ["BackendChoice", "clear_choice", "save_choice", "stored_backend"]

#: the keys of the ``[openai]`` table a choice writes and ``logout`` removes
OPENAI_KEYS = ("base_url", "model", "api_key")


@dataclass(frozen=True)
class BackendChoice:
    """The back-end a person picked: the embedded model, or an OpenAI-compatible endpoint."""

    backend: Literal["embedded", "openai"]
    base_url: str = ""
    model: str = ""
    #: never shown: not in ``repr`` (a log line or a traceback of this object holds no key)
    api_key: str = field(default="", repr=False)


def _load(path: Path) -> Any:
    import tomlkit

    content = _read_bounded(path)  # the same safety checks as reading settings (owner, mode, size)
    if content is None:
        return tomlkit.document()
    try:
        return tomlkit.parse(content.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path}: not valid TOML: the file is not UTF-8") from None
    except Exception as exc:  # tomlkit's ParseError (and kin) for a file that is not TOML
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: temporary file ``0600`` in the same directory, fsync, rename."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    try:
        check_parent(path, what="the settings file")
    except UnsafePathError as exc:
        raise ConfigFileError(str(exc)) from None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=parent)
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save_choice(path: Path, choice: BackendChoice) -> None:
    """Write ``choice`` into the settings file at ``path`` (created if missing). Choosing the
    embedded model removes a key stored before: nothing is kept that the choice does not use."""
    import tomlkit

    doc = _load(path)
    doc["model"] = choice.backend
    table = doc.get("openai")
    if choice.backend == "openai":
        if table is None:
            table = tomlkit.table()
            doc["openai"] = table
        table["base_url"] = choice.base_url
        table["model"] = choice.model
        if choice.api_key:
            table["api_key"] = choice.api_key
        elif "api_key" in table:
            del table["api_key"]
    elif table is not None and "api_key" in table:
        del table["api_key"]
    _write_private(path, tomlkit.dumps(doc))


def clear_choice(path: Path) -> bool:
    """Remove what :func:`save_choice` writes (the back-end, the endpoint, its model and key);
    whether the file held any of it. A missing file holds nothing."""
    import tomlkit

    if not path.exists():
        return False
    doc = _load(path)
    removed = False
    if "model" in doc:
        del doc["model"]
        removed = True
    table = doc.get("openai")
    if table is not None:
        for key in OPENAI_KEYS:
            if key in table:
                del table[key]
                removed = True
        if not table:
            del doc["openai"]
    if removed:
        _write_private(path, tomlkit.dumps(doc))
    return removed


def stored_backend(path: Path) -> str | None:
    """The back-end the settings file names (``embedded``/``openai``), None when it names none."""
    if not path.exists():
        return None
    value = _load(path).get("model")
    return str(value) if isinstance(value, str) else None
