"""Edits with diffs, and the editor's own files and terminals, end to end over stdio.

The agent is a real process; the client is the SDK's client side. One client advertises nothing
(the tools work on the disk), one advertises ``fs`` and ``terminal`` and implements them (unsaved
buffers are read, the client applies writes, commands run in its terminals), one fails every call
(only that tool call fails). Capabilities are per connection, so the module shares two agent
processes (:mod:`tests.helpers.shared_agent`): one whose client advertises nothing and one whose
client advertises the editor's capabilities; each test has its own session and client, and the
shared client hands each session's file and terminal calls to the test's own editor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from acp.schema import (
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallStart,
)

from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.editor_client import EDITOR, EditorClient, EditorRouter, spawn
from tests.helpers.shared_agent import SharedAgent, shared_agent_process

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def plain_agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    """The agent process shared by the tests whose client advertises no capabilities."""
    async with shared_agent_process(agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05")) as shared:
        yield shared


def tool_cards(client: RecordingClient, session_id: str) -> list[list[Any]]:
    return [
        ups
        for ups in client.cards(session_id).values()
        if isinstance(ups[0], ToolCallStart) and ups[0].kind != "think"
    ]


def content_of(card: list[Any], kind: type) -> list[Any]:
    return [c for u in card for c in (u.content or []) if isinstance(c, kind)]


def text_of(update: Any) -> str:
    return " ".join(getattr(c.content, "text", "") for c in (update.content or []) if c.type == "content")


async def test_edit_file_shows_a_diff_asks_first_and_changes_the_file(tmp_path, plain_agent):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\nbeta\ngamma\n")
    client = RecordingClient()
    conn = plain_agent.conn
    session = await plain_agent.new_session(client, tmp_path)
    response = await prompt_text(conn, session.session_id, 'edit notes.txt: replace "beta" with "BETA"')
    assert response.stop_reason == "end_turn"
    assert target.read_text() == "alpha\nBETA\ngamma\n"
    (card,) = tool_cards(client, session.session_id)
    assert card[0].kind == "edit" and card[0].title == "Editing notes.txt"
    assert [loc.path for loc in card[0].locations] == [str(target)]
    (asked,) = client.permission_requests
    assert asked.tool_call_id == card[0].tool_call_id and asked.kind == "edit"
    # the person sees what they allow: the diff is on the question (and on the card meanwhile)
    (proposed,) = [c for c in asked.content or [] if isinstance(c, FileEditToolCallContent)]
    assert (proposed.old_text, proposed.new_text) == ("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")
    assert len(content_of(card, FileEditToolCallContent)) == 2
    assert final_status(card) == "completed"
    diff = content_of(card, FileEditToolCallContent)[-1]
    assert diff.path == str(target)
    assert diff.old_text == "alpha\nbeta\ngamma\n" and diff.new_text == "alpha\nBETA\ngamma\n"
    assert "Replaced 1 occurrence in notes.txt (line 2)" in client.answer(session.session_id)


async def test_edit_refuses_absent_or_ambiguous_text_and_a_denied_edit_changes_nothing(tmp_path, plain_agent):
    target = tmp_path / "a.txt"
    target.write_text("x x\n")
    client = RecordingClient()
    conn = plain_agent.conn
    session = await plain_agent.new_session(client, tmp_path)
    await prompt_text(conn, session.session_id, 'edit a.txt: replace "y" with "z"')
    await prompt_text(conn, session.session_id, 'edit a.txt: replace "x" with "z"')
    await prompt_text(conn, session.session_id, 'edit ../a.txt: replace "x" with "z"')
    client.permission = "reject"
    await prompt_text(conn, session.session_id, 'edit a.txt: replace "x x" with "z"')
    cards = tool_cards(client, session.session_id)
    assert [final_status(c) for c in cards] == ["failed"] * 4
    reasons = [text_of(c[-1]) for c in cards]
    assert "was not found in a.txt" in reasons[0]
    assert "appears 2 times in a.txt" in reasons[1]
    assert "outside the workspace" in reasons[2]
    assert "Permission denied by the user" in reasons[3]
    assert len(client.permission_requests) == 1, "an edit that cannot apply is refused without asking"
    assert target.read_text() == "x x\n"
    assert not content_of(cards[0], FileEditToolCallContent)


async def test_write_file_creates_a_file_with_a_diff_from_nothing(tmp_path, plain_agent):
    client = RecordingClient()
    conn = plain_agent.conn
    session = await plain_agent.new_session(client, tmp_path)
    await prompt_text(conn, session.session_id, "write docs/hello.md: # Hello\nthen more text\n")
    assert (tmp_path / "docs" / "hello.md").read_text() == "# Hello\nthen more text\n"
    (card,) = tool_cards(client, session.session_id)
    assert card[0].kind == "edit" and final_status(card) == "completed"
    diff = content_of(card, FileEditToolCallContent)[-1]
    assert diff.old_text is None and diff.new_text == "# Hello\nthen more text\n"


# ---------------------------------------------------------------- the editor's files and terminals


@pytest.fixture(scope="module")
async def editor_agent(anyio_backend: str) -> AsyncIterator[SharedAgent]:
    """The agent process shared by the tests whose client is an editor (``fs`` and ``terminal``)."""
    router = EditorRouter()
    async with spawn(router, EDITOR) as (conn, process, log):
        yield SharedAgent(conn, router, process, log)


async def test_an_editor_that_offers_fs_is_read_and_applies_the_edit(tmp_path, editor_agent):
    target = tmp_path / "main.py"
    target.write_text("print('on disk')\n")
    client = EditorClient(buffers={str(target): "print('unsaved buffer')\n"})
    conn = editor_agent.conn
    session = await editor_agent.new_session(client, tmp_path)
    await prompt_text(conn, session.session_id, "read main.py")
    await prompt_text(conn, session.session_id, 'edit main.py: replace "unsaved buffer" with "edited"')
    read_card, edit_card = tool_cards(client, session.session_id)
    assert "unsaved buffer" in text_of(read_card[-1])
    assert "unsaved buffer" in client.answer(session.session_id)
    assert client.writes == [(str(target), "print('edited')\n")]
    assert target.read_text() == "print('on disk')\n", "the editor applies the edit, not the agent"
    diff = content_of(edit_card, FileEditToolCallContent)[-1]
    assert diff.old_text == "print('unsaved buffer')\n" and diff.new_text == "print('edited')\n"
    # the read, the edit's preview (before the permission question), the edit, the write
    assert client.calls == ["fs/read_text_file"] * 3 + ["fs/write_text_file"]


async def test_an_editor_that_offers_terminals_runs_the_command_on_the_card(tmp_path, editor_agent):
    (tmp_path / "hello.txt").write_text("hi\n")
    client = EditorClient()
    conn = editor_agent.conn
    session = await editor_agent.new_session(client, tmp_path)
    response = await prompt_text(conn, session.session_id, "run ls -la")
    assert response.stop_reason == "end_turn"
    (card,) = tool_cards(client, session.session_id)
    assert card[0].kind == "execute" and final_status(card) == "completed"
    refs = content_of(card, TerminalToolCallContent)
    assert refs and {r.terminal_id for r in refs} == {refs[0].terminal_id}
    assert "hello.txt" in text_of(card[-1]) and "hello.txt" in client.answer(session.session_id)
    assert client.calls == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    assert len(client.permission_requests) == 1


async def test_cancel_kills_the_editors_terminal(tmp_path, editor_agent):
    client = EditorClient()
    conn = editor_agent.conn
    session = await editor_agent.new_session(client, tmp_path)
    task = asyncio.create_task(prompt_text(conn, session.session_id, "run sleep 30"))
    await asyncio.wait_for(client.terminal_started.wait(), 10)
    await conn.cancel(session_id=session.session_id)
    response = await asyncio.wait_for(task, 10)
    await asyncio.wait_for(client.released.wait(), 5)
    assert response.stop_reason == "cancelled"
    assert "terminal/kill" in client.calls and "terminal/release" in client.calls
    assert client.terminals == {}
    (card,) = tool_cards(client, session.session_id)
    assert final_status(card) == "failed"


async def test_cancel_does_not_wait_for_an_editor_that_never_answers_a_read(tmp_path, editor_agent):
    (tmp_path / "a.txt").write_text("x\n")
    client = EditorClient(hang=True)
    conn = editor_agent.conn
    session = await editor_agent.new_session(client, tmp_path)
    task = asyncio.create_task(prompt_text(conn, session.session_id, "read a.txt"))
    await asyncio.wait_for(client.read_asked.wait(), 10)
    started = asyncio.get_running_loop().time()
    await conn.cancel(session_id=session.session_id)
    response = await asyncio.wait_for(task, 5)
    waited = asyncio.get_running_loop().time() - started
    assert response.stop_reason == "cancelled" and waited < 2
    (card,) = tool_cards(client, session.session_id)
    assert final_status(card) == "failed"


async def test_a_client_that_fails_its_calls_fails_only_the_tool_call(tmp_path, editor_agent):
    (tmp_path / "a.txt").write_text("x\n")
    client = EditorClient(fail=True)
    conn = editor_agent.conn
    session = await editor_agent.new_session(client, tmp_path)
    first = await prompt_text(conn, session.session_id, "read a.txt and then run ls")
    second = await prompt_text(conn, session.session_id, "what is 2 + 3")
    assert first.stop_reason == second.stop_reason == "end_turn"
    read_card, run_card = tool_cards(client, session.session_id)
    assert final_status(read_card) == final_status(run_card) == "failed"
    assert "the editor could not read" in text_of(read_card[-1])
    assert "fs/read_text_file is broken in this editor" in text_of(read_card[-1])
    assert "terminal/create is broken in this editor" in text_of(run_card[-1])
    assert "2 + 3 = 5" in client.answer(session.session_id)


@pytest.mark.parametrize("editor", [False, True])
async def test_edits_and_editor_reads_never_leave_the_workspace(tmp_path, editor, plain_agent, editor_agent):
    """The attack: a symlink in the workspace to a file outside it (a dotfile, a key), or a path
    with ``..`` — an edit or a write through it, or a read the editor would gladly serve."""
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link.txt").symlink_to(outside)
    client = EditorClient() if editor else RecordingClient()
    shared = editor_agent if editor else plain_agent
    conn = shared.conn
    sid = (await shared.new_session(client, ws)).session_id
    await prompt_text(conn, sid, 'edit link.txt: replace "secret" with "pwned"')
    await prompt_text(conn, sid, "write link.txt: pwned")
    await prompt_text(conn, sid, "write ../outside.txt: pwned")
    await prompt_text(conn, sid, "read ../outside.txt")
    cards = tool_cards(client, sid)
    assert [final_status(c) for c in cards] == ["failed"] * 4
    assert all("outside the workspace" in text_of(c[-1]) for c in cards)
    assert outside.read_text() == "secret\n" and (ws / "link.txt").is_symlink()
    assert client.permission_requests == [], "nothing that cannot run is asked about"
    if editor:
        assert client.calls == [], "the editor is never asked for a path outside the workspace"
