"""The plain-terminal printer: the last channel of the routing order, for runs with no ACP client.

It writes to stdout only when no ACP client is attached; once the ACP server has taken stdout for
the protocol (:mod:`acp_adapter.protocol.stdio`) the printer falls back to stderr, so even a
mis-wired agent cannot corrupt the JSON-RPC stream.

On a terminal it draws one live line through ``rich`` (:mod:`acp_adapter.frontends._render`: the
same spinner, progress bar and in-place redraw as ``acp-progress watch``); on a pipe it writes one
plain line per event, with no escape codes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from acp.schema import PlanEntry, UsageUpdate

from acp_adapter.agent.heartbeat import HeartbeatHandle, Heartbeats, default_scheduler
from acp_adapter.frontends._render import (
    SPINNER_INTERVAL,
    clear_line,
    live_line,
    progress_bar,
    spinner_frame,
)
from acp_adapter.frontends._updates import Diff, diff_lines, plan_plain, usage_line
from acp_adapter.protocol.stdio import protocol_attached
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.redact.stream import StreamRedactor
from acp_adapter.safety.terminal_text import terminal_safe
from acp_adapter.text import THINKING_TITLE, format_elapsed, still_thinking


class TerminalPrinter:
    """A live one-line spinner plus streamed answer text for a plain terminal."""

    def __init__(
        self,
        out: TextIO | None = None,
        *,
        animate: bool | None = None,
        scheduler: Heartbeats | None = None,
        frame_interval: float | None = None,
    ) -> None:
        self._out = out
        self._animate = animate
        self._scheduler = scheduler
        #: seconds between spinner frames (rich's own pace for its ``dots`` spinner by default)
        self._frame_interval = frame_interval if frame_interval is not None else SPINNER_INTERVAL
        self._lock = threading.Lock()
        self._spinner: HeartbeatHandle | None = None
        self._label = ""
        self._started = 0.0
        self._frame = 0
        self._detail = ""
        self._line_shown = False
        self._answer_text = StreamRedactor()
        self._plan: list[PlanEntry] | None = None
        self._thought = ""
        self.closed = False

    @property
    def out(self) -> TextIO:
        if self._out is not None:
            return self._out
        return sys.stderr if protocol_attached() else sys.stdout

    def _tty(self) -> bool:
        if self._animate is not None:
            return self._animate
        isatty = getattr(self.out, "isatty", None)
        return bool(isatty and isatty())

    def _write(self, text: str, *, drawn: bool = False) -> None:
        """Write ``text`` — data, made :func:`terminal_safe` (and redacted) here, unless ``drawn``:
        a line already made by :func:`live_line` / :func:`clear_line`, whose escapes are ours and
        whose data was made safe there."""
        if self.closed:
            return
        try:
            self.out.write(text if drawn else terminal_safe(redact_text(text)))
            self.out.flush()
        except BrokenPipeError:
            # `acp-progress run … | head`: the reader is gone; stop writing (no warning per line),
            # and point stdout at /dev/null so the interpreter's exit flush stays quiet too
            self.closed = True
            _silence(self.out)

    def _draw(self) -> None:
        elapsed = format_elapsed(time.monotonic() - self._started)
        extra = f" — {self._detail}" if self._detail else ""
        # one terminal line, cropped by cells (one short of the width, so the cursor never wraps)
        width = shutil.get_terminal_size((80, 24)).columns - 1
        line = f"{spinner_frame(self._frame)} {redact_text(self._label)} {elapsed}{extra}"
        self._write(live_line(line, width), drawn=True)
        self._line_shown = True

    def _tick(self) -> None:
        with self._lock:
            if self._spinner is None:
                return
            self._frame += 1
            self._draw()

    def _release_answer_locked(self) -> None:
        """Write answer text held back for redaction (before anything else is drawn)."""
        if rest := self._answer_text.flush():
            self._write(rest)

    def spinner_start(self, label: str = THINKING_TITLE) -> None:
        with self._lock:
            self._release_answer_locked()
            self._label = label
            self._detail = ""
            self._started = time.monotonic()
            self._frame = 0
            if self._tty():
                self._draw()
                self._spinner = (self._scheduler or default_scheduler()).every(
                    self._frame_interval, self._tick
                )
            else:
                self._write(f"{label}\n")

    def tool_start(self, title: str) -> None:
        """A tool began: a live line on a terminal, ``▶ title`` on a pipe."""
        if self._tty():
            self.spinner_start(title)
        else:
            with self._lock:
                self._release_answer_locked()
                self._label = title
                self._started = time.monotonic()
                self._write(f"▶ {title}\n")

    def tool_progress(self, value: float | None, total: float | None, message: str | None) -> None:
        """The running tool's progress: the live line's detail (bar, percentage, message), or one
        line per step on a pipe."""
        bar = ""
        if value is not None and total is not None and _number(value) and _number(total) and total > 0:
            bar = progress_bar(value, total)
        shown = " ".join(redact_text(message).split()) if message else ""
        if not shown and value is not None:
            shown = f"{value:g}/{total:g}" if total is not None else f"{value:g}"
        detail = f"{bar} {shown}".strip()
        with self._lock:
            if self._tty():
                self._detail = detail
                if self._spinner is not None:
                    self._draw()
            else:
                elapsed = format_elapsed(time.monotonic() - self._started)
                self._write(f"   … {self._label}: {detail} · {elapsed}\n")

    def spinner_heartbeat(self, elapsed: float, status: str | None = None) -> None:
        with self._lock:
            if self._tty():
                self._detail = status or ""  # kept, so every animation frame shows it
                if self._spinner is not None:
                    self._draw()
            else:
                self._write(f"{still_thinking(elapsed, status)}\n")

    def spinner_stop(self, error: str | None = None) -> None:
        handle = self._spinner
        self._spinner = None
        if handle is not None:
            handle.cancel()
        with self._lock:
            if self._line_shown:
                self._write(clear_line(), drawn=True)
                self._line_shown = False
            self._release_answer_locked()
            if error:
                self._write(f"✖ {error}\n")

    def answer(self, text: str) -> None:
        """Streamed answer text, through the same streamed redaction as the ACP path: a secret
        split across chunks is held back until it is whole, then redacted."""
        with self._lock:
            if safe := self._answer_text.feed(text):
                self._write(safe)

    def finish_answer(self) -> None:
        """End of the answer: release what was held back (redacted) and end the line."""
        with self._lock:
            self._release_answer_locked()
            self._write("\n")

    def note(self, text: str) -> None:
        with self._lock:
            self._release_answer_locked()
            self._write(text + "\n")

    def plan(self, steps: Sequence[Any]) -> None:
        """The model's plan (steps with ``content``, ``status``, ``priority``): the whole checklist the
        first time, then the entries that changed (the plain terminal has no region to redraw; each
        line is the entry's new state)."""
        entries = [PlanEntry(content=s.content, status=s.status, priority=s.priority) for s in steps]
        lines = plan_plain(entries, self._plan)
        self._plan = entries
        if lines:
            self.note("\n".join(lines))

    def diff(self, diff: Diff) -> None:
        """An edit's unified diff under its card (green additions and red removals on a terminal),
        at most :data:`DIFF_LINES` lines and then how many more."""
        with self._lock:
            self._release_answer_locked()
            for line in diff_lines(diff):
                safe = terminal_safe(redact_text(line))
                colour = (
                    _DIFF_COLOUR.get(line[:1], "")
                    if self._tty() and not line.startswith(("+++", "---"))
                    else ""
                )
                self._write(f"   {colour}{safe}\x1b[0m\n" if colour else f"   {safe}\n", drawn=True)

    def thought(self, text: str) -> None:
        """Reasoning while the model thinks: its newest line is the live line's detail (dimmed by
        being the detail), folded to that line; a pipe gets none of it (it is not the answer)."""
        self._thought = (self._thought + text)[-_THOUGHT_KEEP:]
        last = next((line for line in reversed(self._thought.splitlines()) if line.strip()), "")
        with self._lock:
            if self._tty() and self._spinner is not None and last:
                self._detail = "💭 " + " ".join(redact_text(last).split())
                self._draw()

    def usage(self, total_tokens: int, context_window: int | None) -> None:
        """The turn's token count as a footer line (``📊 tokens 1,234 / 32,768 (3%)``)."""
        if context_window:
            update = UsageUpdate(session_update="usage_update", used=total_tokens, size=context_window)
            self.note(f"📊 {usage_line(update)}")
        else:
            self.note(f"📊 tokens {total_tokens:,}")

    def prepare_question(self) -> None:
        """Clear the spinner line and release held text so a question is asked on a clean line."""
        self.spinner_stop()
        with self._lock:
            self._release_answer_locked()


#: additions green, removals red, hunk headers cyan (a terminal only)
_DIFF_COLOUR = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
#: characters of reasoning kept to find its newest line
_THOUGHT_KEEP = 4096


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _silence(out: TextIO) -> None:
    """Point ``out``'s file descriptor at /dev/null (after its reader went away)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
