"""The SQL both database stores share: the session list's keyset pages and their cursors, a loaded
session's rows read back leniently, and the permission audit's columns and read-back check.

Why a module of its own: :mod:`~acp_adapter.store.sqlite_tables` and
:mod:`~acp_adapter.store.postgres_tables` answer ``session/list``, ``load`` and the audit with the
same queries (only the parameter mark differs), and a cursor one store gives out must mean the same
to the other. Written once here, the two can never drift apart; neither store imports the other.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from typing import Any

from acp_adapter.store.base import (
    AuditError,
    PermissionDecision,
    SessionPage,
    SessionRecord,
    StoredSession,
    StoreError,
    dumps,
)

log = logging.getLogger("acp_progress.store")


def _encode_cursor(updated_at: float, session_id: str) -> str:
    raw = dumps([updated_at, session_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


#: the audit table's columns, in the order of :class:`PermissionDecision` (every back-end's)
AUDIT_COLUMNS = "at, session_id, tool_call_id, title, allowed, decided_by, surface, rule"


def audit_decisions(rows: Sequence[Sequence[Any]]) -> list[PermissionDecision]:
    """Decisions from audit rows read as :data:`AUDIT_COLUMNS`."""
    return [
        PermissionDecision(at, sid, tcid, title, bool(ok), by, surface, rule)
        for at, sid, tcid, title, ok, by, surface, rule in rows
    ]


def check_audit_kept(kept: Any, row: Sequence[Any], where: str) -> None:
    """The audit row read back after its commit must be the one written: a trigger that removed or
    changed it makes the call refused (the audit fails closed)."""
    if kept != row:
        raise AuditError(
            f"the row was {'removed' if kept is None else 'changed'} as it was written (a trigger?): {where}"
        )


def session_list_query(
    table: str, mark: str, cwd: str | None, cursor: str | None, limit: int
) -> tuple[str, list[Any]]:
    """The page query of ``list_sessions`` (newest first, keyset-paged by the cursor) for a SQL
    dialect whose parameter mark is ``mark``; one more row than ``limit`` says a page follows."""
    where: list[str] = []
    args: list[Any] = []
    if cwd is not None:
        where.append(f"cwd = {mark}")
        args.append(cwd)
    if cursor is not None:
        after_time, after_id = _decode_cursor(cursor)
        where.append(f"(updated_at < {mark} OR (updated_at = {mark} AND id > {mark}))")
        args += [after_time, after_time, after_id]
    sql = f"SELECT id, cwd, title, created_at, updated_at FROM {table}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + f" ORDER BY updated_at DESC, id LIMIT {mark}", [*args, limit + 1]


def fork_statements(schema: str, mark: str) -> tuple[str, str]:
    """The two statements of a fork (run in one transaction): the new session's row from the
    source's (its title and model history, the new id, workspace and times), then the source's
    events under the new id, in their order. Copied inside the database, so a fork of a long
    session moves no conversation through the agent. ``schema`` prefixes the tables (``""`` or
    ``"name."``); the first statement changes no row when the source is not stored."""
    session = (
        f"INSERT INTO {schema}sessions (id, cwd, title, created_at, updated_at, history) "
        f"SELECT {mark}, {mark}, title, {mark}, {mark}, history FROM {schema}sessions WHERE id = {mark}"
    )
    events = (
        f"INSERT INTO {schema}events (session_id, seq, body) "
        f"SELECT {mark}, seq, body FROM {schema}events WHERE session_id = {mark}"
    )
    return session, events


def fork_args(source_id: str, new_id: str, cwd: str, now: float) -> tuple[list[Any], list[Any]]:
    """The parameters of :func:`fork_statements`' two statements."""
    return [new_id, cwd, now, now, source_id], [new_id, source_id]


def session_page(rows: Sequence[Sequence[Any]], limit: int) -> SessionPage:
    """The page of :func:`session_list_query`'s rows, with the cursor of the next when one follows."""
    records = [SessionRecord(*row) for row in rows[:limit]]
    more = len(rows) > limit
    return SessionPage(
        records, _encode_cursor(records[-1].updated_at, records[-1].session_id) if more else None
    )


def stored_session(session_id: str, row: Sequence[Any], events: Sequence[Sequence[Any]]) -> StoredSession:
    """A loaded session from its row (id, cwd, title, created, updated, history) and event bodies;
    a row that no longer parses is skipped with a warning (:func:`_stored_json`)."""
    sid, cwd, title, created, updated, history = row
    return StoredSession(
        SessionRecord(sid, cwd, title, created, updated),
        [e for (body,) in events if (e := _stored_json(body, session_id, "an event")) is not None],
        h if isinstance(h := _stored_json(history, session_id, "its model history"), list) else [],
    )


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        updated_at, session_id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if not isinstance(session_id, str) or not isinstance(updated_at, int | float):
            raise ValueError
        return float(updated_at), session_id
    except (ValueError, TypeError) as exc:
        raise StoreError(f"invalid cursor {cursor[:40]!r}: not one this agent gave out") from exc


def _stored_json(body: Any, session_id: str, what: str) -> Any:
    """One stored JSON text, or None (with a warning) when it was tampered with or cut: a session
    whose row cannot be read loses that row, never the whole session (a load must not fail)."""
    try:
        value = json.loads(body)
    except (TypeError, ValueError, RecursionError):
        log.warning("session %s: skipped %s the store cannot read (damaged or altered)", session_id, what)
        return None
    if what == "an event" and not isinstance(value, dict):
        log.warning("session %s: skipped %s that is not an object (damaged or altered)", session_id, what)
        return None
    return value
