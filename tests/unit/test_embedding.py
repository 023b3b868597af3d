"""The embedding API: ProgressTurn (sync and async), the factories on top of it, the public
exports, and the README's example agent run against the SDK's client side (in this process: its
cards and answers are its own decision; the README command that starts it is tested as a process
in test_embedding_example.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from acp.schema import AgentMessageChunk, AgentThoughtChunk, ToolCallProgress, ToolCallStart

import acp_adapter
from acp_adapter import ProgressTurn, make_agent_progress_cb, make_thinking_cb
from acp_adapter.cancel import TurnCancelled
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, final_status, prompt_text, sdk_served

SID = "sess-embed"


def kinds(client: RecordingClient) -> list[str]:
    out = []
    for r in client.updates:
        u = r.update
        if isinstance(u, ToolCallStart):
            out.append(f"start:{u.kind}")
        elif isinstance(u, ToolCallProgress):
            out.append(f"progress:{u.status}")
        elif not out or out[-1] != u.session_update:  # text may arrive in pieces (held for redaction)
            out.append(u.session_update)
    return out


@pytest.mark.anyio
async def test_async_turn_orders_every_callback_and_ends_the_turn():
    client = RecordingClient()
    async with ProgressTurn(client, SID) as turn:

        def loop_body() -> None:
            turn.progress("start", "llm_response", {})
            turn.progress("heartbeat", "llm_response", {"elapsed": 1.0, "status": "Waiting"})
            turn.thinking("pondering ")
            turn.progress("complete", "llm_response", {})
            turn.message("the answer")
            turn.usage(10, 100)

        await asyncio.to_thread(loop_body)
    assert turn.stop_reason == "end_turn"
    assert kinds(client) == [
        "start:think",
        "progress:in_progress",
        "agent_thought_chunk",
        "progress:completed",
        "agent_message_chunk",
        "usage_update",
    ]
    # after the end nothing is accepted
    count = len(client.updates)
    assert turn.message("late") is False
    turn.progress("start", "llm_response", {})
    await turn.flush()
    assert len(client.updates) == count


@pytest.mark.anyio
async def test_a_raising_embedder_still_ends_the_turn_and_closes_open_cards():
    client = RecordingClient()
    turn = ProgressTurn(client, SID)
    with pytest.raises(ZeroDivisionError):
        async with turn:
            turn.progress("start", "llm_response", {})
            turn.message("partial")
            1 / 0  # noqa: B018
    (card,) = client.think_cards(SID).values()
    assert final_status(card) == "failed"
    assert "ZeroDivisionError" in card[-1].content[0].content.text
    assert isinstance(client.updates[-1].update, ToolCallProgress), "the card closes after the text"
    assert turn.stop_reason == "end_turn"


@pytest.mark.anyio
async def test_cancellation_ends_the_turn_as_cancelled():
    client = RecordingClient()
    turn = ProgressTurn(client, SID)
    with pytest.raises(TurnCancelled):
        async with turn:
            turn.progress("start", "llm_response", {})
            turn.cancel.cancel("user")
            turn.cancel.raise_if_cancelled()
    assert turn.stop_reason == "cancelled"
    (card,) = client.think_cards(SID).values()
    assert final_status(card) == "failed" and "Cancelled" in card[-1].content[0].content.text


@pytest.mark.anyio
async def test_sync_turn_on_a_worker_thread_waits_for_delivery_and_is_refused_on_the_loop():
    client = RecordingClient()
    loop = asyncio.get_running_loop()
    delivered_at_exit: list[int] = []

    def worker() -> None:
        with ProgressTurn(client, SID, loop) as turn:
            turn.progress("start", "llm_response", {})
            turn.message("hello")
        delivered_at_exit.append(len(client.updates))  # __exit__ returned: all delivered

    await asyncio.to_thread(worker)
    assert delivered_at_exit == [3]
    assert kinds(client) == ["start:think", "agent_message_chunk", "progress:completed"]
    assert client.answer(SID) == "hello"
    with pytest.raises(RuntimeError, match="async with"), ProgressTurn(client, SID):
        pass


@pytest.mark.anyio
async def test_factories_share_one_ordered_path_with_a_turn():
    """The README's make_*_cb(conn, session_id, loop) form: one path, and a turn ends it."""
    client = RecordingClient()
    loop = asyncio.get_running_loop()
    progress = make_agent_progress_cb(client, SID, loop)
    thinking = make_thinking_cb(client, SID, loop)

    def legacy_loop() -> None:
        for i in range(50):
            progress("start", "llm_response", {})
            thinking(f"t{i} ")
            progress("complete", "llm_response", {})

    threads = [threading.Thread(target=legacy_loop) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:  # the loop keeps running meanwhile, as an embedder's does: it drains the backlog
        await asyncio.to_thread(t.join)
    progress("start", "llm_response", {})  # left open by the embedder
    async with ProgressTurn(client, SID):
        pass  # entering ends the implicit turn: the open card closes
    cards = client.think_cards(SID)
    assert len(cards) == 101 and all(final_status(c) == "completed" for c in cards.values())
    # one ordered path: every card's start precedes its completion, as submitted
    for updates in cards.values():
        assert isinstance(updates[0], ToolCallStart) and updates[-1].status == "completed"
    thoughts = "".join(
        r.update.content.text for r in client.updates if isinstance(r.update, AgentThoughtChunk)
    )
    assert sorted(thoughts.split()) == sorted(f"t{i}" for i in range(50) for _ in range(2))


@pytest.mark.e2e
def test_public_api_is_exported_typed_and_lazy():
    assert "ProgressTurn" in acp_adapter.__all__ and "make_agent_progress_cb" in acp_adapter.__all__
    for name in acp_adapter.__all__:
        assert getattr(acp_adapter, name) is not None
    assert (ROOT / "acp_adapter" / "py.typed").exists()
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, acp_adapter; print('acp' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert probe.stdout.strip() == "False", "importing the package must not import the SDK"


EXAMPLE = ["examples/embed_own_agent.py"]


@pytest.mark.anyio
async def test_the_readme_example_agent_runs_against_the_sdk_client(tmp_path, monkeypatch):
    from tests.helpers.example_agent import example_agent

    client = RecordingClient()
    with monkeypatch.context() as patched:
        agent = example_agent(patched, agent_env())
    async with sdk_served(agent, client) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        ok = await prompt_text(conn, sid, "hello there")
        n_ok = len(client.updates)
        failed = await prompt_text(conn, sid, "please fail")
        opened = asyncio.Event()
        client.on_update = lambda r: opened.set() if isinstance(r.update, ToolCallStart) else None
        task = asyncio.create_task(prompt_text(conn, sid, "slow one"))
        await asyncio.wait_for(opened.wait(), 5)
        cancel_at = time.monotonic()
        await conn.cancel(session_id=sid)
        cancelled = await asyncio.wait_for(task, 5)
        assert time.monotonic() - cancel_at < 1.0
    assert ok.stop_reason == "end_turn" and failed.stop_reason == "end_turn"
    assert cancelled.stop_reason == "cancelled"
    first = [r.update for r in client.updates[:n_ok]]
    assert isinstance(first[0], ToolCallStart) and first[0].kind == "think"
    assert any(isinstance(u, ToolCallProgress) and u.status == "in_progress" for u in first)
    assert any(isinstance(u, AgentThoughtChunk) for u in first)
    answer = "".join(u.content.text for u in first if isinstance(u, AgentMessageChunk))
    assert answer == "You said: hello there"
    cards = list(client.think_cards(sid).values())
    assert [final_status(c) for c in cards] == ["completed", "failed", "failed"]
    assert "RuntimeError" in cards[1][-1].content[0].content.text
    assert "Cancelled" in cards[2][-1].content[0].content.text


def test_the_readme_embedding_snippet_is_an_excerpt_of_the_tested_example():
    readme = (ROOT / "docs" / "embedding.md").read_text()
    section = readme.split("## Embedding the callbacks in your own agent", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    example = (ROOT / "examples" / "embed_own_agent.py").read_text()
    assert "examples/embed_own_agent.py" in section
    assert len(snippet.splitlines()) >= 10
    for chunk in snippet.strip().split("\n\n"):
        assert chunk.strip("\n") in example, chunk


@pytest.mark.e2e
def test_serve_answers_a_running_prompt_after_the_client_closes_its_input(tmp_path):
    """serve() runs on acp.run_agent; end of input reaches the SDK only after the turns answered."""
    import json
    import os

    from acp.schema import InitializeRequest, NewSessionRequest, PromptRequest, TextContentBlock

    def line(msg_id: int, method: str, params: Any) -> bytes:
        body = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": body}
        return (json.dumps(message) + "\n").encode()

    env = {**os.environ, **agent_env(ACP_PROGRESS_EMBEDDED_DELAY="5")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_adapter"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(line(1, "initialize", InitializeRequest(protocol_version=1)))
        proc.stdin.write(line(2, "session/new", NewSessionRequest(cwd=str(tmp_path), mcp_servers=[])))
        proc.stdin.flush()
        messages = [json.loads(proc.stdout.readline()) for _ in range(2)]
        session_id = messages[1]["result"]["sessionId"]
        prompt = PromptRequest(session_id=session_id, prompt=[TextContentBlock(type="text", text="hi")])
        proc.stdin.write(line(3, "session/prompt", prompt))
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        if first["params"]["update"]["sessionUpdate"] == "available_commands_update":  # session/new's
            first = json.loads(proc.stdout.readline())  # the think card opened: the turn is running
        assert first["params"]["update"]["sessionUpdate"] == "tool_call"
        started = time.monotonic()
        proc.stdin.close()
        rest = [json.loads(raw) for raw in proc.stdout.read().splitlines()]
        assert proc.wait(10) == 0
    finally:
        proc.kill()
    assert time.monotonic() - started < 3, "the turn was cancelled, not waited out"
    response = next(m for m in rest if m.get("id") == 3)
    assert response["result"]["stopReason"] == "cancelled"
    closing = [m for m in rest if m.get("method") == "session/update"]
    assert closing and closing[-1]["params"]["update"]["status"] == "failed"
    assert rest.index(closing[-1]) < rest.index(response), "the card closes before the response"


@pytest.mark.e2e
def test_watch_says_a_turn_that_failed_and_ended_end_turn_failed(tmp_path):
    """The example fails its think card and answers ``end_turn``: watch's last line says the turn
    failed (never ``stop reason: end_turn``), and the exit code (1) agrees with it. What watch
    prints and returns is the point: it runs in this process (the example agent is spawned)."""
    from tests.helpers.cli_inside import run_cli_inside

    done = run_cli_inside(
        [
            *("watch", "--no-animation", "--cwd", str(tmp_path)),
            *("--agent", f"{sys.executable} {ROOT / EXAMPLE[0]}", "please fail"),
        ],
        env={**agent_env(), "ACP_PROGRESS_SUMMARY": "off"},
        cwd=tmp_path,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stderr
    assert "stop reason: end_turn" not in done.stdout
    assert lines[-2].startswith("❌ turn failed:") and "RuntimeError" in lines[-2]
    assert lines[-1].strip() == "details: the agent ended the turn with stop reason end_turn"
