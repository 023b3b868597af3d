"""The permission audit: every answer to a permission question, written to the session store on
the tool's worker thread before the tool runs, so the audit holds every command that was allowed
even if the process dies while it runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from acp_adapter.store import PermissionDecision
from acp_adapter.store.base import CANCELLED_DECISION
from acp_adapter.tools import one_line

if TYPE_CHECKING:
    from acp_adapter.agent.tool_cards import PermissionAnswer
    from acp_adapter.store import SessionStore

__all__ = ["PermissionAudit"]


class PermissionAudit:
    """Records who answered a permission question, where, and what they decided."""

    def __init__(self, store: SessionStore, client_name: Callable[[], str | None]) -> None:
        self._store = store
        #: the client's name from ``initialize`` (known only once the client said it)
        self._client_name = client_name

    def record(self, session_id: str, card_id: str, title: str, answer: PermissionAnswer) -> None:
        """Record ``answer`` to the question of card ``card_id``.

        Who: ``auto`` when a policy answered with no person asked, else the person the client
        names (``decidedBy``), else ``client``. Where: the surface the client names (``watch``,
        ``telegram`` …), else the client's own name from ``initialize``, else ``acp``."""
        if answer.cancelled:  # withdrawn when the turn was cancelled: nobody decided
            decided_by = CANCELLED_DECISION
        else:
            decided_by = "auto" if answer.automatic else (answer.decided_by or "client")
        client = self._client_name()
        surface = answer.surface or (one_line(client, 60) if client else "acp")
        self._store.record_permission(
            PermissionDecision(
                time.time(), session_id, card_id, title, answer.allowed, decided_by, surface, answer.rule
            )
        )
