"""``acp-progress watch``: a terminal ACP client that renders the tool-call stack live.

It spawns an ACP agent (this project's by default), sends one prompt and shows what an editor
would: an animated spinner on in-progress cards with their heartbeat text, a progress bar on a card
whose tool reports a total, ✅/❌ when they end, then the answer (Markdown on a terminal). On a
non-terminal it prints one line per card event instead; ``--json`` prints one JSON object per
line (:mod:`.json_output`). ``watch -`` reads the prompt from stdin; ``--session ID`` /
``--continue`` load a stored session first (:mod:`.sessions_cmd`).

The pieces here — :class:`WatchClient`, :func:`start_driver`, :func:`run_turn` — are shared with
``chat`` (:mod:`.chat`), which is the same thing for many prompts in one session.

It also runs the progress summary itself, as a front-end over the agent's stream (on by default
here: ``--summary off`` turns it off): a status line under the card stack on a terminal, one
``… summary: <text>`` line per new revision on a pipe. The agent is asked not to run its own
(``ACP_PROGRESS_SUMMARY=off`` in its environment), so one turn never pays for two summarizers.

Ctrl-C: :mod:`.interrupt` counts presses from the moment the command line starts; at any moment
the front-end cancels what runs (a turn is cancelled and drained, its cards closed; an agent still
starting is stopped) and exits 130 within two seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from acp.schema import DeniedOutcome, PromptResponse, RequestPermissionResponse
from rich.console import Console

from acp_adapter.client.driver import (
    AgentDriver,
    AgentError,
    AgentLogError,
    PermissionRequest,
    PromptRefused,
    Turn,
    permission_response,
)
from acp_adapter.client.permissions import PermissionPolicy
from acp_adapter.client.questions import QuestionPolicy, QuestionRequest, QuestionResponse, decline
from acp_adapter.config import ConfigError, Settings
from acp_adapter.frontends._person import terminal_user
from acp_adapter.frontends.interrupt import Interrupts, interrupts
from acp_adapter.frontends.questions import ask_by_lines
from acp_adapter.frontends.reader_gone import when_reader_gone
from acp_adapter.frontends.watch.json_lines import JsonLines, JsonView
from acp_adapter.frontends.watch.render import RENDERS_CARD_TERMINALS, CardBoard
from acp_adapter.frontends.watch.view import CardRenderer, LiveView, PlainView
from acp_adapter.summary import Outcome, ProgressSummary, SummaryEvent, SummaryFactory

#: How long a cancelled turn may take to drain (its cards closing) before the front-end gives up.
CANCEL_DRAIN = 1.2
#: The agent's grace to exit on EOF after Ctrl-C, before its process group is signalled.
INTERRUPT_GRACE = 0.2


class WatchClient:
    """The client half of ``watch`` for one turn: feeds updates to a view (:mod:`.terminal_view`,
    or :class:`~.json_output.JsonView`) and answers permission requests."""

    def __init__(
        self,
        out: TextIO,
        *,
        animate: bool,
        auto_allow: bool,
        stdin: TextIO | None = None,
        interrupt: asyncio.Event | None = None,
        json_lines: JsonLines | None = None,
        console: Console | None = None,
        verbose: bool = False,
    ) -> None:
        self.animate = animate and json_lines is None
        self.auto_allow = auto_allow
        self.stdin = stdin if stdin is not None else sys.stdin
        self.interrupt = interrupt
        self.json = json_lines
        self.view: CardRenderer | JsonView
        if json_lines is not None:
            self.view = JsonView(json_lines, stdin=self.stdin, interrupt=interrupt)
        elif self.animate:
            self.view = LiveView(
                console or Console(file=out), stdin=self.stdin, interrupt=interrupt, verbose=verbose
            )
        else:
            self.view = PlainView(out, stdin=self.stdin, interrupt=interrupt, verbose=verbose)
        #: the turn's progress summary (None: off); it observes every update the view gets
        self.summary: ProgressSummary | None = None
        #: the turn being shown (a permission note waits until its queued updates are drawn)
        self.turn: Turn | None = None

    @property
    def board(self) -> CardBoard:
        return self.view.board

    @property
    def output_closed(self) -> bool:
        return self.view.output_closed

    # ------------------------------------------------------------ ACP client methods

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(self.view, JsonView):
            self.view.session_id = session_id
        self.view.apply(update)
        if self.summary is not None:
            self.summary.observe(update)

    def show_summary(self, event: SummaryEvent) -> None:
        self.view.show_summary(event.summary, event.revision)

    async def ask_permission(self, request: PermissionRequest) -> RequestPermissionResponse:
        """Record the request and its answer (``--json``), then answer it."""
        await self._caught_up()
        if self.json is not None:
            self.json.permission_request(request)
        response = await self._decide(request)
        if self.json is not None:
            self.json.permission_response(request, response)
        return response

    async def ask_question(self, request: QuestionRequest) -> QuestionResponse:
        """The agent's question (an MCP tool's form or link): asked on a terminal, else declined —
        ``--yes`` allows tools, it never answers for the person."""
        await self._caught_up()
        if self.stdin is not None and self.stdin.isatty():
            return await ask_by_lines(self.view, request, self._note)
        self._note(f"❓ declined (no terminal to ask): {' '.join(request.message.split())}")
        return decline()

    async def _decide(self, request: PermissionRequest) -> RequestPermissionResponse:
        """The permission policy of ``watch``: ``--yes`` allows, a terminal asks, no terminal denies."""
        title = request.title
        if self.auto_allow:
            self._note(f"🔓 allowed: {title}")
            return permission_response(request, True, automatic=True)
        if self.stdin is not None and self.stdin.isatty():
            command = request.command_beside_title
            if command is not None:  # the title does not show it whole: the command, before the question
                self._note("   command: " + "\n            ".join(command.splitlines()))
            allowed = await self.view.ask(f"🔐 Allow {title}? [y/N] ")
            if self.interrupt is not None and self.interrupt.is_set():
                # Ctrl-C at the question: the turn is being cancelled, and so is the question
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            return permission_response(request, allowed, decided_by=terminal_user())
        self._note(f"🔒 denied (no terminal to ask; pass --yes to allow): {title}")
        return permission_response(request, False, automatic=True)

    async def _caught_up(self, limit: float = 0.5) -> None:
        """Let the updates read before the request be drawn first (the card, then ``🔓 allowed``)."""
        deadline = asyncio.get_running_loop().time() + limit
        await asyncio.sleep(0)
        while self.turn is not None and self.turn.queued and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110 - a bounded poll of the turn's queue, which has no event
            await asyncio.sleep(0.005)

    @property
    def turn_failed(self) -> bool:
        """A think card that ended ``failed`` means the model call failed: the turn did not succeed."""
        return self.failed_think_reason is not None

    @property
    def failed_think_reason(self) -> str | None:
        """Why the turn's model call failed (the last failed think card's text), else None."""
        failed = [c for c in self.board.cards.values() if c.kind == "think" and c.status == "failed"]
        if not failed:
            return None
        return failed[-1].detail.strip() or "the model call failed"

    # ------------------------------------------------------------ drawing

    def _note(self, text: str) -> None:
        self.view.note(text)

    def _clear_live(self) -> None:
        self.view.close()

    def tick(self) -> None:
        self.view.tick()

    def finish(self, response: PromptResponse) -> None:
        """The turn's last line: its stop reason — or, when a think card failed (another agent's
        way of failing: a failed card, then ``end_turn``), that it failed and why: the last line
        and the exit code (1) agree."""
        if self.json is not None:
            self.json.end(response)
        reason = self.failed_think_reason
        if reason is not None:
            self.view.fail(reason, f"the agent ended the turn with stop reason {response.stop_reason}")
            return
        self.view.finish(response.stop_reason)

    def fail(self, exc: AgentError) -> None:
        """The turn failed: its reason (and the error's ``data.details``), never a stop reason."""
        if isinstance(exc, PromptRefused):
            reason, details = exc.reason, exc.details
            if self.json is not None:
                self.json.error(reason, code=exc.code, data=exc.data)
        else:  # the agent crashed or the connection broke: said on stderr, as start failures are
            if self.json is not None:
                self.json.error(str(exc))
            self.view.close()
            print(f"acp-progress: {exc}", file=sys.stderr)
            return
        self.view.fail(reason, details)


def agent_env(settings: Settings) -> dict[str, str]:
    env = settings.to_env()  # the driver merges it over this process's environment
    env["ACP_PROGRESS_SUMMARY"] = "off"  # watch writes the summary itself (see the module doc)
    return env


@dataclass
class TurnEnd:
    """How a turn shown by a front-end ended."""

    stop_reason: str | None = None
    error: AgentError | None = None
    #: Ctrl-C: the turn was cancelled (``interrupted_again``: a second press came while it drained)
    cancelled: bool = False
    interrupted_again: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None


async def start_driver(driver: AgentDriver, presses: Interrupts, seen: int) -> bool:
    """Start the agent unless Ctrl-C comes first (then stop it at once and return False)."""
    if presses.count > seen:  # pressed already: nothing is spawned
        return False
    start = asyncio.ensure_future(driver.start())
    press = asyncio.ensure_future(presses.wait_beyond(seen))
    try:
        await asyncio.wait({start, press}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        press.cancel()
    if start.done():
        start.result()  # its AgentError, if it failed
        return True
    # a starting agent reads no EOF: its group is signalled almost at once; start() then fails
    await driver.close(grace=0.1)
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(start, 0.3)
    return False


async def run_turn(
    driver: AgentDriver,
    session_id: str,
    text: str,
    client: WatchClient,
    presses: Interrupts,
    summaries: SummaryFactory | None,
) -> TurnEnd:
    """Send one prompt and show it to its end; Ctrl-C cancels it (its cards drain and close)."""
    if summaries is not None:
        client.summary = summaries.create(user_text=text, on_summary=client.show_summary).start()
    seen = presses.count
    turn = driver.prompt(session_id, text)
    client.turn = turn
    try:
        end = await _follow(turn, client, presses, seen)
    except AgentError as exc:
        _stop_summary(client, "failed")
        client._clear_live()
        client.fail(exc)
        return TurnEnd(error=exc)
    finally:
        client.turn = None
    _stop_summary(client, "cancelled" if end.cancelled else None)
    if end.cancelled:
        client._clear_live()
        client._note("⏹  cancelled")
        client._clear_live()
        if client.json is not None:
            client.json.end(PromptResponse(stop_reason="cancelled"))
        return end
    assert end.stop_reason is not None and turn.response is not None
    client.finish(turn.response)
    if client.turn_failed:  # another agent's way of failing: a failed think card, then end_turn
        return TurnEnd(stop_reason=end.stop_reason, error=AgentError(client.failed_think_reason or ""))
    return end


def _stop_summary(client: WatchClient, outcome: Outcome | None) -> None:
    """Stop the turn's summary before anything final is drawn (no status after the end);
    ``None``: finished, or failed when the model call failed."""
    summary = client.summary
    if summary is not None and not summary.stopped:
        summary.stop(outcome or ("failed" if client.turn_failed else "finished"))


async def _follow(turn: Turn, client: WatchClient, presses: Interrupts, seen: int) -> TurnEnd:
    """Render the turn's updates as they come; on Ctrl-C cancel it and drain it (briefly)."""

    async def consume() -> PromptResponse:
        async for update in turn:
            await client.session_update(turn.session_id, update)
        assert turn.response is not None
        return turn.response

    consumer = asyncio.ensure_future(consume())
    press = asyncio.ensure_future(presses.wait_beyond(seen))
    try:
        while not consumer.done():
            await asyncio.wait({consumer, press}, timeout=0.1, return_when="FIRST_COMPLETED")
            if press.done() and not consumer.done():
                if client.interrupt is not None:
                    client.interrupt.set()  # a question waiting on the terminal is answered no
                # the first press beyond ``seen`` cancels; any later one — even one that arrived
                # in the same instant (``\x03\x03``) — is the second press that exits
                return await _cancel(turn, consumer, presses, seen + 1)
            if client.animate:
                client.tick()
        return TurnEnd(stop_reason=str(consumer.result().stop_reason))
    finally:
        press.cancel()
        if not consumer.done():
            consumer.cancel()


async def _cancel(turn: Turn, consumer: asyncio.Future[Any], presses: Interrupts, seen: int) -> TurnEnd:
    again = asyncio.ensure_future(presses.wait_beyond(seen))
    try:
        with contextlib.suppress(TimeoutError, AgentError):
            await asyncio.wait_for(turn.cancel(), CANCEL_DRAIN)
        await asyncio.wait({consumer, again}, timeout=CANCEL_DRAIN, return_when="FIRST_COMPLETED")
        if consumer.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                consumer.result()
        return TurnEnd(stop_reason="cancelled", cancelled=True, interrupted_again=again.done())
    finally:
        again.cancel()


async def read_prompt_stdin() -> str:
    """``watch -``: the whole of stdin is the prompt."""
    from acp_adapter.frontends.watch.stdin_lines import StdinLines

    return await StdinLines(sys.stdin.fileno()).read_all()


def _watch_client(args: argparse.Namespace, out: TextIO, json_lines: JsonLines | None) -> WatchClient:
    """What ``watch`` shows on ``out`` and asks the person, as its command line says."""
    return WatchClient(
        out,
        animate=out.isatty() and not args.no_animation and json_lines is None,
        auto_allow=args.yes,
        interrupt=asyncio.Event(),  # Ctrl-C: also answers a pending permission question no
        json_lines=json_lines,
        verbose=getattr(args, "verbose", False),
    )


async def _watch(args: argparse.Namespace, settings: Settings, out: TextIO, cwd: str) -> int:
    """``watch``: one prompt and its turn, drawn on ``out``; the exit status (0 answered, 1 failed,
    2 a usage error, 130 interrupted). Whatever ends it, the terminal is restored, the summary
    stopped and the agent closed."""
    json_lines = JsonLines(out) if args.json else None
    try:
        summaries = SummaryFactory.from_settings(
            settings, default_mode="off" if json_lines is not None else "embedded"
        )
    except ConfigError as exc:
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 2
    presses = interrupts
    presses.attach()
    client = _watch_client(args, out, json_lines)
    try:
        driver = terminal_driver(
            args, settings, "acp-progress-watch", client.ask_permission, client.ask_question
        )
    except AgentError as exc:
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, AgentLogError) else 1
    # `| head` exits: the turn is cancelled as for Ctrl-C, the agent and its tools stop
    reader = asyncio.ensure_future(when_reader_gone(fileno_of(out), presses.press))
    try:
        return await _prompt_once(args, cwd, out, driver, client, presses, summaries)
    except AgentLogError as exc:  # --agent-log names a file that cannot be written: a usage error
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 2
    except AgentError as exc:
        _stop_summary(client, "failed")
        client._clear_live()
        if json_lines is not None:
            json_lines.error(str(exc))
        print(f"acp-progress watch: {exc}", file=sys.stderr)
        return 1
    finally:
        _stop_summary(client, "failed")  # a no-op unless the turn ended some other way
        if summaries is not None:
            await summaries.aclose()
        client._clear_live()  # the terminal is restored (live region erased, cursor shown) on every exit
        reader.cancel()
        await driver.close()
        presses.detach()


def terminal_driver(
    args: argparse.Namespace,
    settings: Settings,
    client_name: str,
    permission_policy: PermissionPolicy,
    question_policy: QuestionPolicy,
) -> AgentDriver:
    """The driver of the agent a terminal front-end (``watch``, ``chat``) runs from its command
    line: it renders card terminals, and asks the person through the given policies. Raises
    AgentStartError for an unparsable ``--agent``."""
    return AgentDriver(
        args.agent,
        env=agent_env(settings),
        permission_policy=permission_policy,
        question_policy=question_policy,
        init_timeout=args.init_timeout,
        stderr_log=args.agent_log,
        client_name=client_name,
        client_capabilities=RENDERS_CARD_TERMINALS,
        mcp_servers=getattr(args, "mcp_servers", ()),
    )


async def _prompt_once(
    args: argparse.Namespace,
    cwd: str,
    out: TextIO,
    driver: AgentDriver,
    client: WatchClient,
    presses: Interrupts,
    summaries: SummaryFactory | None,
) -> int:
    """Read the prompt, start the agent, open its session and run the one turn; the exit status.
    Ctrl-C at any step stops there (130)."""
    from acp_adapter.frontends.watch.sessions import open_session

    seen = 0  # a press before the loop ran counts too: it came after the command started
    text = await _prompt_text(args, presses, seen)
    if isinstance(text, int):
        return text
    if not await start_driver(driver, presses, seen):
        return 130
    session_id = await open_session(driver, args, cwd, out, client.json, client.animate)
    if session_id is None:
        return 1
    if presses.count > seen:
        await driver.close(grace=INTERRUPT_GRACE)
        return 130
    end = await run_turn(driver, session_id, text, client, presses, summaries)
    if end.cancelled:
        await driver.close(grace=INTERRUPT_GRACE)
        return 130
    return 1 if end.failed else 0


async def _prompt_text(args: argparse.Namespace, presses: Interrupts, seen: int) -> str | int:
    """The prompt: the words given, or all of stdin for ``-``; instead an exit status when Ctrl-C
    came first (130) or stdin held nothing (2)."""
    if args.prompt != ["-"]:
        return " ".join(args.prompt)
    text = await _race(read_prompt_stdin(), presses, seen)
    if text is None:
        return 130
    if not text.strip():
        print("acp-progress watch: the prompt read from stdin is empty", file=sys.stderr)
        return 2
    return text


def fileno_of(out: TextIO) -> int:
    """``out``'s descriptor (-1 for a stream without one, e.g. a test's StringIO: never polled)."""
    try:
        return out.fileno()
    except (OSError, ValueError, AttributeError):
        return -1


async def _race(work: Any, presses: Interrupts, seen: int) -> Any:
    """Await ``work`` unless Ctrl-C comes first (then None)."""
    task = asyncio.ensure_future(work)
    press = asyncio.ensure_future(presses.wait_beyond(seen))
    try:
        await asyncio.wait({task, press}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        press.cancel()
    if task.done():
        return task.result()
    task.cancel()
    return None


def check_cwd(command: str, cwd_arg: str) -> str | None:
    cwd = os.path.abspath(cwd_arg)
    if not os.path.isdir(cwd):
        print(f"acp-progress {command}: --cwd {cwd_arg!r} is not a directory", file=sys.stderr)
        return None
    return cwd


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    cwd = check_cwd("watch", args.cwd)
    if cwd is None:
        return 2
    try:
        return asyncio.run(_watch(args, settings, sys.stdout, cwd))
    except KeyboardInterrupt:
        return 130
