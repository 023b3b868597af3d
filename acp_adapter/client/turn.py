"""One prompt's turn as the client side sees it: its session updates, in order, then its answer.

Why a module of its own: a turn is what every front-end consumes (``async for update in turn``),
with its own rules — the prompt is sent at once, updates queue up to a bound and then hold the
driver's reading back, a refused prompt or a dying agent ends the iteration with the error that
says so — apart from how the driver starts, reads and stops the agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from acp import RequestError
from acp.helpers import SessionUpdate
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
)

from acp_adapter.client.agent_errors import AgentCrashed, PromptRefused
from acp_adapter.protocol import StreamLimits

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


class TurnHost(Protocol):
    """What a turn needs of whoever started it (:class:`~acp_adapter.client.turn_router.TurnRouter`,
    the driver's turns): the connection to prompt on, the queue bound, and the calls that hold
    back, release or end its reading — so this module depends on no driver, and the driver
    imports it one way."""

    @property
    def limits(self) -> StreamLimits: ...

    @property
    def connection(self) -> Any: ...

    def update_room(self) -> None: ...

    def turn_ended(self, turn: Turn) -> None: ...

    async def crash_error(self, exc: BaseException) -> AgentCrashed: ...

    async def cancel(self, session_id: str) -> None: ...


@dataclass(frozen=True)
class _End:
    response: PromptResponse | None
    error: BaseException | None


class Turn:
    """One prompt's session updates, in order, then its :class:`PromptResponse`.

    Iterate it (``async for update in turn``) or ``await turn.wait()``. The prompt request is sent
    when the turn is created, so updates queue up even before the caller starts iterating — up to
    ``max_queued_updates``: then the driver stops reading the agent's stdout until the consumer
    catches up (the agent's writes then block in the pipe), so a slow consumer bounds memory instead
    of growing a queue. Permission answers are written, never read, so they are not held up.
    """

    def __init__(self, driver: TurnHost, session_id: str) -> None:
        self.session_id = session_id
        self.response: PromptResponse | None = None
        self._driver = driver
        self._queue: asyncio.Queue[SessionUpdate | _End] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        #: set once the prompt request is on its way, so a cancel can never overtake it on the wire
        self._sent = asyncio.Event()

    def _feed(self, update: SessionUpdate) -> None:
        self._queue.put_nowait(update)  # never blocks: the driver stops reading while it is full
        if self._queue.qsize() >= self._driver.limits.max_queued_updates:
            self._driver.update_room()

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    @property
    def full(self) -> bool:
        """Holding as many unconsumed updates as the driver lets a turn hold."""
        return not self._finished and self._queue.qsize() >= self._driver.limits.max_queued_updates

    def _start(self, blocks: list[PromptBlock]) -> None:
        self._task = asyncio.create_task(self._run(blocks), name=f"acp-prompt-{self.session_id}")

    async def _run(self, blocks: list[PromptBlock]) -> None:
        response: PromptResponse | None = None
        error: BaseException | None = None
        try:
            request = self._driver.connection.prompt(session_id=self.session_id, prompt=blocks)
            self._sent.set()  # the request is written in this same step (the send lock is FIFO)
            response = await request
        except asyncio.CancelledError:
            error = AgentCrashed("the prompt was abandoned because the driver closed")
        except RequestError as exc:
            error = PromptRefused(exc)
        except Exception as exc:
            error = await self._driver.crash_error(exc)
        finally:
            self._driver.turn_ended(self)
            self._queue.put_nowait(_End(response, error))

    @property
    def done(self) -> bool:
        return self._finished

    async def __aiter__(self) -> AsyncIterator[SessionUpdate]:
        while not self._finished:
            item = await self._queue.get()
            self._driver.update_room()
            if isinstance(item, _End):
                self._finished = True
                if item.error is not None:
                    raise item.error
                self.response = item.response
                return
            yield item

    async def wait(self) -> PromptResponse:
        """Consume the remaining updates and return the prompt response."""
        async for _ in self:
            pass
        if self.response is None:  # iterated to the end before: the response is already known
            raise AgentCrashed("the turn ended without a prompt response")
        return self.response

    async def cancel(self) -> None:
        await self._driver.cancel(self.session_id)
