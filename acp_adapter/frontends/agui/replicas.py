"""AG-UI replicas: several ``acp-progress agui`` processes on one PostgreSQL store serve the same
threads, one run per thread at a time across all of them.

* **One run per thread, everywhere** — a run takes the thread's PostgreSQL advisory lock (on top
  of the in-process claim in :mod:`.threads`); a run on a thread busy at another replica gets 409
  with a message that says so. The lock is the run's: released when the run ends, and by
  PostgreSQL itself when the replica dies (``kill -9``: its connection closes), so the thread runs
  elsewhere at once.
* **The conversation follows the thread** — the thread's session is in the shared store, so the
  replica that gets the next run loads it (``session/load``). A replica that served the thread
  before keeps the session live in its agent; if another replica ran the thread since, that copy
  is stale, so each run records which replica it ran on (key-value namespace
  ``agui:lastrun:SCOPE``) and a replica that finds another's name there loads the session again.
* **What a dead replica left half done** — its agent's open turn is closed as interrupted when
  the next replica's agent loads the session (the recorder's rule, as on SQLite).

Replicas must share the thread map's scope: give each the same ``--instance NAME``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from acp_adapter.safety.redact import redact_text
from acp_adapter.store.base import StoreError
from acp_adapter.store.locks import AdvisoryLocks

log = logging.getLogger("acp_progress.agui.replicas")

LAST_RUN = "agui:lastrun"
#: seconds between two checks that the database answers (``/health``), unless the endpoint's
#: settings say otherwise (``ACP_PROGRESS_AGUI_HEALTH_INTERVAL``)
HEALTH_INTERVAL = 5.0
#: seconds one check waits for the database (``ACP_PROGRESS_AGUI_HEALTH_TIMEOUT``)
HEALTH_TIMEOUT = 2.0


class ReplicaThreadLocks:
    """The cross-replica half of "one run per thread": a lock per running thread, and which
    replica ran each thread last."""

    def __init__(
        self,
        url: str,
        store: Any,
        scope: str,
        health_interval: float = HEALTH_INTERVAL,
        health_timeout: float = HEALTH_TIMEOUT,
    ) -> None:
        self.locks = AdvisoryLocks(url)
        #: seconds between two checks that the database answers (:meth:`watch`)
        self.health_interval = health_interval
        #: seconds a check waits for a connection before the database counts as not answering
        self.health_timeout = health_timeout
        self.store = store
        self.scope = scope
        self.namespace = f"{LAST_RUN}:{scope}"
        #: this replica's name in the store (host, pid and a random part: pids are reused)
        self.replica = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: the database answered the last check (None: not checked yet)
        self.database_ok: bool | None = None

    def _lock_name(self, thread_id: str) -> str:
        return f"agui:{self.scope}:{thread_id}"

    def claim(self, thread_id: str) -> bool | None:
        """Take the thread's lock (blocking: call off the loop). None: another replica runs it.
        Otherwise whether this replica's copy of the thread's session is stale (another replica
        ran the thread since this one did)."""
        name = self._lock_name(thread_id)
        if not self.locks.try_lock(name):
            return None
        try:
            last = self.store.get(self.namespace, thread_id)
            self.store.put(self.namespace, thread_id, {"replica": self.replica, "at": time.time()})
        except BaseException:
            self.locks.unlock(name)
            raise
        return isinstance(last, dict) and last.get("replica") != self.replica

    def release(self, thread_id: str, flush: Callable[[], object] | None = None) -> None:
        """Write what the run left queued (``flush``: the thread map), then let go of the lock."""
        try:
            if flush is not None:
                flush()
        finally:
            self.locks.unlock(self._lock_name(thread_id))

    def prune(self, retention_days: float) -> int:
        """Forget which replica ran threads not run for ``retention_days`` (0 keeps them), as the
        thread map forgets the threads themselves; returns how many."""
        if retention_days <= 0:
            return 0
        cutoff = time.time() - retention_days * 86_400.0
        stale = [
            key
            for key, value in self.store.items(self.namespace)
            if not isinstance(value, dict)
            or not isinstance(value.get("at"), int | float)
            or value["at"] < cutoff
        ]
        for key in stale:
            self.store.remove(self.namespace, key)
        return len(stale)

    def check(self) -> bool:
        ok = bool(self.store.ping(self.health_timeout)) and self.locks.alive()
        if ok != self.database_ok:
            if ok:
                log.info("the session database answers")
            else:
                log.error("the session database does not answer: runs on new threads are refused")
        self.database_ok = ok
        return ok

    async def watch(self) -> None:
        """Check the database every :attr:`health_interval` seconds, for ``/health`` (a task)."""
        while True:
            try:
                await asyncio.to_thread(self.check)
            except Exception as exc:
                self.database_ok = False
                log.warning("cannot check the session database: %s", redact_text(str(exc)))
            await asyncio.sleep(self.health_interval)

    def close(self) -> None:
        """Close the lock connection (PostgreSQL releases every lock it held)."""
        self.locks.close()


class ReplicaUnavailable(StoreError):
    """The thread's lock could not be asked for: the database does not answer."""


async def claim_thread(locks: ReplicaThreadLocks, thread_id: str) -> bool | None:
    """:meth:`ReplicaThreadLocks.claim` off the event loop; a database that does not answer is
    :class:`ReplicaUnavailable` (its message names host and port)."""
    try:
        return await asyncio.to_thread(locks.claim, thread_id)
    except StoreError as exc:
        raise ReplicaUnavailable(str(exc)) from None
