"""From the live update stream to the canonical conversation a session keeps (history is canonical).

The stream a client sees is full of things that only matter while they happen: think-card
spinners and their heartbeats, progress snapshots, text in dozens of chunks. What a session keeps
is what happened: the user's prompt, the agent's thought and message text (coalesced — one entry
per run of chunks), each real tool call once, in its final state (kind, title, locations, status,
content, raw input and output), the last plan, the last usage. Replaying those entries as
``session/update`` notifications rebuilds every card in its final state and injects no old
presentation; none is left ``in_progress``.

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
import re
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    SessionInfoUpdate,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)

from acp_adapter.protocol.meta import phase_of
from acp_adapter.safety.redact import redact_text
from acp_adapter.store.base import JsonObject, SessionGone, SessionRecord, dumps
from acp_adapter.store.writer import BackgroundWriter
from acp_adapter.text import ellipsize

log = logging.getLogger("acp_progress.store")

#: Which process holds each open session (``{"pid", "host", "at"}``): a session open in one
#: process must not be deleted by another, whose turns would then have nowhere to go.
SESSION_HOLDERS = "agent.session-holders"

#: Longest session title (from the first prompt's first line).
TITLE_CAP = 80
_TERMINAL = {"completed", "failed"}
#: Front-end state namespace of the turns begun and not yet ended: session id -> {"pid", "at"}.
OPEN_TURNS = "agent.open-turns"
#: The most characters of one text a session keeps (a prompt, an answer, a history message): a
#: 15 MB prompt is kept as its first MiB and a note, not five times over.
STORED_TEXT_CAP = 1 << 20
#: What ends a streamed text cut at :data:`STORED_TEXT_CAP`.
STREAM_CUT_NOTE = "… (the rest was not kept)"
#: The most of the prompt an open-turn marker keeps (it only names what was asked).
MARKER_PROMPT_CAP = 4096
#: What closes a turn its agent never finished (killed, crashed, the machine went down).
INTERRUPTED_NOTE = "(interrupted — the agent stopped before this turn finished)"
#: The most bytes of stored entries one session keeps unless told otherwise (``max_session_bytes``).
DEFAULT_MAX_SESSION_BYTES = 20 * 1024 * 1024


def trimmed_note(max_bytes: int) -> str:
    """What takes the place of the entries a session over its storage cap no longer keeps."""
    return (
        f"(earlier parts of this conversation were not kept: a session keeps at most "
        f"{max_bytes / (1024 * 1024):g} MB; ACP_PROGRESS_MAX_SESSION_BYTES sets that)"
    )


#: What ends a cancelled turn's stored entries: a replay shows the turn as its own (a client joins
#: consecutive user message chunks, so a cancelled prompt would glue onto the next one) and says why.
CANCELLED_NOTE = "(cancelled)"
#: The same for a turn that failed before the agent said anything.
FAILED_NOTE = "(the turn failed)"


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    try:  # a killed process whose parent died too may linger as a zombie nobody reaps
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def this_host() -> str:
    """The machine a turn's marker names: a pid means something only on its own machine (a
    shared PostgreSQL store is written from several)."""
    return socket.gethostname()


def _turn_alive(marker: dict[str, Any]) -> bool:
    """Whether the process that began a marked turn may still be running it. A turn begun on
    another machine counts as ended: on a shared store, whoever loads its session there holds
    what makes that safe (an AG-UI replica holds the thread's lock, so the other replica's run
    ended — or died with its replica)."""
    pid = marker.get("pid")
    host = marker.get("host")
    if isinstance(host, str) and host != this_host():
        return False
    return isinstance(pid, int) and pid != os.getpid() and _process_alive(pid)


def holder_marker(at: float) -> dict[str, Any]:
    """What says "this process holds the session" (see :data:`SESSION_HOLDERS`)."""
    return {"pid": os.getpid(), "host": this_host(), "at": at}


def held_elsewhere(marker: object, *, now: float, fresh_within: float) -> dict[str, Any] | None:
    """The marker, when it names another process that may still hold the session: on this machine
    one that still runs; on another (a shared PostgreSQL store), one that used the session within
    ``fresh_within`` seconds (the idle time after which its holder frees it)."""
    if not isinstance(marker, dict):
        return None
    pid, host, at = marker.get("pid"), marker.get("host"), marker.get("at")
    if host == this_host() or not isinstance(host, str):
        alive = isinstance(pid, int) and pid != os.getpid() and _process_alive(pid)
        return marker if alive else None
    return marker if isinstance(at, int | float) and now - at < fresh_within else None


def title_from(text: str) -> str | None:
    """A session's title: the first non-empty line of its first prompt, redacted, capped."""
    for line in redact_text(text).splitlines():
        flat = " ".join(line.split())
        if flat:
            return ellipsize(flat, TITLE_CAP)
    return None


def _dump(update: Any) -> JsonObject:
    dumped: JsonObject = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _is_think_card(update: ToolCallStart) -> bool:
    return phase_of(update) == "thinking"


def _is_progress(update: ToolCallProgress) -> bool:
    return phase_of(update) == "progress"


@dataclass
class _Turn:
    entries: list[JsonObject] = field(default_factory=list)
    #: tool-call id -> its entry (a dict inside ``entries``, updated in place)
    tools: dict[str, JsonObject] = field(default_factory=dict)
    think_cards: set[str] = field(default_factory=set)
    plan_at: int | None = None
    usage: JsonObject | None = None
    #: how many of ``entries`` (the prompt) were written when the turn began
    written: int = 0


class ConversationRecorder:
    """Collects each session's canonical entries; writes them when a turn ends.

    ``store`` is a :class:`~acp_adapter.store.base.SessionStore`; ``writer`` runs the writes on its
    own thread. Every method is cheap and never raises into the caller (a recorder failure must not
    break a turn: a failing hook never breaks the turn).
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
        self.max_session_bytes = max_session_bytes
        #: bytes of stored entries per session, as far as this process knows (the writer's thread
        #: alone reads and writes it): the store is asked again only when a turn may pass the cap
        self._stored_bytes: dict[str, int] = {}
        self._turns: dict[str, _Turn] = {}
        self._titled: set[str] = set()
        #: the sessions this process holds, with their workspace (to store one again if it went)
        self._held: dict[str, str] = {}

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
        self._held[session_id] = cwd
        marker = holder_marker(now)

        def write() -> None:
            self.store.upsert_session(record)
            self.store.put(SESSION_HOLDERS, session_id, marker)

        self.writer.submit(write)

    def _append(self, session_id: str, entries: Sequence[JsonObject], now: float) -> None:
        """Append a turn's entries; when the session has gone from the store meanwhile (another
        process deleted it while it was open here), say so loudly and store it again, so the turn
        is kept rather than dropped."""
        try:
            self.store.append_events(session_id, entries, now)
        except SessionGone:
            log.error(
                "session %s was deleted from the session store while it was open in this process; "
                "it is stored again so this turn is kept (close a session before deleting it)",
                session_id,
            )
            cwd = self._held.get(session_id, "")
            self.store.upsert_session(SessionRecord(session_id, cwd, None, now, now))
            self.store.put(SESSION_HOLDERS, session_id, holder_marker(now))
            self._stored_bytes.pop(session_id, None)
            self.store.append_events(session_id, entries, now)

    def set_title(self, session_id: str, cwd: str, title: str) -> None:
        """The person named the session (``/title``): stored, and no prompt renames it after."""
        self._titled.add(session_id)
        now = self._clock()
        record = SessionRecord(session_id, cwd, title, now, now)
        self.writer.submit(lambda: self.store.upsert_session(record))

    def begin_turn(self, session_id: str, cwd: str, prompt: Sequence[Any], text: str) -> str | None:
        """Record the user's prompt; returns the session's new title when this prompt gives it one."""
        turn = self._turns[session_id] = _Turn()
        message_id = _new_message_id()  # the prompt's blocks are one message
        for block in prompt:
            chunk = UserMessageChunk(
                session_update="user_message_chunk", content=block, message_id=message_id
            )
            entry = _dump(chunk)
            content = entry.get("content")
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                content["text"] = _capped(content["text"], STORED_TEXT_CAP)
            turn.entries.append(entry)
        now = self._clock()
        title = None if session_id in self._titled else title_from(text)
        if title is not None:
            self._titled.add(session_id)
            record = SessionRecord(session_id, cwd, title, now, now)
            self.writer.submit(lambda: self.store.upsert_session(record))
        # the prompt goes to disk now, marked open, so a turn killed mid-way is not lost
        prompt_entries = [dict(entry) for entry in turn.entries]
        turn.written = len(prompt_entries)
        # the marker's prompt only says what was asked, should the turn be interrupted
        marker = {
            "pid": os.getpid(),
            "host": this_host(),
            "at": now,
            "prompt": _capped(text, MARKER_PROMPT_CAP),
        }

        held = holder_marker(now)

        def write() -> None:
            self._append(session_id, prompt_entries, now)
            self._count(session_id, prompt_entries)
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
            self._observe(turn, update)
        except Exception:
            log.exception("recording a session update failed")

    def _observe(self, turn: _Turn, update: Any) -> None:
        if isinstance(update, AgentMessageChunk | AgentThoughtChunk):
            self._text(turn, update)
        elif isinstance(update, ToolCallStart):
            if _is_think_card(update):
                turn.think_cards.add(update.tool_call_id)
                return
            entry = _dump(update)
            turn.tools[update.tool_call_id] = entry
            turn.entries.append(entry)
        elif isinstance(update, ToolCallProgress):
            if update.tool_call_id in turn.think_cards or _is_progress(update):
                return  # spinner heartbeats and progress snapshots are presentation, not history
            found = turn.tools.get(update.tool_call_id)
            if found is None:
                return
            changes = _dump(update)
            changes.pop("sessionUpdate", None)
            changes.pop("_meta", None)
            found.update(changes)
        elif isinstance(update, AgentPlanUpdate):
            entry = _dump(update)
            if turn.plan_at is not None:
                turn.entries[turn.plan_at] = entry
            else:
                turn.plan_at = len(turn.entries)
                turn.entries.append(entry)
        elif isinstance(update, UsageUpdate):
            turn.usage = _dump(update)
        elif isinstance(update, SessionInfoUpdate):
            turn.entries.append(_dump(update))

    def _text(self, turn: _Turn, update: AgentMessageChunk | AgentThoughtChunk) -> None:
        content = update.content
        last = turn.entries[-1] if turn.entries else None
        if (
            isinstance(content, TextContentBlock)
            and last is not None
            and last.get("sessionUpdate") == update.session_update
            and last.get("content", {}).get("type") == "text"
            and last.get("messageId") == update.message_id  # one stored entry per message
        ):
            kept = last["content"]["text"]
            if len(kept) < STORED_TEXT_CAP:  # beyond the cap the rest of the stream is not kept
                whole = kept + content.text
                cut = whole if len(whole) <= STORED_TEXT_CAP else whole[:STORED_TEXT_CAP] + STREAM_CUT_NOTE
                last["content"]["text"] = cut
            return
        entry = _dump(update)
        text = entry.get("content", {}).get("text")
        if isinstance(text, str) and len(text) > STORED_TEXT_CAP:
            entry["content"]["text"] = text[:STORED_TEXT_CAP] + STREAM_CUT_NOTE
        turn.entries.append(entry)

    def end_turn(
        self,
        session_id: str,
        history: Sequence[JsonObject],
        stop_reason: str | None = None,
        failed: bool = False,
    ) -> None:
        """The turn answered: queue its entries (every tool in a terminal state) and the history.

        A cancelled turn ends with a :data:`CANCELLED_NOTE` agent message, a failed one that said
        nothing with :data:`FAILED_NOTE`: each turn replays as its own, never merged into the next."""
        turn = self._turns.pop(session_id, None)
        if turn is not None:
            if stop_reason == "cancelled":
                _end_with_note(turn.entries, CANCELLED_NOTE)
            elif failed and not any(e.get("sessionUpdate") == "agent_message_chunk" for e in turn.entries):
                _end_with_note(turn.entries, FAILED_NOTE)
        entries = list(turn.entries[turn.written :]) if turn is not None else []
        for entry in entries:
            if entry.get("sessionUpdate") == "tool_call" and entry.get("status") not in _TERMINAL:
                entry["status"] = "failed"  # cannot happen (no orphan card), but a replay never spins
        if turn is not None and turn.usage is not None:
            entries.append(turn.usage)
        now = self._clock()
        snapshot = [_capped_message(m) for m in history]

        def write() -> None:
            self._append(session_id, entries, now)
            self._keep_under_cap(session_id, entries)
            self.store.replace_history(session_id, snapshot)
            self.store.remove(OPEN_TURNS, session_id)

        self.writer.submit(write)

    def _count(self, session_id: str, entries: Sequence[JsonObject]) -> int | None:
        """Add ``entries`` (just written) to the session's known stored bytes; None when unknown."""
        known = self._stored_bytes.get(session_id)
        if known is not None:
            known = self._stored_bytes[session_id] = known + sum(len(dumps(e).encode()) for e in entries)
        return known

    def _keep_under_cap(self, session_id: str, entries: Sequence[JsonObject]) -> None:
        """One session's stored entries stay within :attr:`max_session_bytes` (every input is bounded:
        one AG-UI thread fed 15 MB runs would otherwise grow without bound): the oldest go first,
        a note takes their place, the log says so. Runs on the writer's thread, after the turn's
        entries are written."""
        known = self._count(session_id, entries)
        if known is not None and known <= self.max_session_bytes:
            return
        note = AgentMessageChunk(
            session_update="agent_message_chunk",
            content=TextContentBlock(type="text", text=trimmed_note(self.max_session_bytes)),
            message_id=_new_message_id(),
        )
        dropped, kept = self.store.trim_events(session_id, self.max_session_bytes, _dump(note))
        self._stored_bytes[session_id] = kept
        if dropped:
            log.warning(
                "session %s: dropped its %d oldest stored entries (it keeps at most %d bytes)",
                session_id,
                dropped,
                self.max_session_bytes,
            )

    def forget(self, session_id: str) -> None:
        self._turns.pop(session_id, None)
        self._titled.discard(session_id)
        held = self._held.pop(session_id, None) is not None

        def write() -> None:
            self._stored_bytes.pop(session_id, None)
            if held:
                self._let_go(session_id)

        self.writer.submit(write)

    def let_go_of_all(self) -> None:
        """The process is ending: every session it holds may be deleted by others from now on."""
        held, self._held = list(self._held), {}

        def write() -> None:
            for session_id in held:
                self._let_go(session_id)

        self.writer.submit(write)

    def _let_go(self, session_id: str) -> None:
        """Remove this process's holder marker (never another process's, which loaded the session
        after us)."""
        marker = self.store.get(SESSION_HOLDERS, session_id)
        if (
            isinstance(marker, dict)
            and marker.get("pid") == os.getpid()
            and marker.get("host") == this_host()
        ):
            self.store.remove(SESSION_HOLDERS, session_id)

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
        note = AgentMessageChunk(
            session_update="agent_message_chunk",
            content=TextContentBlock(type="text", text=INTERRUPTED_NOTE),
            message_id=_new_message_id(),
        )
        with self.store.batch():
            self.store.append_events(session_id, [_dump(note)], self._clock())
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


def _new_message_id() -> str:
    """A ``messageId`` for a message the store itself writes (a prompt, a note)."""
    return f"msg_{uuid.uuid4().hex}"


def _end_with_note(entries: list[JsonObject], note: str) -> None:
    """Close a turn's entries with an agent ``note`` (after a blank line, when the agent's text is last)."""
    last = entries[-1] if entries else None
    if last is not None and last.get("sessionUpdate") == "agent_message_chunk":
        content = last.get("content")
        if isinstance(content, dict) and content.get("type") == "text":
            content["text"] = f"{content.get('text', '')}\n\n{note}"
            return
    chunk = AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=note),
        message_id=_new_message_id(),
    )
    entries.append(_dump(chunk))


#: the note :func:`_capped` ends a cut text with (so a text cut once is never cut again)
_CAP_NOTE = re.compile(r"… \([0-9,]+ more characters not kept\)")


def _capped(text: str, cap: int) -> str:
    """``text`` whole when it fits ``cap`` characters, else its start and a note of what is not kept."""
    if len(text) <= cap or _CAP_NOTE.fullmatch(text, cap) is not None:
        return text  # it fits, or it was cut already (a history message stored by an earlier turn)
    return text[:cap] + f"… ({len(text) - cap:,} more characters not kept)"


def _capped_message(message: JsonObject) -> JsonObject:
    content = message.get("content")
    if isinstance(content, str) and len(content) > STORED_TEXT_CAP:
        return {**message, "content": _capped(content, STORED_TEXT_CAP)}
    return message


def replay_updates(session_id: str, events: Sequence[JsonObject]) -> list[Any]:
    """The stored entries as schema update objects, in order; an entry that no longer validates
    (written by another version) is skipped with a warning rather than failing the load."""
    updates: list[Any] = []
    for event in events:
        if event.get("sessionUpdate") == "tool_call" and event.get("status") not in _TERMINAL:
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
