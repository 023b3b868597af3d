"""The ssh rule for private paths: owned by the user, writable by nobody else, created 0700/0600."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_adapter.safety.private_path import (
    UnsafePathError,
    check_parent,
    check_private,
    make_private_dir,
)

OTHER_UID = 65534  # nobody


def test_parents_are_created_0700_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        made = make_private_dir(tmp_path / "a" / "b" / "state", what="the state directory")
    finally:
        os.umask(old)
    for directory in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert oct(directory.stat().st_mode & 0o777) == oct(0o700)


def test_a_relative_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafePathError, match="relative path"):
        make_private_dir(Path("relative/dir"), what="the state directory")


def test_an_existing_world_writable_directory_is_refused_not_chmodded(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UnsafePathError, match="chmod go-w"):
        make_private_dir(shared, what="the state directory")
    assert shared.stat().st_mode & 0o777 == 0o777


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "sessions.sqlite3"
    planted.write_bytes(b"")
    planted.chmod(0o600)
    os.chown(planted, OTHER_UID, OTHER_UID)
    with pytest.raises(UnsafePathError, match="not by you"):
        check_private(planted, what="the session database")


def test_a_group_readable_database_is_refused_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    db.write_bytes(b"")
    db.chmod(0o640)
    check_private(db, what="the session database")  # writable by nobody else: fine by default
    with pytest.raises(UnsafePathError, match="read by other users"):
        check_private(db, what="the session database", readable_by_others=False)


def test_a_file_in_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    config = drop / "config.toml"
    config.write_text("")
    with pytest.raises(UnsafePathError, match="other users may write"):
        check_parent(config, what="the settings file")
    check_parent(tmp_path / "x", what="the settings file")  # our own 0700 directory
