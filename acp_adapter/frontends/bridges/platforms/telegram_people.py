"""The people who write to a Telegram bot: how a name is shown, and how often strangers are refused.

Why a module of its own: the bridge answers anyone off its allowlist with a polite refusal, and a
crowd of strangers must cost it a bounded number of messages and a bounded amount of memory
(:class:`RefusalLimiter`); a name shown in a question's verdict or a refusal must be short,
printable and redacted (:func:`display_name`). Both are about people, not about the Bot API.
"""

from __future__ import annotations

import collections
import time
import unicodedata
from collections.abc import Callable, Hashable
from typing import Final

from telegram import User

from acp_adapter.safety.redact import redact_text

NAME_LIMIT: Final = 64
"""Characters of a person's name shown in a question's verdict or a refusal."""


def display_name(user: User | None) -> str:
    """A short, printable name for a person: @username, else their first (and last) name, else the id."""
    if user is None:
        return "someone"
    if user.username:
        raw = f"@{user.username}"
    else:
        raw = " ".join(x for x in (user.first_name, user.last_name) if x) or f"user {user.id}"
    clean = "".join(ch for ch in raw if unicodedata.category(ch)[0] != "C")
    clean = " ".join(clean.split())[:NAME_LIMIT] or f"user {user.id}"
    return redact_text(clean)


class RefusalLimiter:
    """One refusal per key (chat) per ``interval`` and ``per_hour`` in all; remembers ``memory`` keys.

    A crowd of strangers costs at most ``per_hour`` messages an hour and ``memory`` entries of
    memory, however many of them there are and however often they write.
    """

    def __init__(
        self,
        interval: float = 3600.0,
        per_hour: int = 60,
        memory: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.per_hour = per_hour
        self.memory = memory
        self.clock = clock
        self.sent = 0
        self.suppressed = 0
        self._last: collections.OrderedDict[Hashable, float] = collections.OrderedDict()
        self._recent: collections.deque[float] = collections.deque()

    def __len__(self) -> int:
        return len(self._last)

    def allow(self, key: Hashable) -> bool:
        """True when ``key`` may get a refusal now (and it is counted as sent)."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self.suppressed += 1
            return False
        while self._recent and now - self._recent[0] >= 3600.0:
            self._recent.popleft()
        if len(self._recent) >= self.per_hour:
            self.suppressed += 1
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > self.memory:
            self._last.popitem(last=False)
        self._recent.append(now)
        self.sent += 1
        return True
