"""A command's terminal in its card, for clients that run no terminal themselves.

Why: an editor without the ``terminal`` capability can still render a terminal from the card when
it says so (``clientCapabilities._meta.terminal_output: true``, as Zed does): the agent runs the
command itself and puts it on the card the way claude-agent-acp and codex-acp do — terminal content
whose id is the card's, and in the card's ``_meta``:

- ``terminal_info`` ``{terminal_id, cwd}`` when the command starts,
- ``terminal_output`` ``{terminal_id, data}`` with each piece of new output (only what is new),
- ``terminal_exit`` ``{terminal_id, exit_code, signal}`` when it ends.

Output is data like every tool output: redacted as a stream (a secret split across two pieces is
still caught) and bounded (:data:`MAX_SHOWN_BYTES` in all, then one note).
"""

from __future__ import annotations

from typing import Any

from acp import tool_terminal_ref, update_tool_call

from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.safety.redact import redact_text

__all__ = ["MAX_SHOWN_BYTES", "CardTerminalStream", "renders_card_terminals"]

#: the most output one command shows on its card (the tool's own result is capped the same way)
MAX_SHOWN_BYTES = 64 * 1024
#: what the card shows once that is reached
CUT_NOTE = "\n… (output cut: the rest is not shown here)\n"


def renders_card_terminals(capabilities: Any) -> bool:
    """The client renders a terminal from a card's ``_meta`` and runs none of its own."""
    meta = getattr(capabilities, "field_meta", None)
    return (
        isinstance(meta, dict)
        and meta.get("terminal_output") is True
        and getattr(capabilities, "terminal", False) is not True
    )


class CardTerminalStream:
    """One command's terminal on card ``card_id`` (a
    :class:`~acp_adapter.tooling.host.CardTerminal`): updates go through the session stream, so
    nothing lands after the card's terminal update or the turn's end."""

    def __init__(self, stream: SessionStream, card_id: str) -> None:
        self._stream = stream
        self._card_id = card_id
        self.terminal_id = card_id
        # imported with the first card terminal: start-up compiles no redaction pattern
        from acp_adapter.safety.redact.stream import StreamRedactor

        self._redactor = StreamRedactor()
        self._shown = 0
        self._cut = False

    def _send(self, key: str, fields: dict[str, Any], content: list[Any] | None = None) -> None:
        meta = {key: {"terminal_id": self._card_id, **fields}}
        update = update_tool_call(self._card_id, content=content)
        self._stream.tool_update(self._card_id, update.model_copy(update={"field_meta": meta}))

    def started(self, cwd: str) -> None:
        self._send("terminal_info", {"cwd": redact_text(cwd)}, content=[tool_terminal_ref(self._card_id)])

    def output(self, data: str) -> None:
        self._show(self._redactor.feed(data))

    def _show(self, safe: str) -> None:
        if not safe or self._cut:
            return
        size = len(safe.encode("utf-8", "surrogatepass"))
        if self._shown + size > MAX_SHOWN_BYTES:
            room = MAX_SHOWN_BYTES - self._shown
            safe = safe.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore") + CUT_NOTE
            self._cut = True
        self._shown += size
        self._send("terminal_output", {"data": safe})

    def exited(self, exit_code: int | None, signal: str | None) -> None:
        self._show(self._redactor.flush())
        self._send("terminal_exit", {"exit_code": exit_code, "signal": signal})
