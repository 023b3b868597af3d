"""A hard link inside the workspace may be the very file of one outside it: the read and search
tools read such a file only after the person allowed it.

The attack: ``linked.txt`` in the workspace is a second name of ``outside/secret.txt``. The
workspace check (paths, symlinks) sees nothing wrong with it; a link count above one is the only
sign. The agent (served in this process, as ``serve`` builds it) must ask before ``read_file`` or
``search`` reads it, say why in the question, and keep the text from the model when refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_adapter.cancel import CancelToken
from acp_adapter.tooling.builtin import default_toolbox
from acp_adapter.tooling.calls import ToolCall
from tests.helpers.acp_agent import RecordingClient, agent_env, final_status, prompt_text
from tests.helpers.choosing_client import ChoosingClient, agent_from_env
from tests.helpers.shared_agent import served_inprocess

SECRET = "TOP-SECRET-outside-the-workspace"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"needle {SECRET}\n")
    work = tmp_path / "work"
    work.mkdir()
    os.link(outside / "secret.txt", work / "linked.txt")
    (work / "plain.txt").write_text("nothing to hide\n")
    return work


def _tool_cards(client: RecordingClient, sid: str) -> list[list[object]]:
    return [ups for ups in client.cards(sid).values() if getattr(ups[0], "kind", None) != "think"]


def _everything_said(client: RecordingClient, sid: str) -> str:
    return repr(client.for_session(sid))


@pytest.mark.anyio
async def test_a_hard_linked_file_is_read_only_after_asking(workspace: Path, tmp_path: Path) -> None:
    # 0.05 s a step, not the suite's 0.3 s: nothing here is timed against the model
    env = agent_env(ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"), ACP_PROGRESS_EMBEDDED_DELAY="0.05")
    client = RecordingClient(permission="reject")
    async with served_inprocess(client, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "read plain.txt")  # one name, one file: not asked
        assert client.permission_requests == []
        await prompt_text(conn, sid, "read linked.txt")
        (asked,) = client.permission_requests
        assert "hard link" in asked.title and "outside the workspace" in asked.title
        card = _tool_cards(client, sid)[-1]
        assert final_status(card) == "failed"
        assert SECRET not in _everything_said(client, sid), "the hard link was read unasked"
        await prompt_text(conn, sid, "search the workspace for needle")
        assert len(client.permission_requests) == 2
        assert "hard-linked file" in client.permission_requests[1].title
        assert SECRET not in _everything_said(client, sid), "the search read the hard link unasked"

    allowing = ChoosingClient(choices=["allow_always"])
    async with served_inprocess(allowing, agent_from_env(env)) as conn:
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "read linked.txt")
        assert allowing.offered[0][1] == "allow_always"
        assert SECRET in _everything_said(allowing, sid)
        await prompt_text(conn, sid, "search the workspace for needle")  # "always": not asked again
        assert len(allowing.permission_requests) == 1
        assert final_status(_tool_cards(allowing, sid)[-1]) == "completed"


def test_with_nobody_to_ask_a_hard_linked_file_is_not_read(workspace: Path) -> None:
    toolbox = default_toolbox(workspace)
    outcome = toolbox.execute(ToolCall("c1", "read_file", {"path": "linked.txt"}), cancel=CancelToken())
    assert not outcome.ok and "denied automatically" in (outcome.error or "")
    assert "hard link" in (outcome.error or "") and SECRET not in outcome.text
    found = toolbox.execute(ToolCall("c2", "search", {"query": "needle"}), cancel=CancelToken())
    assert found.ok and SECRET not in found.text and "1 hard-linked file not searched" in found.text
    plain = toolbox.execute(ToolCall("c3", "read_file", {"path": "plain.txt"}), cancel=CancelToken())
    assert plain.ok and "nothing to hide" in plain.text


@pytest.mark.e2e
@pytest.mark.anyio
async def test_an_editor_is_not_asked_for_a_hard_linked_file_nobody_allowed(workspace: Path) -> None:
    """With an editor that serves ``fs/read_text_file``, the same question comes first, and a
    refused read never reaches the editor (a real agent process)."""
    from tests.helpers.editor_client import EDITOR, EditorClient, spawn

    client = EditorClient(permission="reject")
    async with spawn(client, EDITOR) as (conn, _process, _log):
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await prompt_text(conn, sid, "read linked.txt")
    (asked,) = client.permission_requests
    assert "hard link" in asked.title
    assert client.calls == [], "the editor was asked to read a hard link nobody allowed"
    assert SECRET not in _everything_said(client, sid)


def test_the_terminal_question_says_why_a_read_asks() -> None:
    from acp_adapter.frontends.plain.permission import permission_question
    from acp_adapter.tooling.builtin import hard_link_concern

    concern = hard_link_concern("linked.txt is a hard link", 2)
    question = permission_question(ToolCall("c", "read_file", {"path": "linked.txt"}, concern))
    assert question.startswith("Allow read_file? linked.txt is a hard link (2 names for one file)")
    assert question.endswith("[y/N] ")
