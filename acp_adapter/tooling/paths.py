"""Workspace containment for every tool that touches a file: resolve a path inside the session's
workspace, and open what it names without following a symlink swapped in after the check.

Why a module of its own: reads (``read_file``, ``search``) and writes (``edit_file``, ``write_file``)
must refuse the same escapes the same way, so there is one walk from the workspace with
``O_NOFOLLOW`` for both, and writes land atomically (a temporary file in the same directory, then
``rename``) so a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import uuid
from pathlib import Path

from acp_adapter.tooling.toolbox import ToolError

__all__ = [
    "display",
    "open_regular",
    "read_regular_text",
    "resolve_in_roots",
    "resolve_in_workspace",
    "write_atomically",
]


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """Resolve ``raw`` against the workspace; refuse anything that ends up outside it."""
    if not isinstance(raw, str) or not raw.strip():
        raise ToolError("path must be a non-empty string")
    if "\x00" in raw:
        raise ToolError("path contains a NUL byte")
    candidate = Path(raw.strip()).expanduser()
    if not candidate.is_absolute():
        candidate = workspace / candidate
    resolved = candidate.resolve()
    if resolved != workspace and not resolved.is_relative_to(workspace):
        raise ToolError(f"path '{raw}' is outside the workspace ({workspace})")
    return resolved


def resolve_in_roots(workspace: Path, extra_roots: tuple[Path, ...], raw: str) -> tuple[Path, Path]:
    """Resolve ``raw`` for a read: inside the workspace (a relative path is the workspace's) or
    inside one of the session's additional directories (the client named them, absolute). Returns
    (the root it is in, the resolved path); anything outside every root is refused."""
    try:
        return workspace, resolve_in_workspace(workspace, raw)
    except ToolError:
        if not extra_roots or not Path(raw.strip()).expanduser().is_absolute():
            raise
    resolved = Path(raw.strip()).expanduser().resolve()
    for root in extra_roots:
        if resolved == root or resolved.is_relative_to(root):
            return root, resolved
    raise ToolError(f"path '{raw}' is outside the workspace ({workspace}) and its additional directories")


_NOT_REGULAR = "is not a regular file (a FIFO, socket or device is never read: it could block for ever)"


def _walk_to_parent(workspace: Path, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of the directory holding ``parts[-1]``, reached from the workspace one
    component at a time with ``O_NOFOLLOW`` (``openat``): a symlink on the way is refused, never
    followed. ``create`` makes missing directories (for a new file's parents). The caller closes it."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    dir_fd = os.open(workspace, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=dir_fd)
            next_fd = os.open(part, flags | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
    except BaseException:
        os.close(dir_fd)
        raise
    return dir_fd


def open_regular(workspace: Path, resolved: Path) -> io.BufferedReader:
    """Open a file :func:`resolve_in_workspace` resolved, for reading, safely.

    The path is walked from the workspace one component at a time with ``O_NOFOLLOW`` (``openat``):
    a symlink swapped in after the path was checked is refused, not followed out of the
    workspace. The file is opened ``O_NONBLOCK`` (a FIFO's open would wait for a writer for ever)
    and judged by ``fstat`` of the descriptor it got: only a regular file is read."""
    parts = resolved.relative_to(workspace).parts
    if not parts:
        raise ToolError(f"{display(workspace, resolved)} is a directory")
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    try:
        dir_fd = _walk_to_parent(workspace, parts)
    except OSError as exc:
        raise ToolError(f"cannot open {display(workspace, resolved)}: {exc.strerror or exc}") from None
    try:
        fd = os.open(parts[-1], flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as exc:
        raise ToolError(f"cannot open {display(workspace, resolved)}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{display(workspace, resolved)} {_NOT_REGULAR}")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_regular_text(workspace: Path, resolved: Path, cap: int) -> str:
    """The whole text of a workspace file (opened as :func:`open_regular` does), for an edit: at
    most ``cap`` bytes, strict UTF-8 and no NUL byte, or a :class:`ToolError` saying why not."""
    shown = display(workspace, resolved)
    with open_regular(workspace, resolved) as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise ToolError(f"{shown} is larger than {cap:,} bytes; it is not edited")
    if b"\x00" in data[:4096]:
        raise ToolError(f"{shown} looks like a binary file; it is not edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text; it is not edited") from None


def write_atomically(workspace: Path, resolved: Path, text: str) -> bool:
    """Write ``text`` (UTF-8) to a workspace file atomically; True when the file is new.

    The parent is reached with the same ``O_NOFOLLOW`` walk as reads (missing directories are
    made), the text goes to a fresh temporary file in that directory (``O_EXCL``, never a symlink),
    is synced, then renamed over the target in the same directory: a reader sees the old file or
    the new one, never half of either. An existing target must be a regular file (a symlink, FIFO
    or directory is refused) and keeps its permission bits."""
    shown = display(workspace, resolved)
    parts = resolved.relative_to(workspace).parts
    if not parts:
        raise ToolError(f"{shown} is a directory")
    name = parts[-1]
    try:
        dir_fd = _walk_to_parent(workspace, parts, create=True)
    except OSError as exc:
        raise ToolError(f"cannot write {shown}: {exc.strerror or exc}") from None
    tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise ToolError(f"{shown} is {kind}; it is not overwritten")
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o644
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                if info is not None:  # the umask does not narrow an existing file's bits
                    os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    except OSError as exc:
        raise ToolError(f"cannot write {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)
    return info is None


def display(workspace: Path, path: Path) -> str:
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."
