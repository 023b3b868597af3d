"""The driver's transport: JSON-RPC messages over the agent's stdin and stdout, read through the
package's one line reader.

Why a module of its own (and not the SDK's byte-stream helper): an agent that is not an ACP agent
(``cat``, ``python -c 'print(123)'``) or that prints garbage on stdout must produce a clear one-line
error, not a traceback from the SDK's receive loop. The transport parses each line once, hands only
JSON objects to the SDK connection and keeps a sample of what it skipped for the error message.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import RequestError

from acp_adapter.client.agent_notifications import NotificationCheck
from acp_adapter.protocol import JsonRpcStream, Refused, StreamLimits, error_answer, sniff_response_id
from acp_adapter.safety.redact import redact_text

log = logging.getLogger("acp_progress.client")

#: The message of the error a request gets when its answer came in a line the reader refused.
REFUSED_ANSWER = "the agent's answer was refused by the line reader"


class AgentTransport(JsonRpcStream):
    """JSON-RPC messages over the agent's stdin/stdout through the package's one line reader.

    Lines the reader refuses (not JSON, not an object, too long, too deep, not strict JSON) are
    skipped with a warning and remembered: they explain a failed initialize. They are not answered:
    an agent that writes garbage on stdout is not listening for our opinion of it. A refused line
    that plainly starts as the answer to one of our requests (``{"jsonrpc":"2.0","id":7,"result":…``
    with a ``NaN`` or 300 levels of nesting further on) fails that request with an error that says
    why; otherwise the prompt would wait forever for an answer that already came and was refused.
    A notification the ACP schema refuses is dropped here and counted (:class:`NotificationCheck`),
    before the SDK would log a traceback for each.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        limits: StreamLimits,
        gate: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self.skipped: collections.deque[str] = collections.deque(maxlen=3)
        self.notifications = NotificationCheck()
        super().__init__(
            process.stdout, process.stdin, limits, answer_refusals=False, on_refusal=self._skip, gate=gate
        )

    def _skip(self, refused: Refused) -> dict[str, Any] | None:
        sample = redact_text(refused.head[:200].decode(errors="replace").strip())
        self.skipped.append(sample)
        log.warning(
            "the agent wrote a line that is not a JSON-RPC message on stdout (%s): %s", refused.reason, sample
        )
        answered = sniff_response_id(refused.head)
        if answered is None:
            return None
        reason = redact_text(refused.reason)
        return error_answer(RequestError(-32603, REFUSED_ANSWER, {"details": reason}), answered)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            message = await super().receive()
            if message is None or self.notifications.admit(message):
                return message

    async def close(self) -> None:
        self.notifications.flush()
        with contextlib.suppress(Exception):
            self._stdin.close()
