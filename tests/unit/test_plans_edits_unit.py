"""In-process checks of the pieces behind plans, edits and the editor's files: the plan tracker and
the plan tool's parser, atomic contained writes, the edit tools against a host, and the embedded
model's edit/write/numbered-list forms. The plans the agent sends are in test_plan_updates; the
real-process tests are tests/e2e/test_e2e_edits and test_e2e_images."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.agent.plans import build_plan
from acp_adapter.cancel import CancelToken
from acp_adapter.models.base import PlanStep, PlanUpdate
from acp_adapter.models.embedded_calls import _steps, planned_steps, write_call
from acp_adapter.models.plans import MAX_PLAN_STEPS, PlanTracker, parse_plan_arguments
from acp_adapter.tooling.builtin import default_toolbox
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.display import FileDiff
from acp_adapter.tooling.edits import edit_file
from acp_adapter.tooling.host import TerminalRun
from acp_adapter.tooling.paths import write_atomically
from acp_adapter.tooling.toolbox import PermissionDecision, ToolContext, ToolError

# ---------------------------------------------------------------- plans


def test_the_tracker_moves_each_step_with_its_calls_and_a_failure_says_so() -> None:
    tracker = PlanTracker()
    plan = PlanUpdate((PlanStep("Search", call_ids=("a",)), PlanStep("Wait", call_ids=("b", "c"))))
    assert tracker.replace(plan) and not tracker.replace(plan)
    assert tracker.call_started("a")
    assert [s.status for s in tracker.steps] == ["in_progress", "pending"]
    assert tracker.call_finished("a")
    assert tracker.call_started("b") and not tracker.call_started("c")
    assert tracker.call_finished("b", "boom") is False  # c still runs: the step is not done
    assert tracker.call_finished("c")
    assert [(s.content, s.status) for s in tracker.steps] == [
        ("Search", "completed"),
        ("Wait — failed: boom", "completed"),
    ]
    assert not tracker.call_finished("unknown")


def test_the_plan_tool_is_checked_and_bounded() -> None:
    ok = parse_plan_arguments({"plan": [{"step": "  a\nb ", "status": "in_progress", "priority": "high"}]})
    assert ok.steps == (PlanStep("a b", "in_progress", "high"),)
    for bad, why in [
        ({}, "must be a list"),
        ({"plan": ["x"]}, "step 1 must be an object"),
        ({"plan": [{"content": " ", "status": "pending"}]}, "step 1 has no content"),
        ({"plan": [{"content": "x", "priority": "urgent"}]}, "priority must be"),
        ({"plan": [{"content": "x"}] * (MAX_PLAN_STEPS + 1)}, f"at most {MAX_PLAN_STEPS} steps"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_plan_arguments(bad)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.sampled_from(["plan", "explanation", "x"]), json_values, max_size=3))
def test_the_plan_parser_answers_any_json_with_a_plan_or_a_value_error(arguments: dict[str, Any]) -> None:
    try:
        update = parse_plan_arguments(arguments)
    except ValueError:
        return
    assert all(step.content and "\n" not in step.content for step in update.steps)


def test_plan_entries_are_redacted_and_one_line() -> None:
    secret = "sk-" + "a1B2" * 12
    update = build_plan([PlanStep(f"use key {secret}\nnow", "pending")])
    assert secret not in update.entries[0].content and "\n" not in update.entries[0].content


# ---------------------------------------------------------------- the embedded model's forms


TOOLS = {"search", "wait", "run_command", "read_file", "list_dir", "edit_file", "write_file"}


def test_numbered_lists_and_edits_are_steps_and_write_takes_the_rest() -> None:
    assert _steps("Do:\n1. search for TODO\n2) wait 1 second then list files") == [
        "search for TODO\n",
        "wait 1 second",
        "list files",
    ]
    steps = planned_steps('edit a.py: replace "x; then y" with "z" and then run ls', TOOLS)
    assert [(text, [c.name for c in calls]) for text, calls in steps] == [
        ('edit a.py: replace "x; then y" with "z"', ["edit_file"]),
        ("run ls", ["run_command"]),
    ]
    assert dict(steps[0][1][0].arguments) == {"path": "a.py", "old_text": "x; then y", "new_text": "z"}
    call = write_call("write notes.md: a\nand then b", TOOLS)
    assert call is not None and dict(call.arguments) == {"path": "notes.md", "content": "a\nand then b"}
    assert write_call("write notes.md: x", {"read_file"}) is None


# ---------------------------------------------------------------- contained atomic writes


def test_writes_are_atomic_keep_the_mode_and_never_follow_a_symlink(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "a.sh"
    target.write_text("old")
    target.chmod(0o750)
    assert write_atomically(ws, target, "new") is False
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o750
    assert write_atomically(ws, ws / "deep" / "er" / "b.txt", "b") is True
    assert (ws / "deep" / "er" / "b.txt").read_text() == "b"
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "link")  # a directory swapped for a symlink after the check
    with pytest.raises(ToolError, match="cannot write"):
        write_atomically(ws, ws / "link" / "c.txt", "c")
    os.symlink(tmp_path / "victim.txt", ws / "file-link")
    with pytest.raises(ToolError, match="is a symlink"):
        write_atomically(ws, ws / "file-link", "x")
    assert not (outside / "c.txt").exists() and not (tmp_path / "victim.txt").exists()
    assert sorted(p.name for p in ws.iterdir()) == ["a.sh", "deep", "file-link", "link"], "no temp left"


def test_edit_tools_through_the_toolbox_ask_and_refuse_clearly(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one two two\n")
    box = default_toolbox(tmp_path)
    asked: list[str] = []

    def allow(call: ToolCall, tool: Any) -> PermissionDecision:
        asked.append(call.name)
        return PermissionDecision(True)

    def run(name: str, args: dict[str, Any]) -> Any:
        return box.execute(ToolCall("c", name, args), cancel=CancelToken(), permission=allow)

    assert "appears 2 times" in (
        run("edit_file", {"path": "a.txt", "old_text": "two", "new_text": "2"}).error or ""
    )
    done = run("edit_file", {"path": "a.txt", "old_text": "one", "new_text": "1"})
    assert done.ok and done.display == (FileDiff(str(tmp_path / "a.txt"), "1 two two\n", "one two two\n"),)
    assert "no such file" in (
        run("edit_file", {"path": "b.txt", "old_text": "x", "new_text": "y"}).error or ""
    )
    assert "nothing to change" in (
        run("edit_file", {"path": "a.txt", "old_text": "1", "new_text": "1"}).error or ""
    )
    (tmp_path / "bin").write_bytes(b"\x00\x01")
    assert "binary" in (run("edit_file", {"path": "bin", "old_text": "x", "new_text": "y"}).error or "")
    assert asked == ["edit_file"], "only the edit that can apply asks"
    denied = box.execute(
        ToolCall("d", "write_file", {"path": "new.txt", "content": "x"}), cancel=CancelToken()
    )
    assert not denied.ok and not (tmp_path / "new.txt").exists(), "nobody to ask: nothing written"


class _Host:
    """A client that offers reads and writes (its buffer differs from the disk)."""

    reads_files = writes_files = True
    runs_terminals = False

    def __init__(self, buffer: str) -> None:
        self.buffer = buffer
        self.written: list[tuple[str, str]] = []

    def read_text(self, path: str) -> str:
        return self.buffer

    def write_text(self, path: str, content: str) -> None:
        self.written.append((path, content))

    def run_terminal(self, *args: Any) -> TerminalRun:
        raise AssertionError("not offered")


def test_an_edit_through_the_host_edits_the_buffer_and_leaves_the_disk_to_the_editor(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("disk\n")
    host = _Host("buffer\n")
    ctx = ToolContext(ToolCall("c", "edit_file", {}), tmp_path, CancelToken(), None, host)
    done = edit_file({"path": "a.txt", "old_text": "buffer", "new_text": "edited"}, ctx)
    assert host.written == [(str(tmp_path / "a.txt"), "edited\n")]
    assert (tmp_path / "a.txt").read_text() == "disk\n"
    assert done.display == (FileDiff(str(tmp_path / "a.txt"), "edited\n", "buffer\n"),)
    with pytest.raises(ToolError, match="outside the workspace"):
        edit_file({"path": "../x.txt", "old_text": "a", "new_text": "b"}, ctx)
