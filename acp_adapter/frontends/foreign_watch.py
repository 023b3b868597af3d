"""Watch a foreign agent's updates and keep the person informed: the one implementation behind
``acp-progress relay`` (a second process, JSON lines) and :func:`~acp_adapter.with_progress` (in
process, SDK objects).

A foreign agent shows nothing while its model thinks. This watcher is told what passes between the
person's client and the agent — a prompt began, the agent spoke about a session, the agent asked the
client something, the client answered, a cancel, the prompt's answer — and answers by *posting* the
updates it adds: a ``kind="think"`` card once the agent has been silent for ``think_after`` seconds
while a prompt is outstanding, its heartbeats with the elapsed time (and, with summaries on, the
latest one-sentence summary), and the card's close.

The rules, for both transports:

* **close before forward.** The caller tells the watcher about an agent message *before* it forwards
  it; the watcher posts the card's close synchronously, so the close always reaches the client before
  the agent's update. The same at every ending: answer, error, cancel, the agent gone.
* **never two spinners.** Nothing is injected in a session where the agent shows its own thinking
  (a ``kind="think"`` card of its own, or thought chunks), nor anywhere once its ``initialize`` answer
  says ``_meta.acpProgress.thinkCards: true``, nor while one of its own cards is still live in the
  turn, nor while it waits for the person (a permission question, a file read): those are not a model
  thinking.
* **nothing after the end.** A turn ended (or cancelled) has no timer and no summary left; late
  summary sentences are dropped.
* **output is data.** What we add is built by :mod:`acp_adapter.tools`, whose builders pass every
  string (failure reasons, summaries) through the canonical redactor. The agent's own updates are
  never touched.

Turns are keyed by the caller (the relay by the prompt's JSON-RPC id, the in-process wrapper by a
counter), so after a cancel and a new prompt the old prompt's answer ends only the old turn. All calls
happen on the event loop thread (timers are the :class:`~acp_adapter.clock.Clock`'s).
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from acp.helpers import SessionUpdate

from acp_adapter.clock import Clock, Timer
from acp_adapter.protocol.cards import TERMINAL
from acp_adapter.protocol.meta import read_meta
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_failed,
    build_thinking_progress,
    build_thinking_start,
)

if TYPE_CHECKING:
    from acp_adapter.summary import Outcome, ProgressSummary, SummaryEvent, SummaryFactory

log = logging.getLogger("acp_progress.foreign")

#: What the watcher posts: ``(session id, update)``, delivered by the transport in call order.
Post = Callable[[str, SessionUpdate], None]

_LIVE = frozenset({"pending", "in_progress"})
#: Float rounding between "when the timer was due" and "when the silence ends" (5.0 + 0.3 against
#: 5.3 - 5.0): without it a timer could re-arm itself for 1e-16 s forever on a manual clock.
_CLOCK_SLACK = 1e-9


@dataclass(frozen=True)
class ProgressOptions:
    """``think_after`` None disables injection; ``heartbeat`` None disables heartbeats;
    ``summary`` (None: off) makes a progress summary per prompt for the injected card."""

    think_after: float | None = 0.5
    heartbeat: float | None = 30.0
    summary: SummaryFactory | None = None


class UpdateFacts(NamedTuple):
    """What the watcher needs to know of one agent update, read from JSON or from an SDK object."""

    kind: str | None
    tool_call_id: str | None = None
    tool_kind: str | None = None
    status: str | None = None


def facts_of_json(update: Any) -> UpdateFacts:
    """The facts of a ``params.update`` object as it came over the wire (a foreign agent's JSON)."""
    if not isinstance(update, dict):
        return UpdateFacts(None)
    values = (update.get(name) for name in ("sessionUpdate", "toolCallId", "kind", "status"))
    kind, tool_call_id, tool_kind, status = (value if isinstance(value, str) else None for value in values)
    return UpdateFacts(kind, tool_call_id, tool_kind, status)


def facts_of_model(update: Any) -> UpdateFacts:
    """The facts of an SDK update object (what an in-process agent hands its connection)."""
    return UpdateFacts(
        getattr(update, "session_update", None),
        getattr(update, "tool_call_id", None),
        getattr(update, "kind", None),
        getattr(update, "status", None),
    )


def shows_own_think_cards(initialize_result: Any) -> bool:
    """The agent says in its ``initialize`` answer that it shows its own think cards:
    ``_meta.acpProgress.thinkCards: true`` (this project's agent does). Takes the answer as JSON
    (the relay) or as the SDK's ``InitializeResponse`` (in process)."""
    if isinstance(initialize_result, dict):
        raw_meta = initialize_result.get("_meta")
    else:
        raw_meta = getattr(initialize_result, "field_meta", None)
    meta = read_meta(raw_meta)
    return meta is not None and meta.think_cards is True


@dataclass
class WatchedTurn:
    """One outstanding prompt, as the watcher tracks it."""

    key: str
    session_id: str
    last_activity: float
    card_id: str | None = None
    card_opened: float = 0.0
    waiting_on_editor: int = 0  # agent→client requests (permission, fs …) not answered yet
    cancelled: bool = False
    #: the agent's own cards of this turn that are still live: its spinner is showing, not ours
    own_live_cards: set[str] = field(default_factory=set)
    timer: Timer | None = field(default=None, repr=False)
    summary: ProgressSummary | None = field(default=None, repr=False)
    shown: SummaryEvent | None = None  # the latest summary, carried by the card's heartbeats


class ForeignAgentWatch:
    """The turns of one connection to a foreign agent, and the think cards added for them."""

    def __init__(
        self, options: ProgressOptions, post: Post, clock: Clock, *, card_prefix: str = "progress-think"
    ) -> None:
        self.options = options
        self._post = post
        self._time = clock
        self._turns: dict[str, WatchedTurn] = {}  # turn key → its turn
        self._current: dict[str, WatchedTurn] = {}  # session id → its latest turn (what updates concern)
        self._card_ids = (f"{card_prefix}-{n}" for n in itertools.count(1))
        #: the agent shows its own spinner everywhere (``_meta.acpProgress.thinkCards`` in initialize)
        self.agent_shows_think = False
        #: sessions in which the agent shows its own thinking: never a card of ours there
        self.own_think_sessions: set[str] = set()
        self.injected_updates = 0

    # ------------------------------------------------------------ what the person's side does

    def prompt_started(self, key: str, session_id: str, user_text: Callable[[], str]) -> None:
        """A prompt went to the agent; ``user_text`` is asked only when a summary needs it."""
        previous = self._current.get(session_id)
        if previous is not None:  # still awaiting its answer (cancelled): it keeps no card
            self._close_card(previous, "Cancelled" if previous.cancelled else None)
        turn = WatchedTurn(key, session_id, last_activity=self._time.now())
        self._turns[key] = turn
        self._current[session_id] = turn
        self._start_summary(turn, user_text)
        if self.options.think_after is not None and self._injects(session_id):
            self._schedule(turn, self.options.think_after)

    def cancel_requested(self, session_id: str) -> None:
        """The person cancelled: the card fails now and the turn gets no other."""
        turn = self._current.get(session_id)
        if turn is not None:
            turn.cancelled = True
            self._stop_summary(turn, "cancelled")
            self._close_card(turn, "Cancelled")

    def prompt_ended(self, key: str, failure: str | None = None) -> None:
        """The prompt's answer is about to reach the client (a no-op for a key that is no turn)."""
        turn = self._turns.pop(key, None)
        if turn is None:
            return
        if self._current.get(turn.session_id) is turn:
            del self._current[turn.session_id]
        self._stop_summary(turn, "cancelled" if turn.cancelled else "failed" if failure else "finished")
        self._close_card(turn, failure)

    def editor_answered(self, turn: WatchedTurn | None) -> None:
        """The client answered a request of the agent made during ``turn``: the silence clock restarts."""
        if turn is None:
            return
        turn.waiting_on_editor = max(0, turn.waiting_on_editor - 1)
        if self._live(turn):
            self._activity(turn)

    # ------------------------------------------------------------ what the agent does

    def agent_initialized(self, result: Any) -> None:
        """The agent's ``initialize`` answer (JSON or SDK object) went by."""
        if shows_own_think_cards(result) and not self.agent_shows_think:
            self.agent_shows_think = True
            log.info("the wrapped agent shows its own think cards: none injected")

    def agent_spoke(self, session_id: str | None, facts: UpdateFacts | None = None) -> WatchedTurn | None:
        """The agent sent something about ``session_id`` (``facts`` for a ``session/update``); call it
        *before* forwarding. Closes our card first and restarts the silence clock; returns the turn."""
        if session_id is None:
            return None
        turn = self._current.get(session_id)
        if facts is not None:
            self._note_own_progress(session_id, turn, facts)
        if turn is not None:
            self._activity(turn)
        return turn

    def agent_asked(self, session_id: str | None) -> WatchedTurn | None:
        """The agent sent a request about ``session_id`` and now waits for the person's client: no
        spinner until :meth:`editor_answered` (with the returned turn)."""
        turn = self.agent_spoke(session_id)
        if turn is not None:
            turn.waiting_on_editor += 1
        return turn

    def observe(self, session_id: str, update: Any) -> None:
        """Feed an update the client got (SDK object) to its turn's summary."""
        turn = self._current.get(session_id)
        if turn is not None and turn.summary is not None:
            turn.summary.observe(update)

    def summarising(self, session_id: str | None) -> bool:
        """Whether ``session_id``'s turn has a summary (the relay parses updates only then)."""
        turn = self._current.get(session_id) if session_id is not None else None
        return turn is not None and turn.summary is not None

    def _note_own_progress(self, session_id: str, turn: WatchedTurn | None, facts: UpdateFacts) -> None:
        kind = facts.kind
        thinks = kind == "agent_thought_chunk" or (kind == "tool_call" and facts.tool_kind == "think")
        if thinks and session_id not in self.own_think_sessions:
            log.info("the wrapped agent shows its own thinking in %s: none injected there", session_id)
            self.own_think_sessions.add(session_id)
        if turn is None or facts.tool_call_id is None or kind not in ("tool_call", "tool_call_update"):
            return
        status = facts.status
        if status in TERMINAL:
            turn.own_live_cards.discard(facts.tool_call_id)
        elif status in _LIVE or (kind == "tool_call" and status is None):  # a start without status is pending
            turn.own_live_cards.add(facts.tool_call_id)

    # ------------------------------------------------------------ endings and queries

    def running_sessions(self) -> list[str]:
        """Sessions with a prompt outstanding."""
        return list(self._current)

    def end_all(self, reason: str) -> None:
        """The agent is gone: every turn's card fails with ``reason``."""
        for key in list(self._turns):
            self.prompt_ended(key, reason)

    def stop_summaries(self) -> None:
        """The transport is ending: no turn's summary may write anything more."""
        for turn in self._turns.values():
            self._stop_summary(turn, "cancelled")

    def turns(self) -> Iterable[WatchedTurn]:
        return tuple(self._turns.values())

    # ------------------------------------------------------------ the card we add

    def _inject(self, turn: WatchedTurn, update: SessionUpdate) -> None:
        self.injected_updates += 1
        self._post(turn.session_id, update)
        if turn.summary is not None:
            turn.summary.observe(update)  # the summary sees what the client sees, our card included

    def _live(self, turn: WatchedTurn) -> bool:
        """The turn is still outstanding and the newest of its session (only it gets a card)."""
        return self._turns.get(turn.key) is turn and self._current.get(turn.session_id) is turn

    def _injects(self, session_id: str) -> bool:
        """Whether we may show a think card in ``session_id``: injection is on, and the agent has not
        shown (or promised) thinking of its own — two spinners for one thought is noise."""
        return (
            self.options.think_after is not None
            and not self.agent_shows_think
            and session_id not in self.own_think_sessions
        )

    def _schedule(self, turn: WatchedTurn, delay: float) -> None:
        if turn.timer is not None:
            turn.timer.cancel()
        turn.timer = self._time.call_later(max(0.0, delay), functools.partial(self._on_timer, turn))

    def _heartbeat(self, turn: WatchedTurn, card_id: str) -> SessionUpdate:
        elapsed = self._time.now() - turn.card_opened
        shown = turn.shown
        if shown is None:
            return build_thinking_progress(card_id, elapsed)
        return build_thinking_progress(
            card_id, elapsed, summary=shown.summary, summary_revision=shown.revision
        )

    def _on_timer(self, turn: WatchedTurn) -> None:
        """One timer per turn: it opens the card after a silent gap, then beats while it is open."""
        turn.timer = None
        think_after = self.options.think_after
        if think_after is None or not self._live(turn) or turn.cancelled:
            return
        if not self._injects(turn.session_id):
            return
        now = self._time.now()
        if turn.card_id is None:
            if turn.waiting_on_editor or turn.own_live_cards:
                return  # the person is asked, or the agent's own card spins: re-armed by the next activity
            due = turn.last_activity + think_after
            if now + _CLOCK_SLACK < due:  # the agent spoke since this timer was set: wait out the rest
                self._schedule(turn, due - now)
                return
            turn.card_id = next(self._card_ids)
            # the model has been thinking since the agent went quiet, not since the card appeared
            turn.card_opened = turn.last_activity
            self._inject(turn, build_thinking_start(turn.card_id))
        else:
            self._inject(turn, self._heartbeat(turn, turn.card_id))
        if self.options.heartbeat is not None:
            self._schedule(turn, self.options.heartbeat)

    def _close_card(self, turn: WatchedTurn, failure: str | None = None) -> None:
        if turn.timer is not None:
            turn.timer.cancel()
            turn.timer = None
        if turn.card_id is None:
            return
        elapsed = self._time.now() - turn.card_opened
        card_id, turn.card_id = turn.card_id, None
        if failure is None:
            self._inject(turn, build_thinking_complete(card_id, elapsed))
        else:
            self._inject(turn, build_thinking_failed(card_id, failure, elapsed))

    def _activity(self, turn: WatchedTurn) -> None:
        """The agent spoke about this turn's session: close our card first, restart the silence clock.

        A think timer already armed is kept: when it fires it finds the silence shorter than
        ``think_after`` and re-arms for the rest, so an agent streaming hundreds of updates a second
        costs one timer per ``think_after``, not one per update."""
        if turn.card_id is not None:
            self._close_card(turn)  # cancels its heartbeat timer too
        turn.last_activity = self._time.now()
        if (
            turn.timer is None
            and not turn.cancelled
            and self.options.think_after is not None
            and self._injects(turn.session_id)
        ):
            self._schedule(turn, self.options.think_after)

    # ------------------------------------------------------------ progress summaries

    def _start_summary(self, turn: WatchedTurn, user_text: Callable[[], str]) -> None:
        if self.options.summary is None or self.options.think_after is None:
            return  # off, or no card will ever show it

        def show(event: SummaryEvent) -> None:
            if not self._live(turn) or turn.cancelled:
                return
            turn.shown = event
            if turn.card_id is not None:  # the open card shows it now, not a heartbeat later
                self._inject(turn, self._heartbeat(turn, turn.card_id))

        turn.summary = self.options.summary.create(user_text=user_text(), on_summary=show).start()

    def _stop_summary(self, turn: WatchedTurn, outcome: Outcome) -> None:
        summary, turn.summary = turn.summary, None
        if summary is not None:
            summary.stop(outcome)
