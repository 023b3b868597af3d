"""A foreign ACP agent for tests that sends every kind of session update a front-end must show.

``python tests/agents/everything_agent.py [--modes-only] [--pause S [--paused-steps N]] [--hostile]``

* ``session/new`` answers with modes (``ask``, ``code``) and — unless ``--modes-only`` — config
  options (``mode`` and ``model`` selects); just after it, ``available_commands_update`` offers
  ``/deploy`` and ``/test``.
* A prompt sends, in order: a thought (three lines), a plan of three entries that changes as the
  work goes (pending → in progress → completed), an edit card with diff content, a command card
  with terminal content (its output in ``_meta.terminal_output``, the convention of agents whose
  client runs no terminal), ``usage_update``, ``session_info_update`` (a title) and the answer.
  ``--pause S`` waits S seconds between steps (for screenshots of the live region; with
  ``--paused-steps N`` only after a prompt's first N steps, the frames a test looks at); ``--hostile``
  ends every text (a plan entry, the thought, the diff, the output, a command, the title) with
  escape sequences a terminal would obey.
* A prompt that starts with ``/`` is an agent command: the answer repeats what arrived
  (``command /deploy args prod``), so a test sees the client sent it as the agent expects.
* ``session/set_config_option`` and ``session/set_mode`` change the value and say so with
  ``config_option_update`` / ``current_mode_update``.

It is written on the SDK's agent side, like any third-party agent would be.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from acp import RequestError, run_agent, start_tool_call, text_block, update_tool_call
from acp.helpers import (
    plan_entry,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message,
    update_agent_thought,
    update_available_commands,
    update_current_mode,
    update_plan,
)
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    ConfigOptionUpdate,
    Cost,
    NewSessionResponse,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfoUpdate,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    ToolCallLocation,
    ToolCallProgress,
    UnstructuredCommandInput,
    UsageUpdate,
)

from tests.agents.sdk_agent import SdkAgent

#: what ``--hostile`` appends to every text: retitle the window, clear the screen, flip the line
EVIL = "\x1b]0;pwned\x07\x1b[2J\u202e"
MODES = [("ask", "Ask"), ("code", "Code")]
MODELS = [("small", "Small model"), ("large", "Large model")]
OLD = "def greet(name):\n    print('helo', name)\n    return None\n"
NEW = "def greet(name: str) -> None:\n    print('hello', name)\n"


class EverythingAgent(SdkAgent):
    agent_name = "everything"
    agent_title = "Everything test agent"

    def __init__(
        self, modes_only: bool, pause: float, hostile: bool = False, paused_steps: int | None = None
    ) -> None:
        super().__init__()
        self.modes_only = modes_only
        #: every text of the agent's ends in escape sequences a terminal would obey
        self.evil = EVIL if hostile else ""
        self.pause = pause
        #: how many of a prompt's steps are followed by the pause (None: every one)
        self.paused_steps = paused_steps
        self._steps = 0
        self.mode = "ask"
        self.model = "small"

    def _modes(self) -> SessionModeState:
        return SessionModeState(
            current_mode_id=self.mode,
            available_modes=[SessionMode(id=i, name=n) for i, n in MODES],
        )

    def _options(self) -> list[SessionConfigOptionSelect]:
        def select(key: str, name: str, current: str, values: list[tuple[str, str]]) -> Any:
            return SessionConfigOptionSelect(
                id=key,
                name=name,
                category=key,  # type: ignore[arg-type]  # "mode" / "model"
                type="select",
                current_value=current,
                options=[SessionConfigSelectOption(value=v, name=n) for v, n in values],
            )

        return [select("mode", "Mode", self.mode, MODES), select("model", "Model", self.model, MODELS)]

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.sessions += 1
        session_id = f"everything-{self.sessions}"
        asyncio.get_running_loop().call_later(0.01, lambda: asyncio.ensure_future(self._commands(session_id)))
        return NewSessionResponse(
            session_id=session_id,
            modes=self._modes(),
            config_options=None if self.modes_only else self._options(),  # type: ignore[arg-type]
        )

    async def _commands(self, session_id: str) -> None:
        commands = [
            AvailableCommand(
                name="deploy",
                description="Deploy the app" + self.evil,
                input=AvailableCommandInput(root=UnstructuredCommandInput(hint="environment")),
            ),
            AvailableCommand(name="test", description="Run the test suite"),
        ]
        await self.conn.session_update(session_id, update_available_commands(commands))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in dict(MODES):
            raise RequestError.invalid_params({"modeId": mode_id})
        self.mode = mode_id
        await self.conn.session_update(session_id, update_current_mode(mode_id))
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        if self.modes_only:
            raise RequestError.method_not_found("session/set_config_option")
        values = dict(MODES) if config_id == "mode" else dict(MODELS) if config_id == "model" else {}
        if value not in values:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        if config_id == "mode":
            self.mode = str(value)
        else:
            self.model = str(value)
        options = self._options()
        await self.conn.session_update(
            session_id, ConfigOptionUpdate(session_update="config_option_update", config_options=options)
        )
        return SetSessionConfigOptionResponse(config_options=options)  # type: ignore[arg-type]

    async def _send(self, session_id: str, update: Any) -> None:
        await self.conn.session_update(session_id, update)
        self._steps += 1
        if self.pause and (self.paused_steps is None or self._steps <= self.paused_steps):
            await asyncio.sleep(self.pause)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        self._steps = 0
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            await self._send(session_id, update_agent_message(text_block(f"command /{name} args {args}")))
            return PromptResponse(stop_reason="end_turn")
        send = self._send
        await send(session_id, update_agent_thought(text_block("Reading notes.py first.\n")))
        await send(session_id, update_agent_thought(text_block("The greeting has a typo.\n")))
        await send(
            session_id, update_agent_thought(text_block("I will fix it, then run the tests." + self.evil))
        )
        steps = ["Read notes.py" + self.evil, "Fix the greeting", "Run the tests"]
        priorities = ["high", "medium", "low"]

        def plan(done: int, running: bool) -> Any:
            entries = []
            for i, (step, priority) in enumerate(zip(steps, priorities, strict=True)):
                status = "completed" if i < done else "in_progress" if i == done and running else "pending"
                entries.append(plan_entry(step, priority=priority, status=status))  # type: ignore[arg-type]
            return update_plan(entries)

        await send(session_id, plan(0, False))
        await send(session_id, plan(0, True))
        await send(session_id, plan(1, True))
        diff = tool_diff_content("notes.py", NEW + (self.evil + "\n" if self.evil else ""), OLD)
        await send(
            session_id,
            start_tool_call(
                "edit-1",
                "Edit notes.py",
                kind="edit",
                status="in_progress",
                locations=[ToolCallLocation(path="notes.py")],
            ),
        )
        await send(session_id, update_tool_call("edit-1", status="completed", content=[diff]))
        await send(session_id, plan(2, True))
        await send(session_id, start_tool_call("run-1", "Run pytest", kind="execute", status="in_progress"))
        await send(
            session_id,
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id="run-1",
                status="completed",
                content=[tool_terminal_ref("term-1")],
                field_meta={
                    "terminal_output": {
                        "terminal_id": "term-1",
                        "data": "collected 3 items\n3 passed" + self.evil + "\n",
                    }
                },
            ),
        )
        await send(session_id, plan(3, False))
        await send(
            session_id,
            UsageUpdate(
                session_update="usage_update",
                used=1234,
                size=200000,
                cost=Cost(amount=0.0123, currency="USD"),
            ),
        )
        await send(
            session_id,
            SessionInfoUpdate(session_update="session_info_update", title="Fix the greeting" + self.evil),
        )
        await send(
            session_id,
            update_agent_message(
                text_block(
                    f"Fixed the typo in `notes.py`; 3 tests pass (mode {self.mode}, model {self.model})."
                )
            ),
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    args = sys.argv[1:]
    pause = float(args[args.index("--pause") + 1]) if "--pause" in args else 0.0
    paused = int(args[args.index("--paused-steps") + 1]) if "--paused-steps" in args else None
    agent = EverythingAgent("--modes-only" in args, pause, "--hostile" in args, paused_steps=paused)
    asyncio.run(run_agent(agent))  # type: ignore[arg-type]
