"""Typed ``_meta.acpProgress``: this package's structured data inside ACP ``_meta`` objects.

ACP lets every message carry a free-form ``_meta`` object; this package keeps its own facts under
one key, :data:`META_KEY`, in one shape, :class:`ProgressMeta`, so the agent that writes them and
every client that reads them (watch, bridges, AG-UI, relay, store, summary) agree by construction
instead of by spelling. What is carried, and where:

* session updates of cards: ``phase`` (see :data:`Phase`), a think card's ``elapsedMs`` with the
  heartbeat's ``status`` and progress ``summary``, a failed think card's ``reason``; a tool card's
  ``toolId``/``label``/``preview``/``emoji`` at its start, the tool's own ``progress``
  (value/total/message) on a progress update, ``error`` and ``durationMs`` at its end;
* the ``initialize`` answer: ``thinkCards`` (the agent shows its own spinners: a relay adds none)
  and ``storeFlush`` (the agent answers :data:`STORE_FLUSH_METHOD`);
* a permission answer: ``automatic`` (a client's policy answered, no person did), ``decidedBy``
  (who answered) and ``surface`` (where: watch, chat, telegram, agui …), kept in the agent's audit;
* the ``session/prompt`` answer: ``usage`` (token counts; the stable v1 answer has no usage field);
* an MCP server entry of ``session/new``: ``trusted`` (the person marked the server trusted).

Reading is forgiving: other agents send arbitrary ``_meta`` and a peer may be hostile, so
:func:`read_meta` answers ``None`` for anything that is not a valid :class:`ProgressMeta` (fields
of other namespaces and unknown fields of ours are ignored), never an exception. Writing goes
through :func:`meta_field`; the one hot path (a busy tool's progress, thousands a second) builds
its small dict from the aliases named here (:data:`PROGRESS_PHASE_KEY`, :data:`PROGRESS_KEY`),
which the tests hold equal to the model's dump, since a pydantic round trip there costs more than
the rest of the update.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal, get_args

from acp.schema import Usage
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

log = logging.getLogger("acp_progress.protocol.meta")

#: Namespace of this package's structured data inside ACP ``_meta`` objects.
META_KEY: Final = "acpProgress"
#: The extension method (ACP sends it as ``_acpProgress/flushStore``) that asks this package's agent
#: to finish its queued session-store writes and answer ``{"flushed": bool}``: a reader of the
#: store in another process (the AG-UI endpoint's ``GET /threads/{id}``) then sees every turn the
#: agent answered, a cancelled one and one whose write outlasted the wait before the answer too.
STORE_FLUSH_METHOD: Final = f"{META_KEY}/flushStore"

#: Where a card is: a think card is ``thinking`` then ``done``/``failed``; a tool card is
#: ``started``, ``progress`` while the tool reports, then ``completed``/``failed``.
Phase = Literal["thinking", "done", "failed", "started", "progress", "completed"]

#: A number JSON can spell: an int, or a finite float (never a bool, never a numeric string).
Number = StrictInt | Annotated[float, Field(strict=True, allow_inf_nan=False)]


class _Meta(BaseModel):
    """Frozen, camelCase on the wire, unknown fields ignored (a newer agent may send more)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    def dump(self) -> dict[str, Any]:
        """The wire form: aliases, absent fields absent."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ProgressReport(_Meta):
    """What a tool reported on one progress update (replace semantics); absent fields absent."""

    value: Number | None = None
    total: Number | None = None
    message: StrictStr | None = None


class SummaryStatus(_Meta):
    """A think card's generated one-sentence status, replaced by a client by ``revision``."""

    summary: StrictStr
    revision: StrictInt


class ProgressMeta(_Meta):
    """Everything this package carries under ``_meta.acpProgress``, each field optional.

    Built by field name (``elapsed_ms=…``), read and written by wire name (``elapsedMs``).

    The field order is the wire order of today's updates (the dump keeps it), e.g. a failed
    tool's ``{"phase", "error", "durationMs"}``."""

    phase: Phase | None = None
    elapsed_ms: Annotated[StrictInt | None, Field(alias="elapsedMs")] = None
    status: StrictStr | None = None
    summary: SummaryStatus | None = None
    reason: StrictStr | None = None
    tool_id: Annotated[StrictStr | None, Field(alias="toolId")] = None
    label: StrictStr | None = None
    preview: StrictStr | None = None
    emoji: StrictStr | None = None
    progress: ProgressReport | None = None
    error: StrictStr | None = None
    duration_ms: Annotated[StrictInt | None, Field(alias="durationMs")] = None
    think_cards: Annotated[StrictBool | None, Field(alias="thinkCards")] = None
    store_flush: Annotated[StrictBool | None, Field(alias="storeFlush")] = None
    automatic: StrictBool | None = None
    #: a permission answer: who gave it and on which surface (for the agent's audit); bounded,
    #: since a client's _meta is input like any other
    decided_by: Annotated[StrictStr | None, Field(alias="decidedBy", max_length=200)] = None
    surface: Annotated[StrictStr | None, Field(max_length=100)] = None
    usage: Usage | None = None
    #: an MCP server entry of ``session/new``: the person marked the server trusted (its tool
    #: annotations may then decide what runs unasked; see :mod:`acp_adapter.mcp.trust`)
    trusted: StrictBool | None = None


def _wire_name(field: str) -> str:
    return ProgressMeta.model_fields[field].alias or field


#: The wire names of the hot path's two keys, read from the model.
PROGRESS_PHASE_KEY: Final = _wire_name("phase")
PROGRESS_KEY: Final = _wire_name("progress")


def meta_field(meta: ProgressMeta) -> dict[str, Any]:
    """The ``_meta`` object of a message: ``{"acpProgress": {...}}``."""
    return {META_KEY: meta.dump()}


def read_meta(field_meta: object) -> ProgressMeta | None:
    """Our part of a ``_meta`` object, or ``None`` when there is none or it is not valid.

    ``field_meta`` is whatever arrived (an SDK model's ``field_meta``, a raw JSON value): a
    foreign or malformed one is ignored, never an error, because any agent may send any ``_meta``."""
    if not isinstance(field_meta, Mapping):
        return None
    ours = field_meta.get(META_KEY)
    if ours is None:
        return None
    try:
        return ProgressMeta.model_validate(ours)
    except ValidationError as exc:
        log.debug("ignoring a _meta.%s that is not ours: %d error(s)", META_KEY, exc.error_count())
        return None


_PHASES: Final = frozenset(get_args(Phase))


def phase_of(message: object) -> Phase | None:
    """Only the ``phase`` of a message's ``_meta.acpProgress`` (``None`` if absent or not one of
    :data:`Phase`), without validating the rest: for observers on the agent's delivery path that
    need nothing else (the session store asks it of every update it records)."""
    field_meta = getattr(message, "field_meta", None)
    ours = field_meta.get(META_KEY) if isinstance(field_meta, Mapping) else None
    phase = ours.get(PROGRESS_PHASE_KEY) if isinstance(ours, Mapping) else None
    return phase if isinstance(phase, str) and phase in _PHASES else None  # type: ignore[return-value]


def meta_of(message: object) -> ProgressMeta | None:
    """:func:`read_meta` of an SDK object's ``field_meta`` (a session update, an answer)."""
    return read_meta(getattr(message, "field_meta", None))
