"""``additionalDirectories``: the session's extra roots, advertised and honoured.

The read, list and search tools may read inside the workspace and inside each additional directory
the client named, and nowhere else: an absolute path beyond every root, a relative path that climbs
out of the workspace, a symlink in an extra root that points out of it, and writes (edits stay in the
workspace) are all refused. The agent checks the list like ``cwd`` (absolute, existing, bounded).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError

from acp_adapter.cancel import CancelToken
from acp_adapter.tooling.builtin import default_toolbox
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.toolbox import ToolOutcome
from tests.helpers.acp_agent import RecordingClient
from tests.helpers.shared_agent import progress_agent, served_inprocess


def _roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, extra, outside = tmp_path / "ws", tmp_path / "extra", tmp_path / "outside"
    for directory in (ws, extra / "lib", outside):
        directory.mkdir(parents=True)
    (ws / "main.py").write_text("import helper  # needle\n")
    (extra / "lib" / "helper.py").write_text("def helper():  # needle in the extra root\n    pass\n")
    (outside / "secret.txt").write_text("needle outside every root\n")
    os.symlink(outside / "secret.txt", extra / "lib" / "escape.txt")
    return ws, extra, outside


def _run(box: Any, name: str, args: dict[str, Any]) -> ToolOutcome:
    outcome: ToolOutcome = box.execute(
        ToolCall("c1", name, args), cancel=CancelToken(), permission=lambda call, tool: True
    )
    return outcome


def test_tools_read_list_and_search_in_an_additional_directory_and_nowhere_else(tmp_path: Path) -> None:
    ws, extra, outside = _roots(tmp_path)
    box = default_toolbox(ws, (str(extra),))
    read = _run(box, "read_file", {"path": str(extra / "lib" / "helper.py")})
    assert read.ok and "needle in the extra root" in read.text
    listed = _run(box, "list_dir", {"path": str(extra)})
    assert listed.ok and "helper.py" in listed.text
    found = _run(box, "search", {"query": "needle", "path": str(extra)})
    assert found.ok and "helper.py" in found.text and "secret" not in found.text, found.text

    for escape in (str(outside / "secret.txt"), "../outside/secret.txt", "../extra/lib/helper.py"):
        refused = _run(box, "read_file", {"path": escape})
        assert not refused.ok and "outside the workspace" in (refused.error or ""), escape
    # a symlink in the extra root that points out of it is never followed
    linked = _run(box, "read_file", {"path": str(extra / "lib" / "escape.txt")})
    assert not linked.ok and "needle outside" not in linked.text
    # writes stay in the workspace: the extra roots are for reading
    write = _run(box, "write_file", {"path": str(extra / "lib" / "new.py"), "content": "x = 1\n"})
    assert not write.ok and not (extra / "lib" / "new.py").exists()
    # without the extra root, the same read is refused
    assert not _run(default_toolbox(ws), "read_file", {"path": str(extra / "lib" / "helper.py")}).ok


@pytest.mark.anyio
async def test_the_agent_advertises_checks_and_honours_additional_directories(tmp_path: Path) -> None:
    ws, extra, _outside = _roots(tmp_path)
    agent = progress_agent(state_dir=str(tmp_path / "state"))
    async with served_inprocess(RecordingClient(), agent) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.agent_capabilities.session_capabilities.additional_directories is not None
        sid = (
            await conn.new_session(cwd=str(ws), mcp_servers=[], additional_directories=[str(extra)])
        ).session_id
        box = agent.sessions.get(sid).toolbox
        assert box.extra_roots == (extra.resolve(),)
        assert _run(box, "read_file", {"path": str(extra / "lib" / "helper.py")}).ok
        # a fork names its own roots: none given, none kept
        fork = (await conn.fork_session(session_id=sid, cwd=str(ws), mcp_servers=[])).session_id
        assert agent.sessions.get(fork).toolbox.extra_roots == ()
        resumed = await conn.resume_session(
            cwd=str(ws), session_id=fork, mcp_servers=[], additional_directories=[str(extra)]
        )
        assert resumed is not None and agent.sessions.get(fork).toolbox.extra_roots == (extra.resolve(),)

        bad_lists: list[list[str]] = [
            ["relative/dir"],
            [str(tmp_path / "missing")],
            [str(ws / "main.py")],
            [str(extra)] * 33,
        ]
        for bad in bad_lists:
            with pytest.raises(RequestError) as err:
                await conn.new_session(cwd=str(ws), mcp_servers=[], additional_directories=bad)
            assert err.value.code == -32602 and "additionalDirectories" in str(err.value.data)
