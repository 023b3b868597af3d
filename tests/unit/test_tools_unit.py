"""The toolbox, the built-in tools and the ACP card builders, in process."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.tooling.builtin import default_toolbox
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.paths import resolve_in_workspace
from acp_adapter.tooling.toolbox import (
    Tool,
    Toolbox,
    ToolContext,
    ToolError,
    ToolOutcome,
    ToolReturn,
    check_arguments,
)
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_failed,
    build_thinking_progress,
    build_thinking_start,
    build_tool_complete,
    build_tool_failed,
    build_tool_progress,
    build_tool_start,
)


class Observer:
    def __init__(self, allow: bool = True) -> None:
        self.events: list[tuple[str, Any]] = []
        self.allow = allow

    def tool_started(self, call: ToolCall, tool: Tool | None) -> None:
        self.events.append(("started", call.name))

    def tool_progress(self, call: ToolCall, value: Any, total: Any, message: Any) -> None:
        self.events.append(("progress", (value, total, message)))

    def tool_finished(self, call: ToolCall, outcome: ToolOutcome) -> None:
        self.events.append(("finished", outcome))

    def request_permission(self, call: ToolCall, tool: Tool) -> bool:
        self.events.append(("permission", call.name))
        return self.allow


def run(
    box: Toolbox, name: str, args: dict[str, Any], observer: Observer | None = None, allow: bool = False
) -> ToolOutcome:
    permission = (lambda call, tool: True) if allow else None
    call = ToolCall("c1", name, args)
    return box.execute(call, cancel=CancelToken(), observer=observer, permission=permission)


def test_workspace_paths_reject_escapes_and_outbound_symlinks(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", ws / "out")
    (ws / "in.txt").write_text("ok")
    os.symlink(ws / "in.txt", ws / "inner")
    assert resolve_in_workspace(ws.resolve(), "inner") == (ws / "in.txt").resolve()
    for bad in ("../secret", "out", str(tmp_path / "secret"), "a/../../secret", "~/x"):
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(ws.resolve(), bad)
    with pytest.raises(ToolError, match="non-empty"):
        resolve_in_workspace(ws.resolve(), "  ")


def test_read_list_and_search_work_inside_the_workspace(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Title\nTODO: write\n")
    (tmp_path / "b.bin").write_bytes(b"\x00\x01TODO")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x").write_text("TODO hidden")
    box = default_toolbox(tmp_path)
    read = run(box, "read_file", {"path": "docs/a.md"})
    assert read.ok and read.text.startswith("# Title") and read.raw_output["lines"] == 2
    listing = run(box, "list_dir", {})
    assert listing.ok and "docs/" in listing.text and ".git/" in listing.text
    observer = Observer()
    found = run(box, "search", {"query": "todo"}, observer)
    assert found.ok and found.text.splitlines()[1] == "docs/a.md:2: TODO: write"
    assert found.raw_output == {"matches": 1, "files": 1, "listed": 1}
    progress = [e[1] for e in observer.events if e[0] == "progress"]
    assert progress[0] == (0, 2, "Scanning 2 files") and progress[-1] == (2, 2, "Scanned 2/2 files")
    binary = run(box, "read_file", {"path": "b.bin"})
    assert not binary.ok and "binary" in (binary.error or "")


def test_argument_checks_give_clear_errors(tmp_path):
    box = default_toolbox(tmp_path)
    assert run(box, "read_file", {}).error == "read_file: missing required argument 'path'"
    assert run(box, "read_file", {"path": 3}).error == "read_file: argument 'path' must be string, got int"
    assert run(box, "read_file", {"path": "x", "mode": "w"}).error == "read_file: unknown argument 'mode'"
    assert run(box, "nope", {}).error == "unknown tool 'nope'"
    tool = box.get("wait")
    assert tool is not None
    with pytest.raises(ToolError, match="must be number, got bool"):
        check_arguments(tool, {"seconds": True})


@pytest.mark.e2e
def test_dangerous_tools_ask_and_a_denial_fails_with_a_reason(tmp_path):
    box = default_toolbox(tmp_path)
    denied = Observer(allow=False)
    outcome = run(box, "run_command", {"command": "echo hi"}, denied)
    assert not outcome.ok and outcome.error == "Permission denied by the user"
    assert ("permission", "run_command") in denied.events
    allowed = Observer(allow=True)
    outcome = run(box, "run_command", {"command": "echo hi; echo there >&2; exit 3"}, allowed)
    # a command that exits non-zero is a failure that shows its exit code; its output stays readable
    assert not outcome.ok and outcome.error == "exit code 3" and outcome.raw_output["exit_code"] == 3
    assert "hi" in outcome.text and "there" in outcome.text and "(exit code 3)" in outcome.text
    assert run(box, "run_command", {"command": "true"}, allowed).ok


def test_a_failed_command_card_says_its_exit_code_first_and_keeps_the_output():
    from acp_adapter.tools import build_tool_failed

    card = build_tool_failed(
        "c1", "exit code 2", text="ls: no such file\n(exit code 2)", raw_output={"exit_code": 2}
    )
    assert card.status == "failed" and card.raw_output == {"exit_code": 2}
    shown = card.content[0].content.text
    assert shown.startswith("exit code 2\n\n") and "ls: no such file" in shown
    assert card.field_meta["acpProgress"]["error"] == "exit code 2"
    assert build_tool_failed("c2", "Cancelled").content[0].content.text == "Cancelled"


@pytest.mark.e2e
def test_run_command_timeout_and_cancel_kill_the_process_tree(tmp_path):
    box = default_toolbox(tmp_path)
    started = time.monotonic()
    outcome = run(box, "run_command", {"command": "sleep 30 & sleep 30", "timeout": 0.3}, allow=True)
    assert not outcome.ok and outcome.error == "command timed out after 0.3s"
    assert time.monotonic() - started < 3
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    started = time.monotonic()
    with pytest.raises(TurnCancelled):
        box.execute(
            ToolCall("c2", "run_command", {"command": "sleep 30"}),
            cancel=cancel,
            permission=lambda call, tool: True,
        )
    assert time.monotonic() - started < 3


def test_progress_after_the_terminal_phase_is_dropped():
    reports: list[Any] = []
    ctx = ToolContext(
        ToolCall("c", "t", {}),
        cwd=__import__("pathlib").Path("."),
        cancel=CancelToken(),
        report=lambda *a: reports.append(a),
    )
    ctx.progress()  # empty: nothing
    ctx.progress(1, 2)
    ctx.close()
    ctx.progress(2, 2)
    assert reports == [(1, 2, None)]


def test_a_raising_tool_gives_a_failed_outcome_and_observer_errors_are_contained(tmp_path):
    def explode(args: Any, ctx: ToolContext) -> ToolReturn:
        raise ValueError("kaboom")

    class BadObserver(Observer):
        def tool_started(self, call: ToolCall, tool: Tool | None) -> None:
            raise RuntimeError("observer broke")

    box = Toolbox([Tool("explode", "x", {"type": "object", "properties": {}}, explode)], tmp_path)
    outcome = run(box, "explode", {}, BadObserver())
    assert not outcome.ok and outcome.error == "ValueError: kaboom"


def test_think_card_builders():
    start = build_thinking_start("t1")
    assert (start.kind, start.title, start.status, start.session_update) == (
        "think",
        "Thinking...",
        "in_progress",
        "tool_call",
    )
    beat = build_thinking_progress("t1", 90.0)
    assert beat.status == "in_progress" and beat.content[0].content.text == "Still thinking… 1m 30s"
    done = build_thinking_complete("t1", 2.5)
    assert done.status == "completed" and done.content[0].content.text == "Thought for 2.5s"
    failed = build_thinking_failed("t1", "boom\nwith\ttraceback " + "x" * 500, 1.0)
    text = failed.content[0].content.text
    assert failed.status == "failed" and "\n" not in text and len(text) < 260


def test_tool_card_builders_redact_everything():
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    start = build_tool_start(
        "c1", f"Running curl -H 'Authorization: token {secret}'", "execute", raw_input={"token": secret}
    )
    progress = build_tool_progress("c1", value=3, total=10, message=f"sent {secret}")
    done = build_tool_complete("c1", f"output {secret}", raw_output={"env": f"GITHUB_TOKEN={secret}"})
    failed = build_tool_failed("c1", f"error with {secret}")
    for update in (start, progress, done, failed):
        assert secret not in update.model_dump_json()
    assert start.status == "in_progress" and start.raw_input == {"token": "[REDACTED]"}
    assert progress.field_meta["acpProgress"]["progress"]["value"] == 3
    odd = build_tool_progress("c1", value=f"token {secret}", message="m")  # type: ignore[arg-type]
    assert secret not in odd.model_dump_json(), "a value that is not a number is still redacted"
    only_counts = build_tool_progress("c1", value=3, total=10)
    assert only_counts.content[0].content.text == "Progress: 3/10"
    assert "message" not in only_counts.field_meta["acpProgress"]["progress"]


def test_unparseable_model_arguments_fail_with_a_clear_reason(tmp_path):
    outcome = run(default_toolbox(tmp_path), "search", {"_raw": '{"query": "TO'})
    assert outcome.error == "search: the model's arguments are not valid JSON: '{\"query\": \"TO'"


def test_search_counts_every_match_once_for_the_card_and_the_answer(tmp_path):
    """The card and the answer count the same files: not "200 matches in 34 files" on the card and
    "31 files" in the answer (one counting the listed 200, the other every file)."""
    from acp_adapter.models.base import Message
    from acp_adapter.models.embedded import answer_from_tools

    for i in range(30):
        (tmp_path / f"f{i:02}.txt").write_text("".join(f"TODO {j}\n" for j in range(8)))
    box = default_toolbox(tmp_path)
    outcome = run(box, "search", {"query": "TODO"})
    assert outcome.summary == "240 matches in 30 files"
    assert outcome.text.splitlines()[0] == "240 matches in 30 files (scanned 30 files; the first 200 listed)"
    assert outcome.raw_output == {"matches": 240, "files": 30, "listed": 200}
    call = ToolCall("c1", "search", {"query": "TODO"})
    messages = [
        Message("user", "search for TODO"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", outcome.text, tool_call_id="c1", name="search"),
    ]
    answer = answer_from_tools(messages)
    assert "found 240 matches in 30 files" in answer and "… and 228 more" in answer


def test_fifos_sockets_and_devices_are_never_read_so_no_tool_hangs(tmp_path):
    """read_file and search never open a FIFO in the workspace (they would wait for a writer for
    ever) nor read a device node such as /dev/zero (to the cap)."""
    import socket
    import stat
    import time

    from acp_adapter.tooling.builtin import open_regular

    (tmp_path / "ok.txt").write_text("TODO here\n")
    os.mkfifo(tmp_path / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    devices = []
    if os.geteuid() == 0:  # a device node needs root to make (CI runs as root)
        os.mknod(tmp_path / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
        devices.append("zero")
    box = default_toolbox(tmp_path)
    started = time.monotonic()
    for name in ["pipe", "sock", *devices]:
        outcome = run(box, "read_file", {"path": name})
        error = outcome.error or ""  # a socket cannot even be opened (ENXIO): refused either way
        assert not outcome.ok and ("is not a regular file" in error or "cannot open" in error), (
            name,
            outcome,
        )
    found = run(box, "search", {"query": "TODO"})
    assert found.ok and found.summary == "1 match in 1 file"
    assert time.monotonic() - started < 5
    sock.close()
    # a symlink swapped in after the path was checked is refused, not followed out of the workspace
    (tmp_path / "outside.txt").write_text("secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(tmp_path / "outside.txt", ws / "link.txt")
    with pytest.raises(ToolError, match="cannot open"):
        open_regular(ws, ws / "link.txt")
