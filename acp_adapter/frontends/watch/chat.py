"""``acp-progress chat``: a conversation with any ACP agent, in one session.

On a terminal: a prompt line with history and editing (``prompt_toolkit``), and between prompts
the live card stack of ``watch`` (:mod:`.watch`, :mod:`.terminal_view`). Ctrl-C cancels the running
turn and comes back to the prompt; a second Ctrl-C while it is being cancelled, or Ctrl-C at the
prompt, exits 130; Ctrl-D exits 0. ``/cancel`` (nothing runs at the prompt: says so), ``/new``
(a new session) and ``/quit``.

On a pipe (stdin not a terminal): each line of stdin is one prompt, in order, in the same
session; blank lines are skipped; the end of input ends the conversation — exit 0, or 1 if a turn
failed. ``--json`` prints what ``watch --json`` prints, for every turn.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from acp.schema import RequestPermissionResponse
from rich.console import Console

from acp_adapter.client.driver import (
    AgentDriver,
    AgentError,
    AgentLogError,
    PermissionRequest,
    permission_response,
)
from acp_adapter.client.questions import QuestionRequest, QuestionResponse, decline
from acp_adapter.client.session_state import SessionFacts
from acp_adapter.config import ConfigError, Settings
from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.interrupt import Interrupts, interrupts
from acp_adapter.frontends.reader_gone import when_reader_gone
from acp_adapter.frontends.watch.chat_commands import (
    HELP,
    ChatCompleter,
    choices_line,
    help_lines,
    status_line,
)
from acp_adapter.frontends.watch.json_lines import JsonLines
from acp_adapter.frontends.watch.stdin_lines import StdinLines
from acp_adapter.frontends.watch.watcher import (
    INTERRUPT_GRACE,
    WatchClient,
    check_cwd,
    fileno_of,
    run_turn,
    start_driver,
    terminal_driver,
)
from acp_adapter.safety.terminal_text import terminal_safe
from acp_adapter.summary import SummaryFactory

if TYPE_CHECKING:  # prompt_toolkit is imported when a terminal chat starts, not before
    from prompt_toolkit import PromptSession

log = logging.getLogger("acp_progress.chat")

PROMPT = "› "


#: one word after a slash (``/bogus``): a command, answered here; ``/usr/bin/x …`` is a prompt
SLASH_COMMAND = re.compile(r"/[A-Za-z?][\w-]*")
#: the chat history's file in the state directory
HISTORY_FILE = "chat_history"


def agent_label(driver: AgentDriver) -> str:
    """The agent's name from ``initialize`` (``agentInfo``: its title or name, and version),
    else the program it runs — never the interpreter's path. (Made terminal-safe where it is
    shown, by :meth:`_Chat.note`.)"""
    init = driver.initialize_response
    info = init.agent_info if init is not None else None
    if info is not None:
        name = " ".join((info.title or info.name or "").split())
        if name:
            version = " ".join((info.version or "").split())
            return f"{name} {version}" if version else name
    argv = list(driver.argv)
    program = next((a for a in argv[1:] if not a.startswith("-")), None) if argv else None
    if argv and os.path.basename(argv[0]).startswith("python") and program:
        return os.path.basename(program)
    return os.path.basename(argv[0]) if argv else "the agent"


def chat_history(settings: Settings) -> Any:
    """``prompt_toolkit``'s ``FileHistory`` in the state directory (file 0600, directory 0700, both
    checked as the store is: owned by you, writable by nobody else); in memory when the store is
    off or the directory cannot be used — a history is never a reason not to chat."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    from acp_adapter.safety.private_path import PRIVATE_FILE_MODE, check_private, make_private_dir
    from acp_adapter.store import default_state_dir

    if not settings.state:
        return InMemoryHistory()
    directory = Path(settings.state_dir).expanduser() if settings.state_dir else default_state_dir()
    path = directory / HISTORY_FILE
    try:
        make_private_dir(directory, what="the state directory")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        os.close(fd)
        check_private(path, what="the chat history", readable_by_others=False)
    except OSError as exc:
        log.warning("chat history kept in memory only: %s", exc)
        return InMemoryHistory()
    return FileHistory(str(path))


class _CtrlC(AcpProgressError):
    """Ctrl-C pressed at the prompt (the prompt's result, so the chat exits 130)."""


def _prompt_session(settings: Settings, facts: Callable[[], SessionFacts]) -> PromptSession[str]:
    """The terminal's prompt: its history, Tab completion of the session's commands, a status
    toolbar, and Ctrl-C as an ordinary result rather than a KeyboardInterrupt."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    keys = KeyBindings()

    @keys.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        # prompt_toolkit's own binding raises KeyboardInterrupt inside the prompt's task, and
        # asyncio re-raises a BaseException out of the task step: a 30-line "Task exception
        # was never retrieved" traceback. An ordinary exception is just the prompt's result.
        event.app.exit(exception=_CtrlC())

    def toolbar() -> str | None:
        return status_line(facts()) or None

    return PromptSession(
        key_bindings=keys,
        history=chat_history(settings),
        completer=ChatCompleter(facts),
        complete_while_typing=False,  # Tab completes; typing a prompt opens no menu
        bottom_toolbar=toolbar,
    )


class _Chat:
    """One conversation: the driver, the current session and how the turns went."""

    def __init__(self, args: argparse.Namespace, settings: Settings, out: TextIO, cwd: str) -> None:
        self.args = args
        self.settings = settings
        self.out = out
        self.cwd = cwd
        self.json = JsonLines(out) if args.json else None
        self.terminal = sys.stdin.isatty() and out.isatty() and self.json is None
        self.animate = self.terminal and not args.no_animation
        self.console = Console(file=out) if self.animate else None
        self.presses: Interrupts = interrupts
        self.question_interrupt = asyncio.Event()
        self.failed_turns = 0
        self.session_id = ""
        self.summaries: SummaryFactory | None = None
        self.driver = terminal_driver(  # raises AgentStartError for an unparsable --agent (see run_chat)
            args,
            settings,
            client_name="acp-progress-chat",
            permission_policy=self._ask_permission,
            question_policy=self._ask_question,
        )
        self.client: WatchClient | None = None

    async def _ask_question(self, request: QuestionRequest) -> QuestionResponse:
        if self.client is None:  # no turn runs: nobody asked for this
            return decline()
        return await self.client.ask_question(request)

    async def _ask_permission(self, request: PermissionRequest) -> RequestPermissionResponse:

        if self.client is None:  # no turn runs: nobody asked for this
            return permission_response(request, False, automatic=True)
        return await self.client.ask_permission(request)

    def note(self, text: str) -> None:
        """A line of chat's own (banner, command answers): what it quotes (the agent's name, a
        session id, a mistyped command) is made terminal-safe here, chat's stdout being raw."""
        if self.json is not None:
            return
        text = terminal_safe(text)
        if self.console is not None:
            self.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.out, flush=True)

    async def turn(self, text: str) -> bool:
        """One prompt; False when Ctrl-C was pressed again while it was being cancelled (exit)."""
        self.question_interrupt = asyncio.Event()
        self.client = WatchClient(
            self.out,
            animate=self.animate,
            auto_allow=self.args.yes,
            interrupt=self.question_interrupt,
            json_lines=self.json,
            console=self.console,
            verbose=getattr(self.args, "verbose", False),
        )
        try:
            end = await run_turn(
                self.driver, self.session_id, text, self.client, self.presses, self.summaries
            )
        finally:
            self.client._clear_live()
            self.client = None
        if end.failed:
            self.failed_turns += 1
        if end.cancelled and not self.terminal:
            return False  # on a pipe nobody is at a prompt to come back to: Ctrl-C ends it
        return not end.interrupted_again

    @property
    def facts(self) -> SessionFacts:
        """What the agent said about the current session (commands, modes, title, usage)."""
        return self.driver.sessions.facts.get(self.session_id) or SessionFacts()

    async def choose(self, category: str, wanted: str) -> None:
        """``/mode NAME`` / ``/model NAME``: ask the agent (set_config_option or set_mode)."""
        if not wanted:
            self.note(choices_line(self.facts, category))
            return
        try:
            now = await self.driver.set_choice(self.session_id, category, wanted)
        except AgentError as exc:
            self.note(f"{category} not changed: {exc}")
            return
        self.note(f"{category}: {now}")

    async def slash(self, command: str) -> str:
        """A line that starts with ``/``: ``"quit"``, ``"done"`` (answered here) or ``"send"`` (a
        prompt: an agent command, sent as typed — ``/name args`` is how ACP agents take them)."""
        name, _, rest = command.partition(" ")
        if name in ("/quit", "/exit") and not rest:
            return "quit"
        if name == "/cancel" and not rest:
            self.note("nothing is running (Ctrl-C cancels a running turn)")
        elif name == "/new" and not rest:
            self.args.session, self.args.continue_ = None, False
            if await self.new_session():
                self.note(f"new session {self.session_id}")
        elif name in ("/help", "/?") and not rest:
            for line in help_lines(self.facts):
                self.note(line)
        elif name in ("/mode", "/model"):
            await self.choose(name[1:], rest.strip())
        elif self.facts.command(name[1:]) is not None:
            return "send"
        elif SLASH_COMMAND.fullmatch(command):  # a mistyped command never goes to the model
            self.note(f"unknown command {command}; /help lists them")
        else:
            return "send"  # a prompt that starts with a path (/usr/bin/x …)
        return "done"

    async def new_session(self) -> bool:
        from acp_adapter.frontends.watch.sessions import open_session

        session = await open_session(self.driver, self.args, self.cwd, self.out, self.json, self.animate)
        if session is None:
            return False
        self.session_id = session
        return True

    # ------------------------------------------------------------ the two loops

    async def pipe_loop(self) -> int:
        lines = StdinLines(sys.stdin.fileno())
        while True:
            seen = self.presses.count
            read = asyncio.ensure_future(lines.readline())
            press = asyncio.ensure_future(self.presses.wait_beyond(seen))
            await asyncio.wait({read, press}, return_when=asyncio.FIRST_COMPLETED)
            press.cancel()
            if not read.done():
                read.cancel()
                return 130
            line = read.result()
            if line is None:
                return 1 if self.failed_turns else 0
            if not line.strip():
                continue
            name = line.strip().split(" ", 1)[0]
            if name in ("/mode", "/model"):  # a script may switch them between its prompts
                await self.choose(name[1:], line.strip()[len(name) :].strip())
                continue
            if not await self.turn(line):
                return 130

    async def terminal_loop(self) -> int:
        session = _prompt_session(self.settings, lambda: self.facts)
        self.note(f"chat with {agent_label(self.driver)} in {self.cwd} — {HELP}")
        while True:
            text = await self._read_prompt(session)
            if isinstance(text, int):
                return text
            command = text.strip()
            if not command:
                continue
            if command.startswith("/"):
                action = await self.slash(command)
                if action == "quit":
                    return 0
                if action == "done":
                    continue
            if not await self.turn(text):
                return 130

    async def _read_prompt(self, session: PromptSession[str]) -> str | int:
        """One line typed at the prompt, or the exit status: 130 for Ctrl-C, 0 for Ctrl-D."""
        # Ctrl-C at the prompt is a key (the terminal is raw): KeyboardInterrupt; a SIGINT that
        # lands just before or after the raw mode (or from kill) is counted: both exit 130
        seen = self.presses.count
        asked = asyncio.ensure_future(session.prompt_async(PROMPT, handle_sigint=False))
        press = asyncio.ensure_future(self.presses.wait_beyond(seen))
        await asyncio.wait({asked, press}, return_when=asyncio.FIRST_COMPLETED)
        press.cancel()
        if not asked.done():
            asked.cancel()
            with contextlib.suppress(BaseException):
                await asked
            return 130
        try:
            return asked.result()
        except (KeyboardInterrupt, _CtrlC):
            return 130
        except EOFError:
            return 0

    async def run(self) -> int:
        try:
            self.summaries = SummaryFactory.from_settings(
                self.settings, default_mode="off" if self.json is not None else "embedded"
            )
        except ConfigError as exc:
            print(f"acp-progress chat: {exc}", file=sys.stderr)
            return 2
        self.presses.attach()
        seen = 0  # a press before the loop ran counts too: it came after the command started

        def reader_gone() -> None:  # nobody reads the answers: cancel the turn, then leave
            self.presses.press()
            self.presses.press()

        reader = asyncio.ensure_future(when_reader_gone(fileno_of(self.out), reader_gone))
        try:
            if not await start_driver(self.driver, self.presses, seen):
                return 130
            if not await self.new_session():
                return 1
            if self.presses.count > seen:
                return 130
            code = await (self.terminal_loop() if self.terminal else self.pipe_loop())
            if code == 130:
                await self.driver.close(grace=INTERRUPT_GRACE)
            return code
        except AgentLogError as exc:
            print(f"acp-progress chat: {exc}", file=sys.stderr)
            return 2
        except AgentError as exc:
            if self.json is not None:
                self.json.error(str(exc))
            print(f"acp-progress chat: {exc}", file=sys.stderr)
            return 1
        finally:
            if self.summaries is not None:
                await self.summaries.aclose()
            reader.cancel()
            with contextlib.suppress(Exception):
                await self.driver.close()
            self.presses.detach()


def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    cwd = check_cwd("chat", args.cwd)
    if cwd is None:
        return 2
    try:
        chat = _Chat(args, settings, sys.stdout, cwd)
    except AgentError as exc:
        print(f"acp-progress chat: {exc}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(chat.run())
    except KeyboardInterrupt:
        return 130
