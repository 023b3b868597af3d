"""What a bridge instance keeps across restarts, in the session store's key-value API.

One namespace per instance (``bridge:<name>``), so a bridge restarted (or killed) goes on where
it was:

* ``chat:<id>`` → ``{"session", "cwd"}``: the chat's ACP session; after a restart the bridge
  loads it (``session/load``, replay not posted: the chat already shows it) instead of starting over;
* ``offset``: the next Telegram update to fetch, stored once the update before it was accepted;
* ``turn:<id>`` → ``{"chat", "started"}``: a turn is running in that chat. Written before the
  prompt goes to the agent, removed when the turn ends (however it ends, the chat is told). One
  still there at start means the bridge died mid-turn: the chat is told, the prompt is never re-sent;
* ``outbox:<n>`` → ``{"chat", "text", "state"}``: one answer chunk, stored before it is sent and
  removed once the platform confirmed it. ``sending`` (the bridge died during the send) or
  ``unknown`` (the send timed out) means nobody knows whether the chat got it: it is re-sent with
  :data:`REPEAT_NOTE` in front. We chose "maybe twice, marked" over "maybe never": a reader can
  skip a marked repeat, but cannot recover an answer that was silently dropped.

Each method is one small synchronous SQLite write (the store's own transaction), run in order
on the bridge's event loop: that is what makes "stored before sent" true.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..store import KeyValueStore

__all__ = [
    "INTERRUPTED",
    "NEW_CONVERSATION",
    "REPEAT_NOTE",
    "BridgeState",
    "ChatSession",
    "OutboxEntry",
]

log = logging.getLogger("acp_progress.bridges.state")

INTERRUPTED: Final = "⚠️ The bridge restarted while your last request was running; it was not finished."
"""Posted on start in each chat whose turn was running when the bridge died."""
NEW_CONVERSATION: Final = "ℹ️ Could not reopen the earlier conversation ({why}); this is a new one."
"""Posted once when a chat's stored session cannot be loaded."""
REPEAT_NOTE: Final = "(may repeat) "
"""In front of an answer chunk re-sent because its first send's outcome is unknown."""

OutboxState = Literal["pending", "sending", "unknown"]


@dataclass(frozen=True)
class ChatSession:
    chat: str
    session: str
    cwd: str


@dataclass(frozen=True)
class OutboxEntry:
    key: str
    chat: Any
    text: str
    state: OutboxState


class BridgeState:
    """One bridge instance's durable state in a :class:`~acp_adapter.store.KeyValueStore`."""

    def __init__(self, store: KeyValueStore, instance: str) -> None:
        self.store = store
        self.namespace = f"bridge:{instance}"
        # outbox keys sort as numbers and keep growing across restarts
        last = max((int(k.split(":", 1)[1]) for k, _ in self._items("outbox:")), default=0)
        self._seq = itertools.count(last + 1)

    def _items(self, prefix: str) -> list[tuple[str, Any]]:
        return sorted((k, v) for k, v in self.store.items(self.namespace) if k.startswith(prefix))

    # ------------------------------------------------------------------ chat sessions

    def session(self, chat: Any) -> ChatSession | None:
        value = self.store.get(self.namespace, f"chat:{chat}")
        if isinstance(value, dict) and isinstance(value.get("session"), str) and value["session"]:
            return ChatSession(str(chat), value["session"], str(value.get("cwd") or ""))
        return None

    def set_session(self, chat: Any, session_id: str, cwd: str) -> None:
        self.store.put(self.namespace, f"chat:{chat}", {"session": session_id, "cwd": cwd})

    def sessions(self) -> list[ChatSession]:
        """Every chat's stored session (``bridge show``)."""
        out = []
        for key, value in self._items("chat:"):
            if isinstance(value, dict) and isinstance(value.get("session"), str):
                out.append(ChatSession(key.split(":", 1)[1], value["session"], str(value.get("cwd") or "")))
        return out

    # ------------------------------------------------------------------ update offset

    def offset(self) -> int | None:
        value = self.store.get(self.namespace, "offset")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def accept_update(self, update_id: int) -> None:
        """Update ``update_id`` is taken: a restart fetches from the one after it (never lowers)."""
        current = self.offset()
        if current is None or update_id + 1 > current:
            self.store.put(self.namespace, "offset", update_id + 1)

    # ------------------------------------------------------------------ running turns

    def turn_started(self, chat: Any) -> None:
        self.store.put(self.namespace, f"turn:{chat}", {"chat": chat, "started": time.time()})

    def turn_ended(self, chat: Any) -> None:
        self.store.remove(self.namespace, f"turn:{chat}")

    def interrupted_chats(self) -> list[Any]:
        """Chats whose turn was running when the bridge died (the ids as the platform gave them)."""
        return [v["chat"] for _, v in self._items("turn:") if isinstance(v, dict) and "chat" in v]

    # ------------------------------------------------------------------ outbox

    def outbox_add(self, chat: Any, text: str) -> str:
        key = f"outbox:{next(self._seq):016d}"
        self.store.put(self.namespace, key, {"chat": chat, "text": text, "state": "pending"})
        return key

    def outbox_mark(self, key: str, state: OutboxState) -> None:
        value = self.store.get(self.namespace, key)
        if isinstance(value, dict):
            self.store.put(self.namespace, key, {**value, "state": state})

    def outbox_sent(self, key: str) -> None:
        self.store.remove(self.namespace, key)

    def outbox(self, chat: Any | None = None) -> list[OutboxEntry]:
        """Unsent answer chunks, oldest first (of one chat, or all)."""
        out = []
        for key, v in self._items("outbox:"):
            if not isinstance(v, dict) or (chat is not None and str(v.get("chat")) != str(chat)):
                continue
            state = v.get("state")
            out.append(
                OutboxEntry(
                    key=key,
                    chat=v.get("chat"),
                    text=str(v.get("text", "")),
                    state=state if state in ("pending", "sending", "unknown") else "unknown",
                )
            )
        return out


def open_bridge_state(instance: str, settings: Any) -> BridgeState | None:
    """The instance's durable state in the session store (``ACP_PROGRESS_STATE_DIR``); None when
    state is off (``ACP_PROGRESS_STATE=off``) or the store could not be opened on disk (then a
    restart starts over, as before)."""
    from pathlib import Path

    from ..store import SqliteStore, open_store

    if not settings.state:
        return None
    where = Path(settings.state_dir) if settings.state_dir else None
    store = open_store(where, enabled=True, retention_days=settings.session_retention_days)
    if not isinstance(store, SqliteStore):
        store.close()
        return None
    return BridgeState(store, instance)
