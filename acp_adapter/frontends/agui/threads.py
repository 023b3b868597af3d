"""AG-UI threads: one ACP session per ``threadId``, and one run per thread at a time.

ACP allows one prompt per session at a time, and a thread's runs share its session (the agent holds
the conversation), so a second run on a busy thread is refused with :class:`ThreadBusy` (HTTP 409)
instead of queued: the client that sent it learns at once, and nothing waits unbounded.

One exception: a run whose client disconnected is being cancelled, not served. A new run on that
thread waits (bounded) for the cancelled turn to wind down, so "close the tab, ask again" works.

The registry forgets the least recently used idle threads beyond ``max_threads``; the agent frees
idle sessions on its own schedule, so a long-lived endpoint holds neither without bound.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass
from typing import Final, Protocol

from acp_adapter.errors import AcpProgressError

log = logging.getLogger("acp_progress.agui.threads")

MAX_THREADS: Final = 10_000


class ThreadBusy(AcpProgressError):
    """The thread already has a run being served; ``str(exc)`` is the client-facing message."""


class Claimant(Protocol):
    """What the registry needs to know about the run holding a thread."""

    @property
    def run_id(self) -> str: ...

    @property
    def abandoned(self) -> bool:
        """The run's client went away and its ACP turn is being cancelled."""
        ...

    async def wait_done(self, within: float) -> bool:
        """Wait for the run to end; ``False`` on timeout."""
        ...


@dataclass
class ThreadSlot:
    """One thread: its ACP session (in the agent process of ``generation``) and the run holding it."""

    thread_id: str
    session_id: str | None = None
    generation: int = -1
    active: Claimant | None = None
    #: the agent refused the thread's session: open a new one rather than load the stored one
    refused: bool = False


class ThreadRegistry:
    """Thread id → :class:`ThreadSlot`, with the one-run-per-thread rule. Event-loop only."""

    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self.max_threads = max_threads
        self._slots: collections.OrderedDict[str, ThreadSlot] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._slots)

    def get(self, thread_id: str) -> ThreadSlot | None:
        return self._slots.get(thread_id)

    @property
    def active_runs(self) -> int:
        return sum(slot.active is not None for slot in self._slots.values())

    async def claim(self, thread_id: str, run: Claimant, *, wait_abandoned: float) -> ThreadSlot:
        """Hand ``run`` the thread's slot, or raise :class:`ThreadBusy`.

        Check and claim happen without an await in between, so two requests racing for an idle
        thread cannot both win.
        """
        while True:
            slot = self._slots.get(thread_id)
            if slot is None:
                slot = self._slots[thread_id] = ThreadSlot(thread_id)
            current = slot.active
            if current is None:
                slot.active = run
                self._slots.move_to_end(thread_id)
                self._evict()
                return slot
            if not current.abandoned:
                raise ThreadBusy(
                    f"thread {thread_id!r} already has a run in progress (runId {current.run_id!r}); "
                    "a thread serves one run at a time: wait for RUN_FINISHED, or disconnect to cancel it"
                )
            log.info("thread %s: waiting for the cancelled run %s to end", thread_id, current.run_id)
            if not await current.wait_done(wait_abandoned):
                raise ThreadBusy(
                    f"thread {thread_id!r}: the previous run {current.run_id!r} is still being "
                    f"cancelled after {wait_abandoned:g}s; try again later"
                )

    def release(self, slot: ThreadSlot, run: Claimant) -> None:
        if slot.active is run:
            slot.active = None

    def forget_session(self, slot: ThreadSlot) -> None:
        slot.session_id = None
        slot.generation = -1
        slot.refused = True

    def _evict(self) -> None:
        excess = len(self._slots) - self.max_threads
        if excess <= 0:
            return
        for thread_id in [tid for tid, slot in self._slots.items() if slot.active is None][:excess]:
            del self._slots[thread_id]
