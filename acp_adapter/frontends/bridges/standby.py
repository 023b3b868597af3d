"""A bridge and its standby: several ``bridge run NAME`` processes on one PostgreSQL store, one of
them polling the platform.

Two processes polling one bot's ``getUpdates`` would get 409 Conflict from Telegram (or, with a
platform that allowed it, answer every message twice). So the processes elect a leader with a
PostgreSQL advisory lock named after the bridge: the one holding it polls; the others wait,
trying again every :data:`RETRY_S` seconds. The lock ends with its holder's connection — a leader
killed with ``kill -9`` loses it at once (a vanished machine within the lock connection's TCP
keepalive, about 11 s) — and the standby takes over from what the leader left in the shared
store: the saved update offset (nothing polled twice), the durable outbox (replies accepted and
not yet sent go out), the chats' sessions (the conversation goes on).

A leader whose lock connection breaks (the database restarted) no longer knows it is alone: it
stops, saying so, and exits non-zero for its supervisor to restart it (as a standby, or the leader
again when nobody else took over).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from acp_adapter.store.base import StoreUnavailable
from acp_adapter.store.locks import AdvisoryLocks

log = logging.getLogger("acp_progress.bridge.standby")

#: seconds between a standby's attempts to become the leader (and the leader's lock checks);
#: ``bridge run`` takes ``[store] leader_retry`` (ACP_PROGRESS_STORE_LEADER_RETRY)
RETRY_S = 1.0


class Leadership:
    """The bridge ``name``'s leader lock in the database at ``url``."""

    def __init__(self, url: str, name: str, *, retry: float = RETRY_S) -> None:
        self.locks = AdvisoryLocks(url)
        self.name = name
        self.lock_name = f"bridge:{name}"
        self.retry = retry
        #: set when the lock was lost while leading (the database restarted …)
        self.lost = False

    def acquire(self, say: Callable[[str], object], sleep: Callable[[float], object] = time.sleep) -> None:
        """Block until this process leads (one line when it has to wait, one when it takes over)."""
        waited = False
        unreachable = False
        while True:
            try:
                if self.locks.try_lock(self.lock_name):
                    break
                unreachable = False
            except StoreUnavailable as exc:
                if not unreachable:
                    log.warning("bridge %s: %s; trying again every %g s", self.name, exc, self.retry)
                unreachable = True
            if not waited:
                say(
                    f"bridge {self.name}: standby — another process leads (polls) this bridge; "
                    "taking over when it stops"
                )
                waited = True
            sleep(self.retry)
        if waited:
            say(f"bridge {self.name}: the leader is gone; this process leads now")

    async def keep(self, stop: asyncio.Event) -> None:
        """While leading: check the lock every :attr:`retry` seconds; when it is lost, set ``stop``."""
        while not stop.is_set():
            await asyncio.sleep(self.retry)
            if not await asyncio.to_thread(self.locks.alive):
                self.lost = True
                log.error(
                    "bridge %s: lost the leader lock (the database connection broke): stopping, "
                    "so that two processes never poll at once",
                    self.name,
                )
                stop.set()
                return

    def release(self) -> None:
        self.locks.close()
