"""The endpoint's own token: made at its first start, kept private in the state directory.

An endpoint on loopback is still reachable by every local user and every page its person opens,
so ``acp-progress agui`` asks for a bearer token by default (as Jupyter does): when none is given
(``--token``, ``ACP_PROGRESS_AGUI_TOKEN``) it reads the one it made before, or makes one and writes
it to ``agui-token`` in the state directory with mode 0600 (created exclusively, never through a
link). Only ``--no-token`` serves without one. Without a state directory (``ACP_PROGRESS_STATE=off``)
the token lives as long as the process.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Final

from acp_adapter.errors import AcpProgressError

log = logging.getLogger("acp_progress.agui.token")

TOKEN_FILE: Final = "agui-token"
#: 32 random bytes, URL-safe: fits a URL fragment and an Authorization header as it is.
TOKEN_BYTES: Final = 32
_MIN_LENGTH: Final = 16


class TokenFileError(AcpProgressError, OSError):
    """The token file exists but cannot be used (not a private regular file, or unreadable)."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def endpoint_token(directory: Path | None) -> tuple[str, bool]:
    """``(token, made_now)``: the stored token, or a new one stored now (``directory`` None: not
    stored). A token file that is not a private (0600, owned by this user) regular file is refused:
    another user could have read or planted it."""
    if directory is None:
        return new_token(), True
    path = directory / TOKEN_FILE
    try:
        return _read(path), False
    except FileNotFoundError:
        pass
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = new_token()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # another endpoint made it meanwhile: use that one
        return _read(path), False
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(token + "\n")
    return token, True


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, encoding="ascii", errors="replace") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.getuid():
            raise TokenFileError(f"{path} must be a regular file of yours with mode 0600 (chmod 600 {path})")
        token = handle.read(4096).strip()
    if len(token) < _MIN_LENGTH:
        raise TokenFileError(f"{path} holds no usable token; delete it and a new one is made")
    return token
