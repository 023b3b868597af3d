"""Where sessions really go, and one warning line when they cannot go there.

A state directory that cannot be used (``ACP_PROGRESS_STATE_DIR=/proc/nope``, a directory another
user owns or may write, a read-only disk) must not be silent: the agent falls back to memory, its
error goes to ``--agent-log`` only, and the next ``--continue`` would say "no session to continue"
with no reason. So every command checks the directory before it starts and says so in one line on
stderr. The settings are left as they are: the agent finds the same problem, keeps sessions in
memory, and — the audit fails closed — refuses every tool call that needs permission, with the
reason on its card. Turning the store off here instead would have let an attacker who can spoil the
state directory (a 0777 directory, a planted file) run allowed commands with no audit at all.

The check is the store's own rule (:mod:`acp_adapter.safety.private_path`: created 0700, owned by
you, writable by nobody else) plus a write probe; it imports nothing of the store (start-up time).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_adapter.config import Settings

__all__ = [
    "DATABASE_NAME",
    "StateLocation",
    "check_database",
    "check_state_dir",
    "state_location",
    "warn_if_state_unusable",
]

#: commands that only read the store (they run no tool): the warning says nothing of refusals
READ_ONLY_COMMANDS = frozenset({"audit", "sessions"})

#: the session database's file name in the state directory (the store's ``DATABASE_NAME``)
DATABASE_NAME = "sessions.sqlite3"


@dataclass(frozen=True)
class StateLocation:
    """The resolved state directory, the database file in it, and whether the store is on."""

    directory: Path
    database: Path
    enabled: bool
    #: the PostgreSQL URL sessions go to instead of ``database`` (``[store] url``), or None
    database_url: str | None = None


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/acp-progress``, else ``~/.local/state/acp-progress`` (as the store's)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "state"
    return base / "acp-progress"


def state_location(settings: Settings, environ: Mapping[str, str] | None = None) -> StateLocation:
    directory = Path(settings.state_dir).expanduser() if settings.state_dir else default_state_dir(environ)
    return StateLocation(directory, directory / DATABASE_NAME, settings.state, settings.store.url)


def check_state_dir(directory: Path) -> str | None:
    """Why ``directory`` cannot hold the session store (None: it can). Creates it (0700) when
    missing, as the store would."""
    from acp_adapter.safety.private_path import UnsafePathError, make_private_dir

    try:
        make_private_dir(directory, what="the state directory")
        with tempfile.TemporaryFile(dir=directory, prefix=".probe-"):
            pass
    except UnsafePathError as exc:
        return str(exc)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = exc.filename if isinstance(exc.filename, str) else directory
        return f"the state directory {directory} cannot be used ({reason}: {where})"
    return None


def warn_if_state_unusable(settings: Settings, command: str) -> Settings:
    """One line on stderr when the store is on and its directory cannot be used; the settings
    are returned unchanged (the agent's store then refuses to audit, so allowed calls are refused)."""
    import sys

    if not settings.state or settings.store.url:  # PostgreSQL: see check_database
        return settings
    where = state_location(settings)
    problem = check_state_dir(where.directory)
    if problem is None:
        return settings
    text = (
        f"acp-progress {command}: warning: {problem}; sessions are kept in memory only "
        "(set ACP_PROGRESS_STATE_DIR or state_dir to a directory of your own)"
    )
    if command not in READ_ONLY_COMMANDS:
        text += (
            ", and tool calls that need permission are refused (their audit cannot be written; "
            "ACP_PROGRESS_STATE=off runs without one)"
        )
    print(_one_line(text), file=sys.stderr, flush=True)
    return settings


def check_database(settings: Settings, command: str, timeout: float = 5.0) -> str | None:
    """With ``[store] url`` set: why the PostgreSQL store cannot be used, as one line for stderr
    (None: it answers). Unlike a broken state directory this stops the command (exit 2): the
    processes that share the database would otherwise split into one that remembers and one that
    does not. The line names host and port, never the password."""
    url = settings.store.url
    if not settings.state or not url:
        return None
    from acp_adapter.store.postgres_url import DatabaseUrl

    parsed = DatabaseUrl.parse(url)
    try:
        import psycopg
    except ImportError:
        return _one_line(
            f"acp-progress {command}: the session store is PostgreSQL ({parsed.shown()}) but psycopg is "
            "not installed: pip install 'acp-progress[postgres]'"
        )
    try:
        psycopg.connect(parsed.raw, connect_timeout=max(1, int(timeout))).close()
    except psycopg.Error as exc:
        reason = parsed.clean(" ".join(str(exc).split()) or type(exc).__name__)
        return _one_line(
            f"acp-progress {command}: cannot reach the session database at {parsed.where()} ({reason}); "
            "check ACP_PROGRESS_DATABASE_URL / [store] url, or that the server is up"
        )
    return None


def _one_line(text: str) -> str:
    """Control characters (a path from the environment may hold any) shown, never sent raw."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
