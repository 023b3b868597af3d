"""A real PostgreSQL server for the tests: ``initdb`` in a temporary directory, a loopback port,
password authentication, torn down after.

Debian's ``postgresql`` package puts ``initdb``/``pg_ctl`` in ``/usr/lib/postgresql/N/bin`` (not on
PATH); both places are looked at. ``initdb`` refuses to run as root (CI runs as root), so as root
the server runs as ``nobody`` (its directory handed to that user). Each test gets a database of
its own (:meth:`PgServer.create_database`), so tests never see each other's rows.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "acp"


def find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return candidates[0] if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """One throw-away PostgreSQL cluster."""

    def __init__(self) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise FileNotFoundError("initdb/pg_ctl not found (apt-get install postgresql)")
        self.pg_ctl = pg_ctl
        self.password = "pw-" + secrets.token_hex(12)
        self.port = free_port()
        # as root the server runs as nobody, who must reach its directory: /tmp, whatever TMPDIR says
        where = "/tmp" if os.geteuid() == 0 and os.path.isdir("/tmp") else None
        self.root = Path(tempfile.mkdtemp(prefix="acp-progress-pg-", dir=where))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._run_as: str | None = None
        if os.geteuid() == 0:  # initdb refuses root
            self._run_as = "nobody"
            entry = pwd.getpwnam("nobody")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._run_as:
            os.chown(pwfile, pwd.getpwnam("nobody").pw_uid, -1)
        self._call(
            [
                initdb,
                "-D",
                str(self.data),
                "-U",
                USER,
                "--pwfile",
                str(pwfile),
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ]
        )
        pwfile.unlink()
        self.start()

    def _call(self, args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            user=self._run_as,
            capture_output=True,
            text=True,
            timeout=60,
            check=check,
            cwd=self.root,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._call(
            [self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "-t", "30", "start"]
        )

    def stop(self, mode: str = "fast") -> None:
        self._call([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"], check=False)

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql://{USER}:{pw}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)

    def create_database(self) -> str:
        """A fresh database; returns its URL."""
        name = "t_" + secrets.token_hex(6)
        self.admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with contextlib.suppress(Exception):
            self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def wait_ready(self, within: float = 20.0) -> None:
        import psycopg

        deadline = time.monotonic() + within
        while True:
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
