"""``chat`` knows its agent: ``/help`` lists the agent's commands beside chat's
own, Tab completes them, an agent command goes to the agent as typed (``/deploy prod``), ``/mode``
and ``/model`` call ``session/set_config_option`` — or ``session/set_mode`` for an agent with only
modes — and say so when the agent offers neither; the status line shows the mode, the model and
the session's title. On a real terminal (a pty read back through pyte) and on a pipe, against the
scripted agent that sends every kind of update (tests/agents/everything_agent.py), served in this
process behind the pipe process chat spawns (:func:`tests.helpers.piped_agent.piped_agent_thread`)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pyte
import pytest
from acp.schema import AvailableCommand, AvailableCommandsUpdate, CurrentModeUpdate, SessionInfoUpdate
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from acp_adapter.client.session_state import MAX_COMMANDS, SessionFacts
from acp_adapter.frontends.watch.chat_commands import ChatCompleter, help_lines, status_line
from tests.agents.everything_agent import EverythingAgent
from tests.agents.scripted_agent import ScriptedAgent
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.piped_agent import piped_agent_thread
from tests.helpers.pty_child import PtyChild
from tests.helpers.pty_screen import ENV, Screen


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    """The everything agent's ``--agent`` command: a pipe process to the agent served in this
    process (what chat makes of the agent's commands, modes and models is the point, not the
    agent's process)."""
    with piped_agent_thread(lambda: EverythingAgent(modes_only=False, pause=0.0)) as argv:
        yield shlex.join(argv)


def _chat_pipe(tmp_path, lines: str, agent: Callable[[], Any]) -> str:
    # the command line in this process (what it prints is the point); the scripted agent served
    # behind a pipe process the chat spawns
    with piped_agent_thread(agent) as argv:
        done = run_cli_inside(
            ["chat", "--summary", "off", "--agent", shlex.join(argv)],
            cwd=tmp_path,
            env={**ENV, "ACP_PROGRESS_STATE_DIR": str(tmp_path / ".state")},
            stdin=lines,
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.e2e
def test_mode_and_model_are_set_through_the_agents_config_options(tmp_path) -> None:
    typed = "/mode\n/mode code\n/model Large model\n/model huge\nfix it\n"
    out = _chat_pipe(tmp_path, typed, lambda: EverythingAgent(modes_only=False, pause=0.0))
    lines = out.splitlines()
    assert "mode: Ask — the agent offers: Ask, Code" in lines
    assert "mode: Code" in lines and "model: Large model" in lines
    assert (
        "model not changed: the agent offers no model 'huge' (it offers: Small model, Large model)" in lines
    )
    # the agent itself says what it runs with: the calls reached it
    assert "(mode code, model large)" in out, out


@pytest.mark.e2e
def test_an_agent_with_only_modes_gets_set_mode_and_no_model(tmp_path) -> None:
    out = _chat_pipe(
        tmp_path, "/mode code\n/model large\nfix it\n", lambda: EverythingAgent(modes_only=True, pause=0.0)
    )
    assert "mode: Code" in out.splitlines()
    assert "model not changed: the agent offers no model to choose" in out
    assert "(mode code, model small)" in out, out


@pytest.mark.e2e
def test_an_agent_without_modes_is_said_so(tmp_path) -> None:
    out = _chat_pipe(tmp_path, "/mode code\n", lambda: ScriptedAgent("stream", None))
    assert out.splitlines() == ["mode not changed: the agent offers no mode to choose"]


class AnsweringScreen(Screen):
    """A pty screen that answers the cursor-position requests a terminal answers: prompt_toolkit
    draws its bottom toolbar (chat's status line) only once it knows the terminal's height."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        PtyChild.__init__(
            self, argv, cwd, {**ANSWERING_ENV, "ACP_PROGRESS_STATE_DIR": os.path.join(cwd, ".state")}
        )
        self.screen = pyte.Screen(100, 30)
        self.stream = pyte.ByteStream(self.screen)
        self.screen.write_process_input = lambda data: os.write(self.fd, data.encode())  # type: ignore[method-assign]


ANSWERING_ENV = {k: v for k, v in ENV.items() if k != "PROMPT_TOOLKIT_NO_CPR"}


def _until_prompt(term: Screen, within: float = 20) -> None:
    """Until the prompt is among the last lines written (the blank rows below them do not count)."""
    term.read_while(
        within,
        lambda: any(line.startswith("›") for line in [ln for ln in term.text().splitlines() if ln][-6:]),
    )


@pytest.mark.e2e
def test_chat_on_a_terminal_shows_mode_and_model_in_its_status_line(tmp_path, everything: str) -> None:
    argv = [sys.executable, "-m", "acp_adapter.cli", "chat", "--summary", "off", "--agent", everything]
    term = AnsweringScreen(argv, str(tmp_path))
    try:
        shown = term.pump(30, until="mode Ask")
        bottom = [line for line in shown.splitlines() if line.strip()][-1]
        assert bottom.startswith("mode Ask · model Small model"), shown
        term.type(b"\x04")
        assert term.wait(10) == 0, term.text()
    finally:
        term.close()


@pytest.mark.e2e
def test_chat_on_a_terminal_lists_completes_and_sends_the_agents_commands(tmp_path, everything: str) -> None:
    argv = [sys.executable, "-m", "acp_adapter.cli", "chat", "--summary", "off", "--agent", everything]
    term = Screen(argv, str(tmp_path))
    try:
        term.pump(20, until="Ctrl-D quits")
        _until_prompt(term)
        term.type(b"/help\r")
        shown = term.pump(10, until="Run the test suite")
        assert "/deploy <environment> — Deploy the app" in shown, shown
        assert "/test — Run the test suite" in shown and "/mode" in shown
        _until_prompt(term)
        # Tab completes the agent's command; it is sent as typed and the agent gets it so
        term.type(b"/dep\t")
        term.pump(3, until="› /deploy")
        term.type(b" prod\r")
        shown = term.pump(15, until="command /deploy args prod")
        assert "command /deploy args prod" in shown, shown
        _until_prompt(term)
        term.type(b"/mode co\t")
        term.pump(3, until="/mode code")
        term.type(b"\r")
        assert "mode: Code" in term.pump(10, until="mode: Code"), term.text()
        _until_prompt(term)
        term.type(b"fix it\r")
        shown = term.pump(20, until="(mode code")
        assert "(mode code, model small)" in shown, shown
        _until_prompt(term)
        term.type(b"\x04")
        assert term.wait(10) == 0, term.text()
    finally:
        term.close()


def test_the_status_line_follows_the_agents_updates() -> None:
    facts = SessionFacts()
    assert status_line(facts) == ""
    facts.observe(SessionInfoUpdate(session_update="session_info_update", title="Fix the greeting"))
    facts.observe(CurrentModeUpdate(session_update="current_mode_update", current_mode_id="code"))
    assert status_line(facts) == "mode code · “Fix the greeting”"


# ---------------------------------------------------------------- in-process: hostile names, bounds


def test_the_agents_command_names_and_titles_are_shown_inert_and_bounded() -> None:
    facts = SessionFacts()
    many = [AvailableCommand(name=f"c{i}", description="x") for i in range(MAX_COMMANDS + 50)]
    evil = AvailableCommand(name="evil\x1b]0;pwned\x07", description="\x1b[2J\u202ewipe")
    facts.observe(
        AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[evil, *many])
    )
    facts.observe(SessionInfoUpdate(session_update="session_info_update", title="t\x1b]52;c;Zm9v\x07"))
    assert len(facts.commands) == MAX_COMMANDS
    shown = "\n".join(help_lines(facts)) + status_line(facts)
    assert "\x1b" not in shown and "\u202e" not in shown and "“t␛]52;c;Zm9v␇”" in shown
    assert "evil" not in shown and "/c0 — x" in shown  # a name that cannot be typed is not offered
    assert list(ChatCompleter(lambda: facts).get_completions(Document("/ev"), CompleteEvent())) == []
    kept = [f"/c{i}" for i in range(MAX_COMMANDS - 1)]  # the evil one took a slot
    completed = [
        c.text for c in ChatCompleter(lambda: facts).get_completions(Document("/c1"), CompleteEvent())
    ]
    assert completed == [name for name in kept if name.startswith("/c1")]
