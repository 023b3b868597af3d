"""What a bridge keeps across restarts: each chat's session, the update offset, an inbox, an outbox.

All of it lives in the session store's key-value API (:mod:`acp_adapter.store`), one namespace
per instance (``bridge:<name>``), so a bridge restarted (or killed) goes on where it was:

* ``session:<chat>`` — the chat's ACP session id: after a restart the bridge loads it
  (``session/load``, replay not posted: the chat already shows it) instead of starting over;
* ``offset`` — the next platform update to fetch (Telegram ``getUpdates`` offset), stored only
  once the update before it was *accepted* (its inbox entry written), so nothing is processed
  twice or skipped;
* ``inbox:<n>`` — an accepted prompt: ``queued`` (never sent to the agent: run after a restart)
  or ``running`` (the agent had it: after a restart the chat is told it was interrupted, and it
  is never re-sent);
* ``outbox:<n>`` — an answer chunk, stored before it is sent and removed once the platform
  confirmed it. ``sending`` or ``unknown`` (the send timed out, or the bridge died during it)
  means nobody knows whether the chat got it: it is marked so and never sent again (no
  duplicate); the chat gets one notice quoting its start (:func:`unsure_note`), so the person
  can tell whether that part arrived rather than have it silently dropped.

Every method is a small synchronous SQLite transaction (the store's own); they run in order on
the bridge's event loop, which is what makes "stored before sent" true.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass
from typing import Any, Final, Literal

from acp_adapter.store import KeyValueStore
from acp_adapter.text import flatten

log = logging.getLogger("acp_progress.bridges.state")

INTERRUPTED: Final = "⚠️ The bridge restarted while this was running; it was not finished."
"""Posted in a chat whose turn was running when the bridge died (the prompt is not re-sent)."""
UNSURE_QUOTE: Final = 60
"""Characters of an answer chunk quoted in the notice that its delivery is unknown."""


def unsure_note(text: str) -> str:
    """The chat's notice for an answer chunk whose send may or may not have arrived (it is not
    sent again): its start, so the person can tell."""
    quoted = flatten(text, UNSURE_QUOTE)
    return f"⚠️ Not sure this part of the answer arrived (the send could not be confirmed): “{quoted}”"


OutboxState = Literal["pending", "sending", "unknown", "failed"]


@dataclass(frozen=True)
class InboxEntry:
    key: str
    chat: Any
    message_id: Any
    text: str
    sender: tuple[Any, str] | None
    state: Literal["queued", "running"]


@dataclass(frozen=True)
class OutboxEntry:
    key: str
    chat: Any
    text: str
    state: OutboxState
    attempts: int


def _chat_key(chat: Any) -> str:
    return str(chat)


class BridgeState:
    """One bridge instance's durable state in a key-value store."""

    def __init__(self, store: KeyValueStore, instance: str) -> None:
        self.store = store
        self.namespace = f"bridge:{instance}"
        # increasing keys that sort as numbers (a restart continues above the last one)
        last = max((int(k.split(":", 1)[1]) for k, _ in self._items("outbox:")), default=0)
        self._seq = itertools.count(max(last + 1, int(time.time() * 1000)))

    def _items(self, prefix: str) -> list[tuple[str, Any]]:
        return [(k, v) for k, v in self.store.items(self.namespace) if k.startswith(prefix)]

    def clear(self) -> None:
        """Forget everything (``bridge create``/``delete``: a new instance of an old name starts afresh)."""
        for key, _ in self.store.items(self.namespace):
            self.store.remove(self.namespace, key)

    # ------------------------------------------------------------------ sessions

    def session(self, chat: Any) -> str | None:
        value = self.store.get(self.namespace, f"session:{_chat_key(chat)}")
        return str(value["session_id"]) if isinstance(value, dict) and value.get("session_id") else None

    def set_session(self, chat: Any, session_id: str) -> None:
        self.store.put(
            self.namespace,
            f"session:{_chat_key(chat)}",
            {"session_id": session_id, "updated_at": time.time()},
        )

    def sessions(self) -> list[dict[str, Any]]:
        """Every chat's session (``bridge show``): ``{"chat", "session_id", "updated_at"}``."""
        return [{"chat": k.split(":", 1)[1], **v} for k, v in self._items("session:") if isinstance(v, dict)]

    # ------------------------------------------------------------------ update offset + inbox

    def offset(self) -> int | None:
        value = self.store.get(self.namespace, "offset")
        return int(value) if isinstance(value, int) else None

    def accept(self, update_id: int, prompt: dict[str, Any] | None) -> str | None:
        """Update ``update_id`` is taken: its prompt (if any) is queued in the inbox, then the offset
        moves past it. Returns the inbox key (None when the update is no prompt)."""
        key = None
        if prompt is not None:
            key = f"inbox:{update_id:016d}"
            self.store.put(self.namespace, key, {**prompt, "state": "queued"})
        self.store.put(self.namespace, "offset", update_id + 1)
        return key

    def running(self, key: str) -> None:
        """The prompt goes to the agent now: after a crash it is reported interrupted, never re-sent."""
        value = self.store.get(self.namespace, key)
        if isinstance(value, dict):
            self.store.put(self.namespace, key, {**value, "state": "running"})

    def done(self, key: str) -> None:
        self.store.remove(self.namespace, key)

    def inbox(self) -> list[InboxEntry]:
        out = []
        for key, v in self._items("inbox:"):
            if not isinstance(v, dict):
                continue
            sender = v.get("sender")
            who = (sender[0], str(sender[1])) if isinstance(sender, list) and len(sender) == 2 else None
            out.append(
                InboxEntry(
                    key=key,
                    chat=v.get("chat"),
                    message_id=v.get("message_id"),
                    text=str(v.get("text", "")),
                    sender=who,
                    state="running" if v.get("state") == "running" else "queued",
                )
            )
        return out

    # ------------------------------------------------------------------ outbox

    def outbox_add(self, chat: Any, text: str) -> str:
        key = f"outbox:{next(self._seq):016d}"
        self.store.put(self.namespace, key, {"chat": chat, "text": text, "state": "pending", "attempts": 0})
        return key

    def outbox_mark(self, key: str, state: OutboxState) -> None:
        value = self.store.get(self.namespace, key)
        if not isinstance(value, dict):
            return
        attempts = int(value.get("attempts", 0)) + (1 if state == "sending" else 0)
        self.store.put(self.namespace, key, {**value, "state": state, "attempts": attempts})

    def outbox_sent(self, key: str) -> None:
        self.store.remove(self.namespace, key)

    def outbox(self, chat: Any | None = None) -> list[OutboxEntry]:
        out = []
        for key, v in self._items("outbox:"):
            if not isinstance(v, dict) or (chat is not None and _chat_key(v.get("chat")) != _chat_key(chat)):
                continue
            state = v.get("state")
            out.append(
                OutboxEntry(
                    key=key,
                    chat=v.get("chat"),
                    text=str(v.get("text", "")),
                    state=state if state in ("pending", "sending", "unknown", "failed") else "unknown",
                    attempts=int(v.get("attempts", 0)),
                )
            )
        return out
