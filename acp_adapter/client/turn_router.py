"""Where the agent's session updates go, and how fast the driver reads them.

Why a module of its own: a session update belongs to exactly one place — the replay of a session
being loaded, the session's running :class:`~.turn.Turn`, or the front-end's stray-update
callback — and the turns' queues decide when the driver stops reading the agent's stdout (a slow
consumer bounds memory: the agent's writes then block in the pipe). Starting, cancelling and
ending a session's turn keep that registry in one hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from acp import RequestError, text_block
from acp.helpers import SessionUpdate

from acp_adapter.client.agent_errors import AgentCrashed, TurnInProgress
from acp_adapter.client.agent_link import AgentLink
from acp_adapter.client.turn import PromptBlock, Turn
from acp_adapter.protocol import StreamLimits

log = logging.getLogger("acp_progress.client")

#: Messages the driver reads at most before it lets their delivery tasks run (see ``wait_for_room``).
SETTLE_EVERY = 64


class TurnRouter:
    """The running turns and session replays of one agent :class:`~.agent_link.AgentLink`; the
    :class:`~.turn.TurnHost` of every turn it starts."""

    def __init__(
        self,
        link: AgentLink,
        limits: StreamLimits,
        on_stray_update: Callable[[str, SessionUpdate], None] | None = None,
    ) -> None:
        self._link = link
        #: the stream limits (the queue bound of a turn among them)
        self.limits = limits
        self.on_stray_update = on_stray_update
        self._turns: dict[str, Turn] = {}
        #: sessions being loaded: their replayed updates go to the loader's callback
        self._replaying: dict[str, Callable[[SessionUpdate], None]] = {}
        self._room = asyncio.Event()
        self._room.set()
        self._unsettled = 0  # messages read since the transport last let their tasks run

    @property
    def connection(self) -> Any:
        return self._link.connection

    async def crash_error(self, exc: BaseException) -> AgentCrashed:
        return await self._link.crash_error(exc)

    # ------------------------------------------------------------ turns

    def prompt(self, session_id: str, prompt: str | Sequence[PromptBlock]) -> Turn:
        """Send a prompt now; the returned :class:`Turn` yields its updates."""
        if session_id in self._turns:
            raise TurnInProgress(f"session {session_id} already has a prompt running")
        blocks: list[PromptBlock] = [text_block(prompt)] if isinstance(prompt, str) else list(prompt)
        turn = Turn(self, session_id)
        self._turns[session_id] = turn
        turn._start(blocks)
        return turn

    async def cancel(self, session_id: str) -> None:
        """Ask the agent to cancel the session's running turn (``session/cancel``), never before
        the turn's prompt is on the wire."""
        turn = self._turns.get(session_id)
        if turn is not None:
            await turn._sent.wait()
        with contextlib.suppress(ConnectionError, RequestError):
            await self.connection.cancel(session_id=session_id)

    def turn_ended(self, turn: Turn) -> None:
        if self._turns.get(turn.session_id) is turn:
            del self._turns[turn.session_id]
        self.update_room()

    def abandon(self) -> None:
        """The driver closes: every running turn ends (its iteration raises)."""
        for turn in list(self._turns.values()):
            if turn._task is not None:
                turn._task.cancel()

    # ------------------------------------------------------------ updates

    @contextlib.contextmanager
    def replaying(self, session_id: str, on_replay: Callable[[SessionUpdate], None]) -> Iterator[None]:
        """While a session loads, its updates (the agent's replay) go to ``on_replay``."""
        self._replaying[session_id] = on_replay
        try:
            yield
        finally:
            self._replaying.pop(session_id, None)

    def dispatch(self, session_id: str, update: SessionUpdate) -> None:
        """One update from the agent: to the session's replay, else its turn, else the stray callback."""
        replay = self._replaying.get(session_id)
        if replay is not None:
            replay(update)
            return
        turn = self._turns.get(session_id)
        if turn is not None:
            turn._feed(update)
        elif self.on_stray_update is not None:
            self.on_stray_update(session_id, update)
        else:
            log.debug("session update outside a turn for %s: %s", session_id, type(update).__name__)

    # ------------------------------------------------------------ flow control

    async def wait_for_room(self) -> None:
        """Before the transport reads the next message: let the updates already read reach their
        turns (the SDK delivers each in a task of its own), then wait while a turn is full.

        Yielding to the loop before every message would cost a loop iteration per update (a burst
        ran at two thirds of its speed), so the router yields only once the messages read since
        the last yield could fill the fullest turn, and at least every :data:`SETTLE_EVERY`."""
        self._unsettled += 1
        fullest = max((turn.queued for turn in self._turns.values()), default=0)
        if self._unsettled >= min(SETTLE_EVERY, self.limits.max_queued_updates - fullest):
            self._unsettled = 0
            await asyncio.sleep(0)
        await self._room.wait()

    def update_room(self) -> None:
        """Let the transport read the agent's stdout again once no live turn is full."""
        if any(turn.full for turn in self._turns.values()):
            self._room.clear()
        else:
            self._room.set()
