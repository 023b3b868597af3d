"""Notifications from the agent, checked at the door: an invalid one is one counted line, never a
traceback.

Why a module of its own: the SDK's connection validates a notification's params when it routes it,
and logs every failure with a full traceback (twenty lines). A broken or hostile agent that sends
2,000 malformed ``session/update``s would put 40,000 lines on the person's terminal and hide
everything else there. The client's transport asks :class:`NotificationCheck` about each
notification before the SDK sees it: a valid one passes untouched; an invalid one (params the ACP
schema refuses, a method the client does not handle) is dropped and counted by kind. The first of a
kind is one warning line that says what was wrong; later ones are counted and summed up in one line
per kind at most every :data:`SUMMARY_EVERY` seconds, and once more when the connection closes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from acp.meta import CLIENT_METHODS
from acp.schema import CompleteElicitationNotification, SessionNotification
from pydantic import BaseModel, ValidationError

from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.client")

#: The notifications a client handles, each with the schema of its params.
NOTIFICATION_SCHEMAS: Final[Mapping[str, type[BaseModel]]] = {
    CLIENT_METHODS["session_update"]: SessionNotification,
    CLIENT_METHODS["elicitation_complete"]: CompleteElicitationNotification,
}
#: Seconds between two summary lines of one kind.
SUMMARY_EVERY: Final = 30.0
#: Kinds told apart; a sender that varies its mistakes past this shares one "other" count.
MAX_KINDS: Final = 32
#: Characters of a method name or an error message quoted in a line.
QUOTE_LIMIT: Final = 120


@dataclass
class _Kind:
    """One kind of invalid notification: what it is, what is wrong with it, and how many came since
    the last line said so."""

    label: str
    detail: str
    unreported: int = 0
    total: int = 0
    reported_at: float = 0.0


def _quote(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"


def _problem(method: str, params: Any) -> tuple[tuple[str, ...], str, str] | None:
    """``None`` for a notification the client can take; else its kind (a key), what it is and what
    is wrong with it."""
    if method.startswith("_"):
        return None  # an extension: the SDK hands it to the client, or ignores it quietly
    schema = NOTIFICATION_SCHEMAS.get(method)
    if schema is None:
        return ("unknown",), "unknown notification", f"no client handles {_quote(method)}"
    try:
        schema.model_validate(params)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(_quote(str(part))[:40] for part in first["loc"][:4]) or "params"
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        key = (method, first["type"], where)
        return key, f"invalid {method}", f"{where}: {_quote(first['msg'])}{more}"
    return None


class NotificationCheck:
    """Admits the agent's valid notifications; drops, counts and sums up the invalid ones."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, every: float = SUMMARY_EVERY) -> None:
        self._clock = clock
        self._every = every
        self._kinds: dict[tuple[str, ...], _Kind] = {}

    @property
    def dropped(self) -> int:
        """Invalid notifications dropped so far, all kinds."""
        return sum(kind.total for kind in self._kinds.values())

    def admit(self, message: Mapping[str, Any]) -> bool:
        """Whether ``message`` goes on to the SDK: requests and answers always do (an invalid request
        gets an error answer there, without a traceback); a notification only when it is valid."""
        method = message.get("method")
        if "id" in message or not isinstance(method, str):
            return True
        problem = _problem(method, message.get("params"))
        if problem is None:
            return True
        self._count(*problem)
        return False

    def _count(self, key: tuple[str, ...], label: str, detail: str) -> None:
        kind = self._kinds.get(key)
        if kind is None:
            if len(self._kinds) >= MAX_KINDS:
                key, label, detail = ("other",), "invalid notification", "yet another kind of mistake"
                kind = self._kinds.get(key)
            if kind is None:
                kind = self._kinds[key] = _Kind(label, detail, total=1, reported_at=self._clock())
                log.warning(
                    "ignored the agent's %s (%s); more like it are counted, not shown",
                    label,
                    redact_text(detail),
                )
                return
        kind.total += 1
        kind.unreported += 1
        if self._clock() - kind.reported_at >= self._every:
            self._report(kind)

    def _report(self, kind: _Kind) -> None:
        log.warning(
            "ignored %s more %s from the agent (%s); %s in all",
            f"{kind.unreported:,}",
            kind.label,
            redact_text(kind.detail),
            f"{kind.total:,}",
        )
        kind.unreported = 0
        kind.reported_at = self._clock()

    def flush(self) -> None:
        """One line for each kind with a count not said yet (the connection is closing)."""
        for kind in self._kinds.values():
            if kind.unreported:
                self._report(kind)
