"""The in-memory store (``ACP_PROGRESS_STATE=off``, and the fallback when the database cannot be
used): the same interface and the same redaction as SQLite, gone when the process ends."""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Sequence
from typing import Any

from acp_adapter.store.base import (
    AuditError,
    JsonObject,
    PermissionDecision,
    SessionGone,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    drop_count,
    dumps,
    scrub,
)


class MemoryStore:
    """Sessions, audit and front-end state in dictionaries, behind one lock."""

    def __init__(self, *, unusable: str | None = None) -> None:
        #: why the database this store stands in for could not be used (None: memory was chosen,
        #: ``ACP_PROGRESS_STATE=off``). Then the audit fails closed: no allowed call runs with its
        #: decision only in memory, where nobody will find it.
        self.unusable = unusable
        self._lock = threading.Lock()
        self._records: dict[str, SessionRecord] = {}
        self._events: dict[str, list[JsonObject]] = {}
        self._history: dict[str, list[JsonObject]] = {}
        self._audit: list[PermissionDecision] = []
        self._kv: dict[tuple[str, str], str] = {}

    def upsert_session(self, record: SessionRecord) -> None:
        with self._lock:
            old = self._records.get(record.session_id)
            title = scrub(record.title) if record.title is not None else (old.title if old else None)
            created = old.created_at if old else record.created_at
            self._records[record.session_id] = SessionRecord(
                record.session_id, record.cwd, title, created, record.updated_at
            )
            self._events.setdefault(record.session_id, [])

    def append_events(self, session_id: str, events: Sequence[JsonObject], updated_at: float) -> None:
        clean = [json.loads(dumps(scrub(event))) for event in events]  # strict JSON, as on disk
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionGone(f"session {session_id} is not in the store")
            if not clean:
                return
            self._events[session_id].extend(clean)
            self._records[session_id] = SessionRecord(
                record.session_id, record.cwd, record.title, record.created_at, updated_at
            )

    def trim_events(self, session_id: str, max_bytes: int, note: JsonObject) -> tuple[int, int]:
        note_body = dumps(scrub(note))
        with self._lock:
            events = self._events.get(session_id, [])
            sizes = [len(dumps(event).encode()) for event in events]
            cut = drop_count(sizes, max_bytes, len(note_body.encode()))
            if cut:
                events[:cut] = [json.loads(note_body)]
                sizes[:cut] = [len(note_body.encode())]
            return cut, sum(sizes)

    def replace_history(self, session_id: str, history: Sequence[JsonObject]) -> None:
        clean = json.loads(dumps(scrub(list(history))))
        with self._lock:
            if session_id in self._records:
                self._history[session_id] = clean

    def load(self, session_id: str) -> StoredSession | None:
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                return None
            return StoredSession(
                record,
                copy.deepcopy(self._events.get(session_id, [])),
                copy.deepcopy(self._history.get(session_id, [])),
            )

    def fork(self, source_id: str, new_id: str, cwd: str, now: float) -> StoredSession | None:
        with self._lock:
            source = self._records.get(source_id)
            if source is None:
                return None
            record = self._records[new_id] = SessionRecord(new_id, cwd, source.title, now, now)
            self._events[new_id] = copy.deepcopy(self._events.get(source_id, []))
            self._history[new_id] = copy.deepcopy(self._history.get(source_id, []))
            return StoredSession(record, [], copy.deepcopy(self._history[new_id]))

    def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> SessionPage:
        with self._lock:
            records = sorted(self._records.values(), key=lambda r: (-r.updated_at, r.session_id))
        if cwd is not None:
            records = [r for r in records if r.cwd == cwd]
        if cursor is not None:
            ids = [r.session_id for r in records]
            if cursor not in ids:
                raise StoreError(f"invalid cursor {cursor[:40]!r}: not one this agent gave out")
            records = records[ids.index(cursor) + 1 :]
        page = records[:limit]
        return SessionPage(page, page[-1].session_id if len(records) > limit else None)

    def delete(self, session_id: str) -> bool:
        with self._lock:
            self._events.pop(session_id, None)
            self._history.pop(session_id, None)
            return self._records.pop(session_id, None) is not None

    def prune(self, older_than: float) -> int:
        with self._lock:
            old = [sid for sid, r in self._records.items() if r.updated_at < older_than]
            self._audit = [d for d in self._audit if d.at >= older_than]
        return sum(self.delete(sid) for sid in old)

    def record_permission(self, decision: PermissionDecision) -> None:
        if self.unusable is not None:
            raise AuditError(f"{self.unusable}; or set ACP_PROGRESS_STATE=off to run without a durable audit")
        d = decision
        clean = PermissionDecision(
            d.at,
            d.session_id,
            d.tool_call_id,
            scrub(d.title),
            d.allowed,
            scrub(d.decided_by),
            d.surface,
            scrub(d.rule),
        )
        with self._lock:
            self._audit.append(clean)

    def permission_audit(self, limit: int = 100) -> list[PermissionDecision]:
        with self._lock:
            return list(reversed(self._audit[-limit:])) if limit > 0 else []

    def put(self, namespace: str, key: str, value: Any) -> None:
        with self._lock:
            self._kv[(namespace, key)] = dumps(scrub(value))

    def get(self, namespace: str, key: str) -> Any | None:
        with self._lock:
            raw = self._kv.get((namespace, key))
        return json.loads(raw) if raw is not None else None

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        with self._lock:
            found = sorted((k, v) for (ns, k), v in self._kv.items() if ns == namespace)
        return [(k, json.loads(v)) for k, v in found]

    def remove(self, namespace: str, key: str) -> None:
        with self._lock:
            self._kv.pop((namespace, key), None)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        """Writes are applied at once in memory; nothing to group."""
        return contextlib.nullcontext()

    def close(self) -> None:
        pass
