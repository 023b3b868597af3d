"""From the live update stream to the canonical conversation a session keeps (history is canonical).

What a session keeps is what happened, not its presentation: the user's prompt, the agent's
thought and message text (coalesced), each real tool call once, in its final state, the last plan,
the last usage (:class:`~acp_adapter.store.turn_entries.TurnEntries` decides what of the stream
that is). Replaying those entries as ``session/update`` notifications rebuilds every card in its
final state and injects no old presentation; none is left ``in_progress``.

The recorder keeps a turn's entries in memory while it runs (it is fed on the event loop by the
outbox's observer) and hands them to the store's background writer when the turn ends, with the
model history the agent needs to go on, so the disk never sits on the hot path.

The user's prompt is the exception: it is queued when the turn begins, with an *open turn* marker
(the front-end state namespace :data:`OPEN_TURNS`: this process's id), which the turn's end
removes. An agent killed mid-turn thus still has the prompt on disk; the next process that loads
or prompts the session finds the marker of a process that no longer runs and closes the turn with
an "(interrupted)" note (:meth:`ConversationRecorder.close_interrupted`). A marker whose process
still runs (another editor window in the middle of that turn) is left alone.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from acp.schema import SessionNotification

from acp_adapter.safety.redact import redact_text
from acp_adapter.store.base import JsonObject, SessionRecord
from acp_adapter.store.session_holds import (
    SESSION_HOLDERS,
    SessionHolds,
    held_elsewhere,
    holder_marker,
    process_alive,
    this_host,
)
from acp_adapter.store.stored_entries import DEFAULT_MAX_SESSION_BYTES, StoredEntries
from acp_adapter.store.turn_entries import (
    STORED_TEXT_CAP,
    TERMINAL_STATUSES,
    TurnEntries,
    agent_note,
    capped,
)
from acp_adapter.store.writer import BackgroundWriter
from acp_adapter.text import ellipsize

log = logging.getLogger("acp_progress.store")

#: Longest session title (from the first prompt's first line).
TITLE_CAP = 80
#: Front-end state namespace of the turns begun and not yet ended: session id -> {"pid", "at"}.
OPEN_TURNS = "agent.open-turns"
#: The most of the prompt an open-turn marker keeps (it only names what was asked).
MARKER_PROMPT_CAP = 4096
#: What closes a turn its agent never finished (killed, crashed, the machine went down).
INTERRUPTED_NOTE = "(interrupted — the agent stopped before this turn finished)"


def _turn_alive(marker: dict[str, Any]) -> bool:
    """Whether the process that began a marked turn may still be running it. A turn begun on
    another machine counts as ended: on a shared store, whoever loads its session there holds
    what makes that safe (an AG-UI replica holds the thread's lock, so the other replica's run
    ended — or died with its replica)."""
    pid = marker.get("pid")
    host = marker.get("host")
    if isinstance(host, str) and host != this_host():
        return False
    return isinstance(pid, int) and pid != os.getpid() and process_alive(pid)


def title_from(text: str) -> str | None:
    """A session's title: the first non-empty line of its first prompt, redacted, capped."""
    for line in redact_text(text).splitlines():
        flat = " ".join(line.split())
        if flat:
            return ellipsize(flat, TITLE_CAP)
    return None


class ConversationRecorder:
    """Collects each session's canonical entries; writes them when a turn ends.

    ``store`` is a :class:`~acp_adapter.store.base.SessionStore`; ``writer`` runs the writes on its
    own thread. Every method is cheap and never raises into the caller (a recorder failure must not
    break a turn: a failing hook never breaks the turn). What a turn keeps is its
    :class:`TurnEntries`; how the writer's thread appends it, :class:`StoredEntries`; which
    sessions this process holds, :class:`SessionHolds`.
    """

    def __init__(
        self,
        store: Any,
        writer: BackgroundWriter,
        clock: Callable[[], float] = time.time,
        max_session_bytes: int = DEFAULT_MAX_SESSION_BYTES,
    ) -> None:
        self.store = store
        self.writer = writer
        self._clock = clock
        self._holds = SessionHolds(store)
        self._stored = StoredEntries(store, max_session_bytes, self._holds.cwd_of)
        self._turns: dict[str, TurnEntries] = {}
        self._titled: set[str] = set()

    def open_session(
        self, session_id: str, cwd: str, title: str | None = None, updated_at: float | None = None
    ) -> None:
        """Store the session as open in ``cwd``. ``updated_at``: a stored session opened again keeps
        the time it was last used — loading one only to look at it must not make it the newest, the
        one ``--continue`` picks; its next prompt makes it so."""
        now = self._clock()
        if title is not None:
            self._titled.add(session_id)
        record = SessionRecord(session_id, cwd, title, now, now if updated_at is None else updated_at)
        self._holds.hold(session_id, cwd)
        marker = holder_marker(now)

        def write() -> None:
            self.store.upsert_session(record)
            self.store.put(SESSION_HOLDERS, session_id, marker)

        self.writer.submit(write)

    def set_title(self, session_id: str, cwd: str, title: str) -> None:
        """The person named the session (``/title``): stored, and no prompt renames it after."""
        self._titled.add(session_id)
        now = self._clock()
        record = SessionRecord(session_id, cwd, title, now, now)
        self.writer.submit(lambda: self.store.upsert_session(record))

    def begin_turn(self, session_id: str, cwd: str, prompt: Sequence[Any], text: str) -> str | None:
        """Record the user's prompt; returns the session's new title when this prompt gives it one."""
        turn = self._turns[session_id] = TurnEntries()
        prompt_entries = turn.add_prompt(prompt)
        now = self._clock()
        title = None if session_id in self._titled else title_from(text)
        if title is not None:
            self._titled.add(session_id)
            record = SessionRecord(session_id, cwd, title, now, now)
            self.writer.submit(lambda: self.store.upsert_session(record))
        # the prompt goes to disk now, marked open, so a turn killed mid-way is not lost; the
        # marker's prompt only says what was asked, should the turn be interrupted
        marker = {
            "pid": os.getpid(),
            "host": this_host(),
            "at": now,
            "prompt": capped(text, MARKER_PROMPT_CAP),
        }
        held = holder_marker(now)

        def write() -> None:
            self._stored.append(session_id, prompt_entries, now)
            self._stored.count(session_id, prompt_entries)
            self.store.put(OPEN_TURNS, session_id, marker)
            self.store.put(SESSION_HOLDERS, session_id, held)  # "used just now", for other machines

        self.writer.submit(write)
        return title

    def observer(self, session_id: str) -> _SessionRecording:
        """The :class:`~acp_adapter.protocol.observer.UpdateObserver` that records one session's
        updates (the agent registers it with the session's outbox observers for a turn)."""
        return _SessionRecording(self, session_id)

    def observe(self, session_id: str, update: Any) -> None:
        """The outbox observer: called for every update handed to the connection, in order."""
        turn = self._turns.get(session_id)
        if turn is None:
            return
        try:
            turn.record(update)
        except Exception:
            log.exception("recording a session update failed")

    def end_turn(
        self,
        session_id: str,
        history: Sequence[JsonObject],
        stop_reason: str | None = None,
        failed: bool = False,
    ) -> None:
        """The turn answered: queue its entries (see :meth:`TurnEntries.closing`) and the history."""
        turn = self._turns.pop(session_id, None)
        entries = turn.closing(stop_reason, failed) if turn is not None else []
        now = self._clock()
        snapshot = [_capped_message(m) for m in history]

        def write() -> None:
            self._stored.append(session_id, entries, now)
            self._stored.keep_under_cap(session_id, entries)
            self.store.replace_history(session_id, snapshot)
            self.store.remove(OPEN_TURNS, session_id)

        self.writer.submit(write)

    def forget(self, session_id: str) -> None:
        self._turns.pop(session_id, None)
        self._titled.discard(session_id)
        held = self._holds.release(session_id)

        def write() -> None:
            self._stored.forget(session_id)
            if held:
                self._holds.let_go(session_id)

        self.writer.submit(write)

    def let_go_of_all(self) -> None:
        """The process is ending: every session it holds may be deleted by others from now on."""
        held = self._holds.release_all()

        def write() -> None:
            for session_id in held:
                self._holds.let_go(session_id)

        self.writer.submit(write)

    def holder_elsewhere(self, session_id: str, fresh_within: float) -> dict[str, Any] | None:
        """Another process that holds ``session_id`` (its marker), or None. Reads the store: call it
        on a worker thread."""
        marker = self.store.get(SESSION_HOLDERS, session_id)
        return held_elsewhere(marker, now=self._clock(), fresh_within=fresh_within)

    def close_interrupted(self, session_id: str) -> bool:
        """Close the session's stored turn that was begun and never ended by a process that no
        longer runs: an "(interrupted)" agent note is appended (to the conversation, and with the
        prompt to the model history) and the marker removed, so a load shows where the
        conversation broke off and later prompts go on knowing it. Synchronous (the store's thread or a worker
        thread, after the writer was flushed); True when a turn was closed."""
        marker = self.store.get(OPEN_TURNS, session_id)
        if not isinstance(marker, dict):
            return False
        pid = marker.get("pid")
        if isinstance(pid, int) and session_id in self._turns and pid == os.getpid():
            return False  # this process is running that turn
        if _turn_alive(marker):
            return False  # another agent process is in the middle of it
        with self.store.batch():
            self.store.append_events(session_id, [agent_note(INTERRUPTED_NOTE)], self._clock())
            stored = self.store.load(session_id)
            prompt = marker.get("prompt")
            if stored is not None and isinstance(prompt, str):  # the model, too, knows what was asked
                turn = [
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": INTERRUPTED_NOTE},
                ]
                self.store.replace_history(session_id, [*stored.history, *turn])
            self.store.remove(OPEN_TURNS, session_id)
        log.info("session %s: closed a turn its agent (pid %s) never finished", session_id, pid)
        return True


def _capped_message(message: JsonObject) -> JsonObject:
    content = message.get("content")
    if isinstance(content, str) and len(content) > STORED_TEXT_CAP:
        return {**message, "content": capped(content, STORED_TEXT_CAP)}
    return message


def replay_updates(session_id: str, events: Sequence[JsonObject]) -> list[Any]:
    """The stored entries as schema update objects, in order; an entry that no longer validates
    (written by another version) is skipped with a warning rather than failing the load."""
    updates: list[Any] = []
    for event in events:
        if event.get("sessionUpdate") == "tool_call" and event.get("status") not in TERMINAL_STATUSES:
            event = {**event, "status": "failed"}  # a replay never leaves a card spinning
        content = event.get("content")
        if isinstance(content, list) and any(_is_terminal(c) for c in content):
            # the editor's terminal was released when the command ended: a replay shows the output
            # the card kept as text, never a terminal id the editor no longer knows
            event = {**event, "content": [c for c in content if not _is_terminal(c)]}
        try:
            note = SessionNotification.model_validate({"sessionId": session_id, "update": event})
        except ValueError:
            log.warning("skipped a stored %s entry that no longer validates", event.get("sessionUpdate"))
            continue
        updates.append(note.update)
    return updates


def _is_terminal(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") == "terminal"


class _SessionRecording:
    """One session's updates, into the recorder (an update observer bound to its session)."""

    __slots__ = ("recorder", "session_id")

    def __init__(self, recorder: ConversationRecorder, session_id: str) -> None:
        self.recorder = recorder
        self.session_id = session_id

    def observe(self, update: Any) -> None:
        self.recorder.observe(self.session_id, update)
