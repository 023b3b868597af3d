"""Drawing a turn's card stack in a terminal (``acp-progress watch``), on ``rich``.

Why ``rich``: the hand-written ANSI redraw cut lines by character count, so a line wider than
the terminal (an emoji is two columns, CJK text too) wrapped, the cursor arithmetic went wrong
and lines were printed again and again. ``rich`` measures cells, wraps and crops, and its
:class:`~rich.live.Live` display owns the redraw of the live region.

Two views with one small interface (:class:`CardRenderer`), used by the watch client and by any
front-end that drives an agent: ``apply(update)``, ``note(line)``, ``await ask(question) -> bool``,
``tick()``, ``finish(stop_reason)``, ``show_summary(text, revision)``.

A progress summary (the one-sentence status of :mod:`acp_adapter.summary`) is a status line under
the card stack in the live region, replaced in place by each higher revision and gone when the turn
ends; on a pipe it is one ``… summary: <text>`` line per new revision. While a permission question
waits, a new summary is only remembered and drawn after the answer, like every other update.

* :class:`LiveView` (a terminal): finished cards and complete answer lines are printed above a
  live region that holds the in-progress cards (a ``rich`` spinner each, one cropped line) and the
  answer line being streamed. While a permission question waits, the live display is stopped (the
  animation pauses, the cursor is back, the question stays visible and the terminal echoes the
  typed keys) and restarted after the answer.
* :class:`PlainView` (a pipe or a log): one line per card event, never cut.

Questions read the answer line from stdin on the event loop (not on a thread blocked in
``input()``), so Ctrl-C at the question — ``interrupt`` set — answers no at once and nothing is
left waiting on the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from typing import Any, Protocol, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from acp_adapter.frontends._render import SPINNER_NAME, progress_bar
from acp_adapter.frontends._updates import plan_plain
from acp_adapter.frontends.watch.extras import (
    content_plain,
    content_renderables,
    plan_renderable,
    thought_lines,
    thought_renderable,
    usage_plain,
)
from acp_adapter.frontends.watch.render import CardBoard, CardView, card_line, card_parts, fit_keeping_clock
from acp_adapter.safety.terminal_text import terminal_safe
from acp_adapter.text import format_elapsed

#: plan entries shown in the live region (the whole checklist is printed when the turn ends)
LIVE_PLAN_LINES = 8


class CardRenderer(Protocol):
    """What a front-end calls to show one turn."""

    board: CardBoard
    output_closed: bool

    def apply(self, update: Any) -> None: ...
    def show_summary(self, text: str, revision: int) -> None: ...
    def note(self, text: str) -> None: ...
    async def ask(self, question: str) -> bool: ...
    async def ask_line(self, question: str) -> str | None: ...
    def tick(self) -> None: ...
    def finish(self, stop_reason: str) -> None: ...
    def fail(self, reason: str, details: str | None) -> None: ...
    def close(self) -> None: ...


async def read_answer(stream: TextIO, interrupt: asyncio.Event | None = None) -> str | None:
    """One line typed on ``stream`` (a terminal in cooked mode: it echoes and edits), read on the
    event loop; None if ``interrupt`` is set first or the input ends."""
    loop = asyncio.get_running_loop()
    fd = stream.fileno()
    done: asyncio.Future[str | None] = loop.create_future()
    buffer = bytearray()

    def readable() -> None:
        try:
            data = os.read(fd, 1024)
        except OSError:
            data = b""
        if not data:
            if not done.done():
                done.set_result(None)
            return
        buffer.extend(data)
        if b"\n" in buffer and not done.done():
            done.set_result(buffer.split(b"\n", 1)[0].decode(errors="replace"))

    loop.add_reader(fd, readable)
    waiter = asyncio.ensure_future(interrupt.wait()) if interrupt is not None else None
    try:
        waits: set[asyncio.Future[Any]] = {done} if waiter is None else {done, waiter}
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        return done.result() if done.done() else None
    finally:
        loop.remove_reader(fd)
        if waiter is not None:
            waiter.cancel()


def _yes(answer: str | None) -> bool:
    return answer is not None and answer.strip().lower() in ("y", "yes")


class _Base:
    def __init__(self, stdin: TextIO | None, interrupt: asyncio.Event | None, verbose: bool = False) -> None:
        self.board = CardBoard()
        self.verbose = verbose  # thoughts in full, not folded to their last lines
        self._thoughts_shown = 0  # the thought text up to here was printed (a thought that ended)
        self.output_closed = False
        self._stdin = stdin if stdin is not None else sys.stdin
        self._interrupt = interrupt
        self._answer_printed = 0
        self._printed: set[str] = set()
        self.summary: str | None = None  # the progress summary shown now (highest revision)
        self.summary_revision = 0
        self._summary_open = True  # False once the turn finished: no status after the end

    def _ended_thought(self) -> str | None:
        """The thought written since the last one printed, once it ended (another update came)."""
        if self.board.thinking or len(self.board.thoughts) <= self._thoughts_shown:
            return None
        thought = self.board.thoughts[self._thoughts_shown :]
        self._thoughts_shown = len(self.board.thoughts)
        return thought if thought.strip() else None

    def _take_summary(self, text: str, revision: int) -> bool:
        """Keep a summary if it is newer than the one shown and the turn is still on."""
        if not self._summary_open or revision <= self.summary_revision:
            return False
        self.summary, self.summary_revision = " ".join(text.split()), revision
        return True


class PlainView(_Base):
    """One line per card event, for pipes and logs (``▶`` opened, ``…`` progress, ✅/❌ ended)."""

    def __init__(
        self,
        out: TextIO,
        *,
        stdin: TextIO | None = None,
        interrupt: asyncio.Event | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(stdin, interrupt, verbose)
        self.out = out
        self._plan_written: list[Any] | None = None
        self._announced: set[str] = set()
        self._details: dict[str, str] = {}  # the progress line last written for each live card
        self._asking = False
        self._summary_written = 0  # the revision last written (a question holds newer ones back)
        self._answer_from = 0  # where the answer being written began (an answer may come in parts)

    def _write(self, text: str) -> None:
        if self.output_closed:
            return
        try:
            self.out.write(terminal_safe(text))  # plain lines: no escape of ours, none of the data's
            self.out.flush()
        except BrokenPipeError:  # `… | head`: stop drawing, let the turn finish quietly
            self.output_closed = True

    def apply(self, update: Any) -> None:
        now = time.monotonic()
        answering, answered = self.board.answering, len(self.board.answer)
        changed = self.board.apply(update, now)
        if self.board.answering and not answering:
            self._answer_from = answered
        self._write_thought()
        self._write_plan()
        for card_id in changed:
            card = self.board.cards[card_id]
            if card.live and card_id not in self._announced:
                self._announced.add(card_id)
                self._write(card_line(card, mark="▶", now=now) + "\n")
            elif card.status == "pending":
                self._write(f"   ⏸ {card.title}: waiting for permission\n")
            elif card.live and (card.detail.strip() or card.progress is not None):
                detail = " ".join(card.detail.split())
                if card.progress is not None:  # a step of a tool that reports a total: bar, percentage, time
                    elapsed = format_elapsed(now - card.opened_at)
                    detail = f"{progress_bar(*card.progress)} {detail} · {elapsed}".replace("  · ", " · ")
                line = f"   … {card.title}: {detail}\n"
                if self._details.get(card_id) != line:  # an update that changed no detail (a
                    self._details[card_id] = line  # terminal's output piece) prints nothing new
                    self._write(line)
            elif not card.live and card_id not in self._printed:
                self._printed.add(card_id)
                self._write(card_line(card, now=now) + "\n")
                self._write_lines(content_plain(self.board.contents.get(card_id)))
        # whole lines only: a card, note or summary line never lands inside a line of the answer
        answer = self.board.answer
        cut = answer.rfind("\n") + 1
        if cut > self._answer_printed:
            self._write(answer[self._answer_printed : cut])
            self._answer_printed = cut
        if self.summary_revision > self._summary_written:
            self._write_summary()

    def _write_lines(self, lines: list[str]) -> None:
        if lines:
            self._write("".join(line + "\n" for line in lines))

    def _write_thought(self) -> None:
        """A thought that ended: ``💭`` and its last line (every line with ``--verbose``)."""
        thought = self._ended_thought()
        if thought is not None:
            lines = thought_lines(thought, verbose=self.verbose, limit=1)
            self._write_lines([f"💭 {line}" for line in lines])

    def _write_plan(self) -> None:
        plan = self.board.plan
        if plan is None or plan == self._plan_written:
            return
        self._write_lines(plan_plain(plan, self._plan_written))
        self._plan_written = list(plan)

    def show_summary(self, text: str, revision: int) -> None:
        """One ``… summary: <text>`` line per new revision (held while a question waits)."""
        if self._take_summary(text, revision):
            self._write_summary()

    def _write_summary(self) -> None:
        if self.summary is None or self.summary_revision <= self._summary_written or self._asking:
            return
        if self.board.answering and self._answer_printed > self._answer_from:
            return  # never between the lines of an answer being written: held until a card or thought
        printed = self.board.answer[: self._answer_printed]
        if printed and not printed.endswith("\n"):
            return  # never inside a line of the streamed answer: written once the line ends
        self._summary_written = self.summary_revision
        self._write(f"   … summary: {self.summary}\n")

    def note(self, text: str) -> None:
        self._write(text + "\n")

    async def ask(self, question: str) -> bool:
        return _yes(await self.ask_line(question))

    async def ask_line(self, question: str) -> str | None:
        self._asking = True
        try:
            self._write(question)
            answer = await read_answer(self._stdin, self._interrupt)
        finally:
            self._asking = False
        self._write_summary()
        return answer

    def tick(self) -> None:
        return

    def _flush_answer(self) -> None:
        self._summary_open = False
        self.board.thinking = False
        self._write_thought()
        rest = self.board.answer[self._answer_printed :]
        if rest:
            self._write(rest if rest.endswith("\n") else rest + "\n")
            self._answer_printed = len(self.board.answer)

    def finish(self, stop_reason: str) -> None:
        self._flush_answer()
        if self.board.usage is not None:
            self._write(usage_plain(self.board.usage) + "\n")
        _orphans_and_reason(self.board, stop_reason, self._write)

    def fail(self, reason: str, details: str | None) -> None:
        """A failed turn: the answer so far, then the reason (never a stop reason)."""
        self._flush_answer()
        _failure_lines(self.board, reason, details, self._write)

    def close(self) -> None:
        return


def _orphans(board: CardBoard, write: Any) -> None:
    open_cards = [c.title for c in board.live_cards]
    if open_cards:
        write(f"⚠️  {len(open_cards)} card(s) were left spinning by the agent: {', '.join(open_cards)}\n")


def _orphans_and_reason(board: CardBoard, stop_reason: str, write: Any) -> None:
    _orphans(board, write)
    write(f"— stop reason: {stop_reason}\n")


def _failure_lines(board: CardBoard, reason: str, details: str | None, write: Any) -> None:
    """``❌ turn failed: <reason>`` and, when the error's ``data.details`` says more, a line of it."""
    _orphans(board, write)
    write(f"❌ turn failed: {reason}\n")
    if details and " ".join(details.split()) not in " ".join(reason.split()):
        write(f"   details: {details}\n")


class LiveView(_Base):
    """Finished lines printed once, above a ``rich`` live region of spinning cards."""

    def __init__(
        self,
        console: Console,
        *,
        stdin: TextIO | None = None,
        interrupt: asyncio.Event | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(stdin, interrupt, verbose)
        self.console = console
        self._live = self._new_live()
        self._started = False
        self._asking = False
        self._spinners: dict[str, Spinner] = {}
        self._segment_end = 0  # the answer up to here is a finished block (a card came after it)

    def _new_live(self) -> Live:
        """A fresh display each time one starts: a stopped ``Live`` remembers the height of its last
        region, and its first redraw after a restart moved up over that many lines and erased
        them — the answered permission line among them."""
        return Live(
            console=self.console,
            auto_refresh=False,  # frames come from tick(): deterministic, no drawing thread
            transient=True,  # the live region is erased when stopped (questions, the end)
            redirect_stdout=False,
            redirect_stderr=False,
            vertical_overflow="visible",
        )

    def _answer_renderable(self, text: str) -> RenderableType:
        """An answer as Markdown (fences, lists, emphasis rendered) on a terminal."""
        # shown, never obeyed; and a link shows its real target ("text (url)"): no OSC 8 hyperlink
        # whose visible text differs from where it leads
        return Markdown(terminal_safe(text.strip("\n")), hyperlinks=False)

    # ------------------------------------------------------------ the live region

    def _card_renderable(self, card: CardView, now: float) -> RenderableType:
        """One line per live card, cropped to the width with ``…`` (never wrapped: the region's
        height stays what the display measured), its clock kept whole."""
        head, clock = card_parts(card, mark="", now=now)
        if card.status == "in_progress":
            spinner = self._spinners.get(card.tool_call_id)
            if spinner is None:
                spinner = self._spinners[card.tool_call_id] = Spinner(SPINNER_NAME)
            frame = spinner.render(now)
            mark = frame.plain if isinstance(frame, Text) else str(frame)
        else:
            mark = card_line(card, now=now).split(" ", 1)[0]
        line = fit_keeping_clock(f"{mark} {head}", clock, self.console.width)
        return Text(line, no_wrap=True, overflow="ellipsis", end="")

    def _region(self) -> RenderableType:
        now = time.monotonic()
        parts: list[RenderableType] = []
        if self.board.plan and self._summary_open:  # the checklist, redrawn in place as it changes
            parts.append(plan_renderable(self.board.plan, limit=LIVE_PLAN_LINES))
        if self.board.thinking and self._summary_open:
            thought = thought_renderable(
                self.board.thoughts[self._thoughts_shown :], verbose=self.verbose, live=True
            )
            if thought is not None:
                parts.append(thought)
        parts += [self._card_renderable(c, now) for c in self.board.live_cards]
        if self.summary and self._summary_open:  # the status line, under the card stack
            parts.append(
                Text(
                    f"  ↳ {terminal_safe(self.summary)}",
                    style="dim italic",
                    no_wrap=True,
                    overflow="ellipsis",
                    end="",
                )
            )
        tail = self.board.answer[self._answer_printed :]
        if tail.strip():
            parts.append(self._answer_renderable(tail))
        for part in parts[:-1]:  # a line each: a Text ending in "" runs into the next renderable
            if isinstance(part, Text):
                part.end = "\n"
        return Group(*parts)

    def _refresh(self) -> None:
        if self.output_closed:
            return
        try:
            if not self._started:
                self._live = self._new_live()
                self._live.start()
                self._started = True
            self._live.update(self._region(), refresh=True)
        except BrokenPipeError:
            self.output_closed = True

    def _print(self, renderable: RenderableType) -> None:
        if self.output_closed:
            return
        try:
            self.console.print(renderable)
        except BrokenPipeError:
            self.output_closed = True

    # ------------------------------------------------------------ the interface

    def apply(self, update: Any) -> None:
        before = len(self.board.cards)
        self.board.apply(update, time.monotonic())
        if len(self.board.cards) > before:
            self._segment_end = len(self.board.answer)  # a new card: the answer so far is a block
        if not self._asking:  # while a question waits the screen stays as it is; caught up after
            self._print_finished()
            self._refresh()

    def _print_answer_block(self, end: int) -> None:
        block = self.board.answer[self._answer_printed : end]
        if block.strip():
            self._print(self._answer_renderable(block))
        self._answer_printed = max(self._answer_printed, end)

    def _print_finished(self) -> None:
        """Print, once, every finished answer block (as Markdown: a block is the answer up to
        the next card, so the Markdown is whole) and every card that ended."""
        now = time.monotonic()
        thought = self._ended_thought()
        if thought is not None:
            self._print_thought(thought)
        if self._segment_end > self._answer_printed:
            self._print_answer_block(self._segment_end)
        for card in self.board.cards.values():
            if not card.live and card.tool_call_id not in self._printed:
                self._printed.add(card.tool_call_id)
                self._spinners.pop(card.tool_call_id, None)
                self._print_card(card, now)

    def _print_card(self, card: CardView, now: float) -> None:
        """A card that ended, then its diffs (coloured) and its terminal's output."""
        self._print(Text(card_line(card, now=now)))
        for part in content_renderables(self.board.contents.get(card.tool_call_id)):
            self._print(part)

    def _print_thought(self, thought: str) -> None:
        rendered = thought_renderable(thought, verbose=self.verbose, live=False)
        if rendered is not None:
            self._print(rendered)

    def show_summary(self, text: str, revision: int) -> None:
        """Replace the status line in the live region (drawn after a pending question)."""
        if self._take_summary(text, revision) and not self._asking:
            self._refresh()

    def note(self, text: str) -> None:
        self._print(Text(terminal_safe(text)))
        if not self._asking:
            self._refresh()

    async def ask(self, question: str) -> bool:
        return _yes(await self.ask_line(question))

    async def ask_line(self, question: str) -> str | None:
        """Pause the animation, show the question, read the answer (echoed by the terminal)."""
        self._asking = True
        try:
            self._stop_live()
            if not self.output_closed:
                with contextlib.suppress(BrokenPipeError):
                    self.console.print(Text(terminal_safe(question)), end="")
                    self.console.file.flush()
            answer = await read_answer(self._stdin, self._interrupt)
            if answer is None:
                self._print(Text(""))  # Ctrl-C or end of input: end the question's line
        finally:
            self._asking = False
        self._print_finished()
        self._refresh()
        return answer

    def tick(self) -> None:
        if self.board.live_cards and not self._asking:
            self._refresh()

    def _stop_live(self) -> None:
        if self._started:
            self._started = False
            with contextlib.suppress(BrokenPipeError):
                self._live.stop()

    def _flush_all(self) -> None:
        self._summary_open = False
        self._stop_live()
        self._print_finished()
        now = time.monotonic()
        for card in self.board.cards.values():
            if card.tool_call_id not in self._printed:
                self._printed.add(card.tool_call_id)
                self._print_card(card, now)
        self.board.thinking = False
        thought = self._ended_thought()
        if thought is not None:
            self._print_thought(thought)
        if self.board.plan:  # the final checklist stays in the scrollback
            self._print(plan_renderable(self.board.plan))
        self._print_answer_block(len(self.board.answer))
        if self.board.usage is not None:
            self._print(Text(usage_plain(self.board.usage), style="dim"))

    def _line(self, line: str) -> None:
        self._print(Text(terminal_safe(line.rstrip("\n"))))

    def finish(self, stop_reason: str) -> None:
        self._flush_all()
        _orphans_and_reason(self.board, stop_reason, self._line)

    def fail(self, reason: str, details: str | None) -> None:
        self._flush_all()
        _failure_lines(self.board, reason, details, self._line)

    def close(self) -> None:
        """Restore the terminal (cursor, live region) if the turn ended abnormally."""
        self._stop_live()
