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

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text
from acp_adapter.store import BackgroundWriter, KeyValueStore, MemoryStore
from acp_adapter.store.recorder import replay_updates
from acp_adapter.tools import one_line

log = logging.getLogger("acp_progress.agui.threads")

NAMESPACE: Final = "agui:threads"
DAY: Final = 86_400.0
#: Characters of a thread's title (its first prompt's first line) kept at most.
TITLE_CHARS: Final = 80
#: Titles kept in memory at most (a thread's title is also stored with its session).
MAX_TITLES: Final = 10_000
#: Threads a listing returns at most (the most recently used).
MAX_LISTED: Final = 200


def endpoint_scope(instance: str | None, host: str, port: int, token: str | None, cwd: str) -> str:
    """The name of an endpoint's thread map: ``--instance NAME`` when given, else a digest of what
    makes the endpoint itself — its bind address and port, its token and its workspace (the token
    only as part of a one-way digest: it is never stored)."""
    if instance:
        return f"instance:{instance}"
    material = "\0".join([host, str(port), token or "", os.path.realpath(cwd)])
    return "endpoint:" + hashlib.sha256(material.encode()).hexdigest()[:24]


def title_of(prompt: str) -> str:
    """A thread's title: the first non-blank line of its first prompt, redacted, on one line, bounded."""
    line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    return one_line(line, TITLE_CHARS)


class ConversationUnavailable(AcpProgressError):
    """The store could not be read; ``str(exc)`` is the client-facing message."""


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
        #: each thread's title (its first prompt's first line), stored with its session
        self._titles: dict[str, str] = {}

    def note_title(self, thread_id: str, prompt: str) -> None:
        """Name a thread after its first prompt (a known thread keeps the title it has)."""
        if thread_id not in self._titles and prompt.strip():
            self._titles[thread_id] = title_of(prompt)
            while len(self._titles) > MAX_TITLES:  # the oldest first: they are in the store already
                del self._titles[next(iter(self._titles))]

    def retitle(self, thread_id: str, session_id: str, cwd: str, title: str) -> None:
        """The agent named the session (``session_info_update``): that is the thread's title now."""
        if title.strip() and self._titles.get(thread_id) != title_of(title):
            self._titles[thread_id] = title_of(title)
            self.remember(thread_id, session_id, cwd)

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
        title = value.get("title")
        if isinstance(title, str) and title:
            self._titles[thread_id] = title  # the stored title wins over this run's prompt
        return StoredThread(value["sessionId"], cwd if isinstance(cwd, str) else "")

    def remember(self, thread_id: str, session_id: str, cwd: str) -> None:
        """Store (off the loop) that ``thread_id`` is ``session_id`` from now on."""
        value: dict[str, Any] = {"sessionId": session_id, "cwd": cwd, "usedAt": time.time()}
        if thread_id in self._titles:
            value["title"] = self._titles[thread_id]
        namespace = self.namespace
        self.writer.submit(lambda: self.store.put(namespace, thread_id, value))

    async def listing(self, limit: int = MAX_LISTED) -> list[dict[str, Any]]:
        """This endpoint's threads, most recently used first: ``{"threadId", "title", "usedAt"}``
        (``usedAt`` in milliseconds since the epoch). What is queued for the store is written first."""
        if self._writer is not None:
            await self._writer.flush_async(within=2.0)

        def read() -> list[dict[str, Any]]:
            rows: list[dict[str, Any]] = []
            for key, value in self.store.items(self.namespace):
                if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
                    continue
                used = value.get("usedAt")
                title = value.get("title")
                rows.append(
                    {
                        "threadId": redact_text(str(key)),
                        "title": title_of(title) if isinstance(title, str) else "",
                        "usedAt": int(used * 1000) if isinstance(used, int | float) else 0,
                    }
                )
            rows.sort(key=lambda row: row["usedAt"], reverse=True)
            return rows[:limit]

        try:
            return await asyncio.to_thread(read)
        except Exception as exc:
            log.warning("cannot list the AG-UI threads: %s", exc)
            return []

    async def conversation(self, thread_id: str) -> list[Any] | None:
        """The stored conversation of ``thread_id`` (this endpoint's) as SDK update objects, oldest
        first; ``None`` when this endpoint has no such thread. A thread whose session the store
        does not keep (another agent, a store without sessions) has an empty conversation."""
        if self._writer is not None:
            await self._writer.flush_async(within=2.0)

        def read() -> list[Any] | None:
            value = self.store.get(self.namespace, thread_id)
            if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
                return None
            load = getattr(self.store, "load", None)
            stored = load(value["sessionId"]) if callable(load) else None
            events = getattr(stored, "events", None)
            if not isinstance(events, list):
                return []
            return replay_updates(value["sessionId"], events)

        try:
            return await asyncio.to_thread(read)
        except Exception as exc:
            log.warning("cannot read the conversation of thread %s: %s", redact_text(thread_id), exc)
            raise ConversationUnavailable("the session store cannot be read now; try again later") from None

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
