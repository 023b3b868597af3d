"""AG-UI threads that outlive the server: ``threadId → sessionId`` in the session store.

The agent keeps a thread's conversation (its session); the endpoint only has to remember which
session a thread is. That mapping lives in the store's key-value namespace ``agui:threads:SCOPE``,
so a run on a known thread after a restart of the endpoint (or of its agent) loads that session
(``session/load``) instead of starting the conversation over.

SCOPE is the endpoint's own (:func:`endpoint_scope`): two ``acp-progress agui`` servers on one
state directory — other tokens, other workspaces — never see each other's threads, so a run on
thread ``main`` at one can never load the other's conversation (and hand its files to the model).

Reads happen once per thread per agent process (a thread's first run), off the event loop; writes
go through a :class:`~acp_adapter.store.BackgroundWriter`, so neither sits on a run's hot path.
Entries not used for ``retention_days`` are dropped when the endpoint starts, like the agent's own
sessions.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from typing import Any, Final

from acp_adapter.safety.redact import redact_text
from acp_adapter.store import BackgroundWriter, KeyValueStore, MemoryStore

log = logging.getLogger("acp_progress.agui.threads")

NAMESPACE: Final = "agui:threads"
DAY: Final = 86_400.0


def endpoint_scope(instance: str | None, host: str, port: int, token: str | None, cwd: str) -> str:
    """The name of an endpoint's thread map: ``--instance NAME`` when given, else a digest of what
    makes the endpoint itself — its bind address and port, its token and its workspace (the token
    only as part of a one-way digest: it is never stored)."""
    if instance:
        return f"instance:{instance}"
    material = "\0".join([host, str(port), token or "", os.path.realpath(cwd)])
    return "endpoint:" + hashlib.sha256(material.encode()).hexdigest()[:24]


class StoredThread:
    """What the store remembers of a thread: its session and the workspace it was opened in."""

    __slots__ = ("cwd", "session_id")

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_id = session_id
        self.cwd = cwd


class ThreadSessions:
    """The durable half of the thread registry (the in-memory half is :mod:`.threads`)."""

    def __init__(
        self, store: KeyValueStore | None = None, *, retention_days: float = 30.0, scope: str = ""
    ) -> None:
        #: None: nothing given, so threads are remembered for this process only
        self.store: Any = store if store is not None else MemoryStore()
        self.retention_days = retention_days
        #: this endpoint's namespace in the store (see :func:`endpoint_scope`)
        self.namespace = f"{NAMESPACE}:{scope}" if scope else NAMESPACE
        self._writer: BackgroundWriter | None = None

    @property
    def writer(self) -> BackgroundWriter:
        if self._writer is None:
            self._writer = BackgroundWriter(self.store, name="acp-progress-agui-threads")
        return self._writer

    async def lookup(self, thread_id: str) -> StoredThread | None:
        """The session stored for ``thread_id`` (None: unknown, or the store cannot say)."""
        try:
            value = await asyncio.to_thread(self.store.get, self.namespace, thread_id)
        except Exception as exc:
            log.warning("cannot read the session of thread %s: %s", redact_text(thread_id), exc)
            return None
        if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
            return None
        cwd = value.get("cwd")
        return StoredThread(value["sessionId"], cwd if isinstance(cwd, str) else "")

    def remember(self, thread_id: str, session_id: str, cwd: str) -> None:
        """Store (off the loop) that ``thread_id`` is ``session_id`` from now on."""
        value = {"sessionId": session_id, "cwd": cwd, "usedAt": time.time()}
        namespace = self.namespace
        self.writer.submit(lambda: self.store.put(namespace, thread_id, value))

    async def prune(self) -> int:
        """Forget threads not used for ``retention_days`` (0 keeps them); returns how many."""
        if self.retention_days <= 0:
            return 0
        cutoff = time.time() - self.retention_days * DAY

        def prune() -> int:
            stale = [
                key
                for key, value in self.store.items(self.namespace)
                if not isinstance(value, dict)
                or not isinstance(value.get("usedAt"), int | float)
                or value["usedAt"] < cutoff
            ]
            for key in stale:
                self.store.remove(self.namespace, key)
            return len(stale)

        try:
            return await asyncio.to_thread(prune)
        except Exception as exc:
            log.warning("could not forget old AG-UI threads: %s", exc)
            return 0

    async def aclose(self) -> None:
        """Write what is queued (the store itself belongs to whoever opened it)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            await writer.flush_async()
            await asyncio.to_thread(writer.close)
