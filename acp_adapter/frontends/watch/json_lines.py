"""``--json`` for ``watch`` and ``chat``: one JSON object per line on stdout, for programs.

Each object is what the client received, serialised by the SDK's own schema models (never built by
hand): a session update is the ``session/update`` notification's params (``{"sessionId", "update"}``),
a replayed one (``session/load``) the same under ``"replay"``, a permission request the
``session/request_permission`` params under ``"permissionRequest"``, its answer the response under
``"permissionResponse"`` (with the ``toolCallId`` it answers), and every turn ends with exactly one
line: the ``session/prompt`` response (``{"stopReason": …, "_meta": …}``) or ``{"error": …}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO

from acp.schema import (
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
)

from acp_adapter.client.driver import PermissionRequest
from acp_adapter.frontends.watch.render import CardBoard
from acp_adapter.safety.terminal_text import json_line_safe, terminal_safe


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class JsonLines:
    """Writes the objects, one per line, flushed at once (a reader sees each as it happens)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.closed = False

    def write(self, obj: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            # the same JSON value, with every character a terminal would obey escaped (\u009b)
            self.out.write(json_line_safe(json.dumps(obj, ensure_ascii=False, allow_nan=False)) + "\n")
            self.out.flush()
        except BrokenPipeError:  # `… | head`: stop writing, let the turn end quietly
            self.closed = True

    def update(self, session_id: str, update: Any, *, replay: bool = False) -> None:
        note = _dump(SessionNotification(session_id=session_id, update=update))
        self.write({"replay": note} if replay else note)

    def permission_request(self, request: PermissionRequest) -> None:
        params = RequestPermissionRequest(
            session_id=request.session_id, tool_call=request.tool_call, options=request.options
        )
        self.write({"permissionRequest": _dump(params)})

    def permission_response(self, request: PermissionRequest, response: RequestPermissionResponse) -> None:
        self.write(
            {
                "permissionResponse": {
                    "sessionId": request.session_id,
                    "toolCallId": request.tool_call.tool_call_id,
                    **_dump(response),
                }
            }
        )

    def end(self, response: PromptResponse) -> None:
        self.write(_dump(response))

    def error(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        error: dict[str, Any] = {"message": message}
        if code is not None:
            error["code"] = code
        if data is not None:
            error["data"] = _json_safe(data)
        self.write({"error": error})


def _json_safe(value: Any) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value


class JsonView:
    """The :class:`~acp_adapter.frontends.watch.view.CardRenderer` of ``--json``: every update becomes a
    line; cards are still folded (the front-end judges the turn from them); nothing else is drawn.
    A permission question (only on a terminal) is asked on stderr, so stdout stays JSON."""

    def __init__(self, lines: JsonLines, *, stdin: TextIO | None = None, interrupt: Any = None) -> None:
        self.lines = lines
        self.board = CardBoard()
        self.session_id = ""
        self._stdin = stdin if stdin is not None else sys.stdin
        self._interrupt = interrupt

    @property
    def output_closed(self) -> bool:
        return self.lines.closed

    def apply(self, update: Any) -> None:
        self.board.apply(update, asyncio.get_event_loop().time())
        self.lines.update(self.session_id, update)

    def show_summary(self, text: str, revision: int) -> None:
        self.lines.write({"summary": {"text": " ".join(text.split()), "revision": revision}})

    def note(self, text: str) -> None:
        return  # notes are for people; the JSON carries the same facts as objects

    async def ask(self, question: str) -> bool:
        answer = await self.ask_line(question)
        return answer is not None and answer.strip().lower() in ("y", "yes")

    async def ask_line(self, question: str) -> str | None:
        from acp_adapter.frontends.watch.view import read_answer

        sys.stderr.write(terminal_safe(question))
        sys.stderr.flush()
        return await read_answer(self._stdin, self._interrupt)

    def tick(self) -> None:
        return

    def finish(self, stop_reason: str) -> None:
        return

    def fail(self, reason: str, details: str | None) -> None:
        return

    def close(self) -> None:
        return
