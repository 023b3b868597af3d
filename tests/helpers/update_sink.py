"""A stand-in for the client's side of ``session/update``: it keeps every update it is sent, in
order, and can fail like a client that went away."""

from __future__ import annotations

from typing import Any


class Sink:
    """Records ``(session_id, update)``; after ``fail_on`` sends, the next one raises ConnectionError."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.fail_on = fail_on

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if self.fail_on is not None and len(self.sent) == self.fail_on:
            self.sent.append((session_id, "FAILED"))
            raise ConnectionError("client went away")
        self.sent.append((session_id, update))
