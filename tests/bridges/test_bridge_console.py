"""The console platform and the runner on the real client driver: this project's agent (in this
process) and another one (a process of its own)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_adapter.frontends.bridges.config import new_instance
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.platforms.console import run_console
from acp_adapter.frontends.bridges.runner import BridgeRunner
from tests.agents.echo_agent import SECRET as ECHO_SECRET
from tests.agents.echo_agent import EchoAgent
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.console_bridge import ScriptedInput, WatchedOutput
from tests.helpers.shared_servers import drive_own_agent_in_process, use_in_process_agents

pytestmark = pytest.mark.anyio

ECHO_AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'echo_agent.py'}"


@pytest.fixture(autouse=True)
def _agents_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """This project's agent is served in this process (the driver's side is the production code);
    another agent (``--agent``) still runs as a process of its own unless a test drives it here."""
    use_in_process_agents(monkeypatch)


def runner_for(instance: Any, delay: str = "0.3", **kw: Any) -> BridgeRunner:
    """A runner whose agent thinks ``delay`` seconds a step (a post then its edit needs the
    suite's 0.3 s; a test that times nothing against the agent passes less)."""
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY=delay)
    return BridgeRunner(instance, BridgeOptions(agent_env=env, window=0.2, **kw))


async def test_console_shows_progress_edited_in_place_and_the_answer(tmp_path: Path) -> None:
    instance = new_instance(
        "c", "console", cwd=str(ROOT), progress={"tool_progress": "all", "reactions": True}
    )
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("search for TODO")
    inp.end()
    runner = await run_console(instance, inp, out, runner=runner_for(instance))  # type: ignore[arg-type]
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "[#1 you] search for TODO"
    post = lines.index("[#2] 🔎 Searching for TODO")
    edit = lines.index("[#2 edited] ✅ Searching for TODO")
    answer = next(i for i, line in enumerate(lines) if line.startswith("[#3] I searched the workspace"))
    assert post < edit and post < answer
    assert "[#1 reaction 👀]" in lines and "[#1 reaction 👍]" in lines
    metrics = runner.metrics()
    assert metrics.delivered == metrics.enqueued and metrics.delivery_dropped_by_reason == {}


async def test_another_agent_title_fallback_transcript_boundary_and_no_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another agent (the echo agent, ``--agent``), driven in this process over the SDK's in-memory
    transports: what the console shows of it is the point, not its process."""
    drive_own_agent_in_process(
        monkeypatch,
        BridgeRunner,
        lambda runner: runner.instance.agent == tuple(ECHO_AGENT.split()),
        EchoAgent,
    )
    instance = new_instance("e", "console", agent=ECHO_AGENT, progress={"tool_progress": "all"})
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("hello there")
    inp.feed("second message")
    inp.end()
    await run_console(instance, inp, out, runner=runner_for(instance))  # type: ignore[arg-type]
    text = out.getvalue()
    assert "🌐 Lookup hello there" in text  # ACP title + safe scalar preview; the api_key is never chosen
    assert "✅ Lookup second message" in text
    # the agent's own history holds exactly the person's messages: no progress line was fed back
    assert "history=2 prompts=['hello there', 'second message']" in text
    assert ECHO_SECRET not in text and ECHO_SECRET[:12] not in text


@pytest.mark.e2e  # an allowed command runs as a process
@pytest.mark.parametrize(("answer", "allowed"), [("y", True), ("n", False)])
async def test_console_permission_prompt(answer: str, allowed: bool) -> None:
    instance = new_instance("p", "console", cwd=str(ROOT), progress={"tool_progress": "all"})
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("run echo bridged")
    # nothing here is timed against the agent (the person answers when asked): it thinks 0.05 s
    runner = runner_for(instance, delay="0.05")
    task = asyncio.create_task(run_console(instance, inp, out, runner=runner))  # type: ignore[arg-type]
    await out.wait_for("[permission] Allow")
    inp.feed(answer)
    await out.wait_for("[permission] allowed" if allowed else "[permission] denied")
    await out.wait_for("[#")
    inp.end()
    await task
    text = out.getvalue()
    if allowed:
        assert "✅ Running echo bridged" in text
    else:
        assert "❌ Running echo bridged — Permission denied by the user" in text


async def test_permission_unanswered_is_denied_after_the_timeout() -> None:
    instance = new_instance("p", "console", cwd=str(ROOT), progress={"tool_progress": "all"})
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("run echo bridged")
    runner = runner_for(instance, delay="0.05", permission_timeout=0.3)
    task = asyncio.create_task(run_console(instance, inp, out, runner=runner))  # type: ignore[arg-type]
    await out.wait_for("[permission] no answer: denied")
    await out.wait_for("❌ Running echo bridged")
    inp.end()
    await task


@pytest.mark.e2e  # the agent that exits is a process
async def test_an_agent_that_cannot_start_is_a_chat_error_not_a_crash() -> None:
    instance = new_instance("x", "console", agent=f"{sys.executable} -c 'import sys; sys.exit(3)'")
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed("hello")
    inp.end()
    await run_console(instance, inp, out, runner=runner_for(instance))  # type: ignore[arg-type]
    assert "❌ the agent" in out.getvalue() and "exited with code 3" in out.getvalue()


@pytest.mark.e2e  # the MCP server is a process
async def test_a_tool_s_question_is_asked_in_the_console_chat_and_answered_there(tmp_path: Path) -> None:
    """An MCP server asks during a call: the console bridge asks in the chat, the person's line
    goes back to the server through the agent."""
    from tests.helpers.mcp_kit import tasks_server

    instance = new_instance("q", "console", cwd=str(tmp_path), progress={"tool_progress": "all"})
    inp, out = ScriptedInput(), WatchedOutput()
    inp.feed('call asks {"question": "Favourite colour?"}')
    runner = runner_for(instance, delay="0.05", mcp_servers=[tasks_server()])  # nothing timed against it
    task = asyncio.create_task(run_console(instance, inp, out, runner=runner))  # type: ignore[arg-type]
    await out.wait_for("[permission] Allow", 60)
    inp.feed("y")
    await out.wait_for("Colour: (cancelled after", 60)
    assert "[jobs] Favourite colour?" in out.getvalue()
    inp.feed("teal")
    await out.wait_for("the person said teal", 60)
    inp.end()
    await task
