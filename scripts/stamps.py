"""The client side of the throughput and latency benchmarks: it counts updates and times stamped ones.

An agent under test stamps some tool-call updates with its ``time.monotonic()`` in ``raw_output``
(``{"t": …}``); CLOCK_MONOTONIC is one clock for every process of the machine, so the client
subtracting the stamp on arrival measures the whole path from the agent's send to the client's
handler, whatever processes sit between.
"""

from __future__ import annotations

import time
from typing import Any

from acp.schema import ToolCallProgress


class Stamps:
    """Counts every update and keeps the latency of each stamped one."""

    def __init__(self) -> None:
        self.count = 0
        self.latencies: list[float] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.count += 1
        if isinstance(update, ToolCallProgress) and isinstance(update.raw_output, dict):
            stamp = update.raw_output.get("t")
            if isinstance(stamp, float):
                self.latencies.append(time.monotonic() - stamp)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmarked agents ask no question")
