"""Private paths: the rule ssh applies to ``~/.ssh``, for the state directory, the session database
and the settings file.

Conversations, the permission audit and model keys live in these paths. A directory or file that
another user owns, or that another user may write, lets that user read the conversation while the
agent writes it, plant a database trigger, or point ``[openai] base_url`` at a server of theirs and
receive the user's key. So a path is used only when it is owned by the current user (or root, for
a directory such as ``/`` above it) and nobody else may write to it; otherwise the error names the
path and the fix, and nothing is read or written there.

Only the standard library: every layer above may call it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from acp_adapter.errors import AcpProgressError

#: the mode every directory this package creates gets, whatever the umask
PRIVATE_DIR_MODE = 0o700
#: the mode every file this package creates in a private directory gets
PRIVATE_FILE_MODE = 0o600


class UnsafePathError(AcpProgressError, PermissionError):
    """A path that others own or may write; the message names the path and how to fix it."""


def _owner_ok(st: os.stat_result, *, allow_root: bool) -> bool:
    uid = os.geteuid()
    return st.st_uid == uid or (allow_root and st.st_uid == 0)


def check_private(path: Path, *, what: str, readable_by_others: bool = True) -> os.stat_result:
    """Refuse ``path`` unless it is owned by the current user and not group/world-writable.

    ``what`` names it in the error ("the state directory", "the settings file" …).
    ``readable_by_others=False`` also refuses group/world read (a database that holds the
    conversation). A symbolic link is judged by what it points at, as ssh does; the link itself
    is not followed when it is dangling (the caller's open reports that).
    Returns the ``stat`` result so the caller can check the kind of file.
    """
    st = path.stat()
    mode = stat.S_IMODE(st.st_mode)
    is_dir = stat.S_ISDIR(st.st_mode)
    if not _owner_ok(st, allow_root=False):
        raise UnsafePathError(
            f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}): "
            f"another user could read or change it. Use a {'directory' if is_dir else 'file'} "
            f"of your own (or, if it is yours, run: chown {os.geteuid()} {path})"
        )
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePathError(
            f"{what} {path} may be written by other users (mode {mode:04o}): "
            f"run chmod go-w {path}" + (" (or chmod 700)" if is_dir else " (or chmod 600)")
        )
    if not readable_by_others and mode & (stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH):
        raise UnsafePathError(
            f"{what} {path} may be read by other users (mode {mode:04o}): "
            f"run chmod {'700' if is_dir else '600'} {path}"
        )
    return st


def check_parent(path: Path, *, what: str) -> None:
    """Refuse ``path`` when the directory holding it may be written by another user (they could
    replace the file between two reads) — root-owned directories such as ``/home`` are fine,
    as they are for ssh; a world-writable sticky directory such as ``/tmp`` is not."""
    parent = path.parent
    st = parent.stat()
    mode = stat.S_IMODE(st.st_mode)
    if not _owner_ok(st, allow_root=True):
        raise UnsafePathError(
            f"{what} {path} is in {parent}, a directory owned by uid {st.st_uid}, not by you: "
            "another user could replace it. Move it to a directory of your own"
        )
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePathError(
            f"{what} {path} is in {parent}, which other users may write (mode {mode:04o}): "
            "another user could replace it. Move it to a directory of your own, "
            f"or run chmod go-w {parent}"
        )


def make_private_dir(path: Path, *, what: str) -> Path:
    """Create ``path`` and any missing parents 0700 (whatever the umask), then check it with
    :func:`check_private`. An existing directory is checked, never chmod-ed into shape silently:
    a directory another user prepared stays theirs and is refused."""
    if not path.is_absolute():
        raise UnsafePathError(
            f"{what} {path} is a relative path: it would land inside whatever directory the "
            "agent runs in (a workspace). Give an absolute path"
        )
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:  # another process made it meanwhile: it is checked below
            continue
        os.chmod(directory, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask
    st = check_private(path, what=what)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{what} {path} is not a directory")
    return path
