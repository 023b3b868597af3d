"""A thread's lock across the replicas of one endpoint, held by the run that drives it.

Replicas on one shared PostgreSQL store (:mod:`.replicas`) serve one run per thread between them:
a run claims its thread there after the in-process claim, and lets go of it before its last event
is sent. Without a shared store (``locks`` None) every call here is a no-op.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks, ReplicaUnavailable, claim_thread
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadBusy, ThreadRegistry, ThreadSlot
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.agui.service")


class ReplicaClaims:
    """The endpoint's thread locks across replicas, and their housekeeping (pruning, a health watch)."""

    def __init__(self, threads: ThreadRegistry, thread_sessions: ThreadSessions) -> None:
        self._threads = threads
        self._thread_sessions = thread_sessions
        #: the threads' locks across replicas (set when the store is shared: :mod:`.replicas`)
        self.locks: ReplicaThreadLocks | None = None
        self._database_watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Forget old threads' runs (housekeeping: a failure waits for the next start) and watch
        the database's health (not a run: ending the runs leaves it be)."""
        if self.locks is None:
            return
        try:
            await asyncio.to_thread(self.locks.prune, self._thread_sessions.retention_days)
        except Exception as exc:  # housekeeping: the next start prunes
            log.warning("could not forget old AG-UI thread runs: %s", redact_text(str(exc)))
        self._database_watch = asyncio.get_running_loop().create_task(
            self.locks.watch(), name="agui-database-health"
        )

    async def close(self) -> None:
        """PostgreSQL releases whatever it still held."""
        if self.locks is None:
            return
        if self._database_watch is not None:
            self._database_watch.cancel()
        await asyncio.to_thread(self.locks.close)

    async def claim(self, slot: ThreadSlot, active: ActiveRun) -> None:
        """The thread's lock across replicas, after the in-process claim: a 409 when another
        replica runs the thread; a stale copy of its session is dropped."""
        if self.locks is None:
            return
        try:
            stale = await claim_thread(self.locks, slot.thread_id)
        except ReplicaUnavailable as exc:
            self._threads.release(slot, active)
            raise ThreadBusy(f"thread {slot.thread_id!r} cannot run now ({exc}); try again") from None
        except BaseException:
            self._threads.release(slot, active)
            raise
        if stale is None:
            self._threads.release(slot, active)
            raise ThreadBusy(
                f"thread {slot.thread_id!r} already has a run in progress at another replica; a thread "
                "serves one run at a time: wait for its RUN_FINISHED"
            )
        if stale:  # another replica ran it since: load the session from the store again
            slot.session_id, slot.generation = None, -1
        thread_id = slot.thread_id
        active.release_elsewhere = lambda: self._release(thread_id)

    async def _release(self, thread_id: str) -> None:
        """Off the loop; the thread map is written before the lock goes. Shielded: a run ended by
        the server stopping still lets go of its thread (the connection would, a moment later)."""
        locks = self.locks
        if locks is not None:
            release = asyncio.to_thread(locks.release, thread_id, self._thread_sessions.writer.flush)
            await asyncio.shield(release)

    def health(self, out: dict[str, Any]) -> None:
        """Add whether the shared database answers to the endpoint's health (nothing without one)."""
        if self.locks is not None:
            ok = self.locks.database_ok
            out["database"] = "unknown" if ok is None else "reachable" if ok else "unreachable"
