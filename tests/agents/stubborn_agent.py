"""A test agent whose model ignores its cancel signal for 30 s (CPU-bound work would, too).

Run exactly as ``acp-progress serve`` runs the agent (``serve`` then ``exit_if_turns_stuck``), so
a test can hang up mid-turn and time how long the process takes to go away.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence

import anyio

from acp_adapter.cancel import CancelToken
from acp_adapter.config import Settings
from acp_adapter.models.base import Message, ModelEvent, TextDelta, ToolSpec
from acp_adapter.server import exit_if_turns_stuck, serve
from run_agent import AIAgent


class StubbornModel:
    name = "stubborn"

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]:
        time.sleep(30)  # deaf to ``cancel``
        yield TextDelta("done")


if __name__ == "__main__":
    served = anyio.run(
        functools.partial(serve, Settings.from_env(), StubbornModel(), turn_runner=AIAgent), backend="asyncio"
    )
    exit_if_turns_stuck(served)
