"""What the endpoint tells about its threads outside a run: the listing and a thread's history."""

from __future__ import annotations

from typing import Any, Final

from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.history import bounded, history_messages
from acp_adapter.frontends.agui.host import AgentHost
from acp_adapter.frontends.agui.policy import RedactPolicy
from acp_adapter.frontends.agui.thread_store import ThreadSessions
from acp_adapter.frontends.agui.threads import ThreadRegistry
from acp_adapter.safety.redact import redact_text, redact_value

#: Seconds a history read waits for its thread's cancelled run to end (then it reads what is stored).
HISTORY_WAIT_S: Final = 5.0


class ThreadReader:
    """Reads the stored threads, and the runs holding them now, for ``GET /threads`` and
    ``GET /threads/{id}``; the stored conversation passes the redaction ``policy`` of live runs."""

    def __init__(
        self, threads: ThreadRegistry, thread_sessions: ThreadSessions, host: AgentHost, policy: RedactPolicy
    ) -> None:
        self._threads = threads
        self._thread_sessions = thread_sessions
        self._host = host
        self._policy = policy

    async def listing(self) -> list[dict[str, Any]]:
        """This endpoint's threads (the stored ones, most recent first), each with whether a run
        holds it now (``running``) or waits on a question (``paused``, with the ``interrupt``)."""
        rows = await self._thread_sessions.listing()
        for row in rows:
            slot = self._threads.get(row["threadId"])
            active = slot.active if slot is not None else None
            row["running"] = active is not None
            paused = active.paused if isinstance(active, ActiveRun) else None
            row["paused"] = paused is not None
            if paused is not None:  # a page reloaded while asked can ask again
                row["interrupt"] = paused.interrupt().model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
        return rows

    async def history(self, thread_id: str) -> dict[str, Any] | None:
        """``thread_id``'s earlier conversation as AG-UI messages, bounded (:mod:`.history`), or
        ``None`` when this endpoint has no such thread.

        Read once what this endpoint's agent answered is on disk: a run of the thread being
        cancelled (its client left — the page's Stop) ends first, then the agent finishes its
        queued store writes (:meth:`~.host.AgentHost.flush_store`). Why here and not before
        ``RUN_FINISHED``: the agent already waits for a turn's write before it answers, but only
        so long (a slow store must not hold every answer) and not for a cancelled turn (a stop
        answers at once); a history read is rare, so it is the one that waits. Both bounded."""
        slot = self._threads.get(thread_id)
        active = slot.active if slot is not None else None
        if active is not None and active.abandoned:
            await active.wait_done(HISTORY_WAIT_S)
        await self._host.flush_store()
        updates = await self._thread_sessions.conversation(thread_id)
        if updates is None:
            return None
        messages, state = history_messages(updates, self._policy)
        kept, omitted = bounded(messages)
        answer: dict[str, Any] = {
            "threadId": redact_text(thread_id),
            "messages": kept,
            "truncated": omitted > 0,
            "omitted": omitted,
        }
        if state is not None:
            answer["state"] = redact_value(state)
        return answer
