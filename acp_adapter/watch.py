"""``acp-progress watch``: a terminal ACP client that renders the tool-call stack live.

It spawns an ACP agent (this project's by default), sends one prompt and shows what an editor
would: an animated spinner on in-progress cards with their heartbeat text, ✅/❌ when they end,
then the streamed answer. On a non-terminal it prints one line per card event instead.

It also runs the progress summary itself, as a front-end over the agent's stream (on by default
here: ``--summary off`` turns it off): a status line under the card stack on a terminal, one
``… summary: <text>`` line per new revision on a pipe. The agent is asked not to run its own
(``ACP_PROGRESS_SUMMARY=off`` in its environment), so one turn never pays for two summarizers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from typing import Any, TextIO

from acp.schema import DeniedOutcome, PromptResponse, RequestPermissionResponse
from rich.console import Console

from .client import AgentDriver, AgentError, AgentLogError, PermissionRequest, Turn, permission_response
from .config import ConfigError, Settings
from .render import CardBoard
from .summary import Outcome, ProgressSummary, SummaryEvent, SummaryFactory
from .terminal_view import CardRenderer, LiveView, PlainView

__all__ = ["WatchClient", "run_watch"]


class WatchClient:
    """The client half of ``watch``: feeds updates to a view (:mod:`.terminal_view`) and answers
    permission requests. A terminal gets the ``rich`` live view, anything else plain lines."""

    def __init__(
        self,
        out: TextIO,
        *,
        animate: bool,
        auto_allow: bool,
        stdin: TextIO | None = None,
        interrupt: asyncio.Event | None = None,
    ) -> None:
        self.animate = animate
        self.auto_allow = auto_allow
        self.stdin = stdin if stdin is not None else sys.stdin
        self.interrupt = interrupt
        self.view: CardRenderer = (
            LiveView(Console(file=out), stdin=self.stdin, interrupt=interrupt)
            if animate
            else PlainView(out, stdin=self.stdin, interrupt=interrupt)
        )
        #: the turn's progress summary (None: off); it observes every update the view gets
        self.summary: ProgressSummary | None = None

    @property
    def board(self) -> CardBoard:
        return self.view.board

    @property
    def output_closed(self) -> bool:
        return self.view.output_closed

    # ------------------------------------------------------------ ACP client methods

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.view.apply(update)
        if self.summary is not None:
            self.summary.observe(update)

    def show_summary(self, event: SummaryEvent) -> None:
        self.view.show_summary(event.summary, event.revision)

    async def ask_permission(self, request: PermissionRequest) -> RequestPermissionResponse:
        """The permission policy of ``watch``: ``--yes`` allows, a terminal asks, no terminal denies."""
        title = request.title
        if self.auto_allow:
            self._note(f"🔓 allowed: {title}")
            return permission_response(request, True, automatic=True)
        if self.stdin is not None and self.stdin.isatty():
            allowed = await self.view.ask(f"🔐 Allow {title}? [y/N] ")
            if self.interrupt is not None and self.interrupt.is_set():
                # Ctrl-C at the question: the turn is being cancelled, and so is the question
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            return permission_response(request, allowed)
        self._note(f"🔒 denied (no terminal to ask; pass --yes to allow): {title}")
        return permission_response(request, False, automatic=True)

    @property
    def turn_failed(self) -> bool:
        """A think card that ended ``failed`` means the model call failed: the turn did not succeed."""
        return any(c.kind == "think" and c.status == "failed" for c in self.board.cards.values())

    # ------------------------------------------------------------ drawing

    def _note(self, text: str) -> None:
        self.view.note(text)

    def _clear_live(self) -> None:
        close = getattr(self.view, "close", None)
        if callable(close):
            close()

    def tick(self) -> None:
        self.view.tick()

    def finish(self, stop_reason: str) -> None:
        self.view.finish(stop_reason)


def _agent_env(settings: Settings) -> dict[str, str]:
    env = settings.to_env()  # the driver merges it over this process's environment
    env["ACP_PROGRESS_SUMMARY"] = "off"  # watch writes the summary itself (see the module doc)
    return env


async def _watch(args: argparse.Namespace, settings: Settings, out: TextIO, cwd: str) -> int:
    animate = out.isatty() and not args.no_animation
    try:
        summaries = SummaryFactory.from_settings(settings, default_mode="embedded")
    except ConfigError as exc:
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()  # Ctrl-C: also answers a pending permission question with no
    client = WatchClient(out, animate=animate, auto_allow=args.yes, interrupt=interrupted)

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
            text = " ".join(args.prompt)
            if summaries is not None:
                client.summary = summaries.create(user_text=text, on_summary=client.show_summary).start()
            turn = driver.prompt(session_id, text)
            response = await _follow(turn, client, animate, interrupted)
            _stop_summary(client, "cancelled" if response is None else None)
            if response is None:  # Ctrl-C: the turn was cancelled and its cards closed
                client._clear_live()
                client._note("⏹  cancelled")
                client._clear_live()
                return 130
        client.finish(response.stop_reason)
        return 1 if client.turn_failed else 0
    except AgentLogError as exc:  # --agent-log names a file that cannot be written: a usage error
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 2
    except AgentError as exc:
        _stop_summary(client, "failed")
        client._clear_live()
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 1
    finally:
        _stop_summary(client, "failed")  # a no-op unless the turn ended some other way
        if summaries is not None:
            await summaries.aclose()
        client._clear_live()  # the terminal is restored (live region erased, cursor shown) on every exit
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _stop_summary(client: WatchClient, outcome: Outcome | None) -> None:
    """Stop the turn's summary before anything final is drawn (no status after the end);
    ``None``: finished, or failed when the model call failed."""
    summary = client.summary
    if summary is not None and not summary.stopped:
        summary.stop(outcome or ("failed" if client.turn_failed else "finished"))


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
