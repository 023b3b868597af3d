"""``acp-progress watch``: a terminal ACP client that renders the tool-call stack live.

It spawns an ACP agent (this project's by default), sends one prompt and shows what an editor
would: an animated spinner on in-progress cards with their heartbeat text, ✅/❌ when they end,
then the streamed answer. On a non-terminal it prints one line per card event instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import sys
import time
from typing import Any, TextIO

from acp.schema import PromptResponse, RequestPermissionResponse

from .client import AgentDriver, AgentError, PermissionRequest, Turn, permission_response
from .config import Settings
from .render import CardBoard, render_card

__all__ = ["WatchClient", "run_watch"]


class WatchClient:
    """The client half: folds updates into a :class:`CardBoard` and draws it."""

    def __init__(self, out: TextIO, *, animate: bool, auto_allow: bool) -> None:
        self.board = CardBoard()
        self.out = out
        self.animate = animate
        self.auto_allow = auto_allow
        self._frame = 0
        self._live_lines = 0
        self._answer_printed = 0
        self._printed_terminal: set[str] = set()
        self._announced: set[str] = set()
        self.output_closed = False

    # ------------------------------------------------------------ ACP client methods

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        changed = self.board.apply(update, time.monotonic())
        if self.animate:
            self._redraw()
        else:
            self._print_events(changed)

    async def ask_permission(self, request: PermissionRequest) -> RequestPermissionResponse:
        """The permission policy of ``watch``: ``--yes`` allows, a terminal asks, no terminal denies."""
        title = request.title
        if self.auto_allow:
            self._note(f"🔓 allowed: {title}")
            return permission_response(request, True, automatic=True)
        if sys.stdin is not None and sys.stdin.isatty():
            self._clear_live()
            answer = await asyncio.to_thread(input, f"🔐 Allow {title}? [y/N] ")
            self._live_lines = 0
            return permission_response(request, answer.strip().lower() in ("y", "yes"))
        self._note(f"🔒 denied (no terminal to ask; pass --yes to allow): {title}")
        return permission_response(request, False, automatic=True)

    @property
    def turn_failed(self) -> bool:
        """A think card that ended ``failed`` means the model call failed: the turn did not succeed."""
        return any(c.kind == "think" and c.status == "failed" for c in self.board.cards.values())

    # ------------------------------------------------------------ drawing

    def _write(self, text: str) -> None:
        if self.output_closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:  # `acp-progress watch … | head`: stop drawing, keep the turn going
            self.output_closed = True

    def _note(self, text: str) -> None:
        self._clear_live()
        self._write(text + "\n")
        if self.animate:
            self._redraw()

    def _width(self) -> int:
        return max(40, shutil.get_terminal_size((100, 24)).columns - 1)

    def _clear_live(self) -> None:
        if self.animate and self._live_lines:
            self._write(f"\x1b[{self._live_lines}F\x1b[J")
            self._live_lines = 0

    def _redraw(self) -> None:
        """Print finished cards and complete answer lines permanently; redraw the live region."""
        now = time.monotonic()
        self._clear_live()
        for card in self.board.cards.values():
            if not card.live and card.tool_call_id not in self._printed_terminal:
                self._printed_terminal.add(card.tool_call_id)
                self._write(render_card(card, frame=self._frame, now=now, width=self._width()) + "\n")
        answer = self.board.answer
        cut = answer.rfind("\n") + 1
        if cut > self._answer_printed:
            self._write(answer[self._answer_printed : cut])
            self._answer_printed = cut
        lines = [
            render_card(c, frame=self._frame, now=now, width=self._width()) for c in self.board.live_cards
        ]
        tail = answer[self._answer_printed :]
        if tail:
            lines.append(tail)
        if lines:
            self._write("\n".join(lines) + "\n")
        self._live_lines = len(lines)

    def tick(self) -> None:
        self._frame += 1
        if self.board.live_cards:
            self._redraw()

    def _print_events(self, changed: list[str]) -> None:
        now = time.monotonic()
        for card_id in changed:
            card = self.board.cards[card_id]
            if card.live and card_id not in self._announced:
                self._announced.add(card_id)
                self._write(
                    render_card(card, frame=0, now=now, width=self._width()).replace("⠋", "▶", 1) + "\n"
                )
            elif card.status == "pending":
                self._write(f"   ⏸ {card.title}: waiting for permission\n")
            elif card.live and card.detail.strip():
                self._write(f"   … {card.title}: {' '.join(card.detail.split())}\n")
            elif not card.live and card_id not in self._printed_terminal:
                self._printed_terminal.add(card_id)
                self._write(render_card(card, frame=0, now=now, width=self._width()) + "\n")
        answer = self.board.answer
        if len(answer) > self._answer_printed:
            self._write(answer[self._answer_printed :])
            self._answer_printed = len(answer)

    def finish(self, stop_reason: str) -> None:
        if self.animate:
            self._redraw()
            self._clear_live()
            for card in self.board.cards.values():
                if card.tool_call_id not in self._printed_terminal:
                    self._write(render_card(card, frame=0, now=time.monotonic(), width=self._width()) + "\n")
            rest = self.board.answer[self._answer_printed :]
            if rest:
                self._write(rest)
        if not self.board.answer.endswith("\n"):
            self._write("\n")
        open_cards = [c.title for c in self.board.live_cards]
        if open_cards:
            self._write(
                f"⚠️  {len(open_cards)} card(s) were left spinning by the agent: {', '.join(open_cards)}\n"
            )
        self._write(f"— stop reason: {stop_reason}\n")


def _agent_env(settings: Settings) -> dict[str, str]:
    return settings.to_env()  # the driver merges it over this process's environment


async def _watch(args: argparse.Namespace, settings: Settings, out: TextIO, cwd: str) -> int:
    animate = out.isatty() and not args.no_animation
    client = WatchClient(out, animate=animate, auto_allow=args.yes)
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()

    def on_sigint() -> None:
        interrupted.set()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        async with AgentDriver(
            args.agent,
            env=_agent_env(settings),
            permission_policy=client.ask_permission,
            init_timeout=args.init_timeout,
            stderr_log=args.agent_log,
            client_name="acp-progress-watch",
        ) as driver:
            session_id = await driver.new_session(cwd)
            turn = driver.prompt(session_id, " ".join(args.prompt))
            response = await _follow(turn, client, animate, interrupted)
            if response is None:  # Ctrl-C: the turn was cancelled and its cards closed
                client._note("⏹  cancelled")
                return 130
        client.finish(response.stop_reason)
        return 1 if client.turn_failed else 0
    except AgentError as exc:
        client._clear_live()
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 1
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


async def _follow(
    turn: Turn, client: WatchClient, animate: bool, interrupted: asyncio.Event
) -> PromptResponse | None:
    """Render the turn's updates as they come; on Ctrl-C cancel it and drain it. None when cancelled."""

    async def consume() -> PromptResponse:
        async for update in turn:
            await client.session_update(turn.session_id, update)
        assert turn.response is not None
        return turn.response

    consumer = asyncio.ensure_future(consume())
    stop = asyncio.ensure_future(interrupted.wait())
    try:
        while not consumer.done():
            await asyncio.wait({consumer, stop}, timeout=0.1, return_when="FIRST_COMPLETED")
            if stop.done():
                await turn.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(consumer), 5.0)
                return None
            if animate:
                client.tick()
        return consumer.result()
    finally:
        stop.cancel()
        if not consumer.done():
            consumer.cancel()


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        print(f"acp-progress watch: --cwd {args.cwd!r} is not a directory", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_watch(args, settings, sys.stdout, cwd))
    except KeyboardInterrupt:
        return 130
    finally:
        _quiet_broken_stdout()


def _quiet_broken_stdout() -> None:
    """After ``| head`` closed our stdout, point it at /dev/null so the exit flush stays silent."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
