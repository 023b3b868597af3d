"""OAuth token requests (RFC 6749 4.1.3): a bare ``code`` key near one of the request's words holds
an authorization code, while ``"code": 404`` in an error object is left alone. The key/value pass
asks :class:`_OAuthContext`; :func:`~acp_adapter.safety.redact.redact_value` reads the key set.
"""

from __future__ import annotations

from typing import Final

_OAUTH_WORDS: Final = ("grant_type", "redirect_uri", "code_verifier", "authorization_code", "client_id")
_OAUTH_WINDOW: Final = 512
_OAUTH_KEYS: Final = frozenset({"grant_type", "redirect_uri", "code_verifier", "client_id", "client_secret"})


class _OAuthContext:
    """Answers "is an OAuth request word within the window around this position?" for positions
    visited left to right. Each word keeps the next occurrence at or after the window start and
    only searches again once the window has moved past it, so each word's scans cover the text
    once: linear however many ``code`` keys there are."""

    def __init__(self, low: str) -> None:
        self._low = low
        self._next = dict.fromkeys(_OAUTH_WORDS, -2)  # -2: not searched yet; -1: none left

    def near(self, at: int) -> bool:
        lo, hi = at - _OAUTH_WINDOW, at + _OAUTH_WINDOW
        for word, pos in self._next.items():
            if pos == -1:
                continue
            if pos == -2 or pos < lo:
                pos = self._next[word] = self._low.find(word, max(lo, 0))
                if pos == -1:
                    continue
            if pos <= hi:
                return True
        return False
