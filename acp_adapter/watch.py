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
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, TextIO

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
)

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

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        allow = next((o for o in options if o.kind.startswith("allow")), None)
        reject = next((o for o in options if o.kind.startswith("reject")), None)
        title = tool_call.title or tool_call.tool_call_id
        if self.auto_allow and allow is not None:
            self._note(f"🔓 allowed: {title}")
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
            )
        if sys.stdin is not None and sys.stdin.isatty():
            self._clear_live()
            answer = await asyncio.to_thread(input, f"🔐 Allow {title}? [y/N] ")
            self._live_lines = 0
            if answer.strip().lower() in ("y", "yes") and allow is not None:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id)
                )
        else:
            self._note(f"🔒 denied (no terminal to ask; pass --yes to allow): {title}")
        if reject is not None:
            return RequestPermissionResponse(
                outcome=AllowedOutcome(outcome="selected", option_id=reject.option_id)
            )
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

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


def _agent_command(args: argparse.Namespace) -> list[str]:
    if args.agent:
        return shlex.split(args.agent)
    return [sys.executable, "-m", "acp_adapter"]


def _agent_env(settings: Settings) -> dict[str, str]:
    return {**os.environ, **settings.to_env()}


async def _watch(args: argparse.Namespace, settings: Settings, out: TextIO, log_target: Any, cwd: str) -> int:
    animate = out.isatty() and not args.no_animation
    client = WatchClient(out, animate=animate, auto_allow=args.yes)
    command = _agent_command(args)
    try:
        async with (
            spawn_agent_process(
                client,  # type: ignore[arg-type]  # implements the client methods it needs
                command[0],
                *command[1:],
                env=_agent_env(settings),
                transport_kwargs={"stderr": log_target},
            ) as (conn, _process)
        ):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(
                    name="acp-progress-watch", title="acp-progress watch", version="0.1.0"
                ),
            )
            session = await conn.new_session(cwd=cwd, mcp_servers=[])
            prompt_task = asyncio.create_task(
                conn.prompt(session_id=session.session_id, prompt=[text_block(" ".join(args.prompt))])
            )
            loop = asyncio.get_running_loop()
            interrupted = False
            pending: set[asyncio.Task[None]] = set()

            def on_sigint() -> None:
                nonlocal interrupted
                if interrupted:
                    prompt_task.cancel()
                    return
                interrupted = True
                client._note("⏹  cancelling… (Ctrl-C again to quit)")
                pending.add(loop.create_task(conn.cancel(session_id=session.session_id)))

            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, on_sigint)
            try:
                while not prompt_task.done():
                    await asyncio.wait({prompt_task}, timeout=0.1)
                    if animate:
                        client.tick()
                response = prompt_task.result()
            finally:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signal.SIGINT)
            client.finish(response.stop_reason)
            return 0 if response.stop_reason in ("end_turn", "cancelled") else 1
    except FileNotFoundError:
        print(f"acp-progress watch: cannot start agent {command[0]!r}: not found", file=sys.stderr)
        return 127
    except (ConnectionError, asyncio.CancelledError) as exc:
        print(
            f"acp-progress watch: the agent connection ended early ({exc or type(exc).__name__})",
            file=sys.stderr,
        )
        return 1


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        print(f"acp-progress watch: --cwd {args.cwd!r} is not a directory", file=sys.stderr)
        return 2
    try:
        if not args.agent_log:
            return asyncio.run(_watch(args, settings, sys.stdout, subprocess.DEVNULL, cwd))
        with open(args.agent_log, "ab") as log_target:
            return asyncio.run(_watch(args, settings, sys.stdout, log_target, cwd))
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
