"""``watch --continue`` / ``--session`` and ``chat --session`` show a loaded session's earlier turns as
the live view showed them: the thought folded to its last line (``--verbose``: every line), the
plan as its final checklist, then the cards and the answer. The command line on a pipe, run in the
test process with this project's agent inside (what it prints is the point, not its processes:
:func:`tests.helpers.cli_inside.run_cli_inside`), on the OpenAI back-end (a scripted server streams
the reasoning and the ``update_plan`` calls), which stores the turn and replays it on
``session/load``; and a foreign agent's replay of every plan step, drawn once per turn."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from acp.helpers import plan_entry, text_block, update_agent_message, update_agent_thought, update_plan
from acp.helpers import update_user_message as user_message
from acp.schema import ToolCallProgress, ToolCallStart

from acp_adapter.frontends.watch.replay import replay_lines, show_replay
from tests.helpers.cli_inside import run_cli_inside
from tests.helpers.fake_openai import (
    FakeOpenAI,
    Reply,
    chunk,
    reasoning_chunks,
    text_reply,
    tool_call_chunks,
    tool_reply,
)
from tests.helpers.openai_agent import KEY, openai_env

PLAN = [
    {"content": "Read a.txt", "status": "in_progress", "priority": "high"},
    {"content": "Summarise it", "status": "pending"},
]
DONE = [
    {"content": "Read a.txt", "status": "completed", "priority": "high"},
    {"content": "Summarise it", "status": "completed"},
]
#: what the live turn and the replay both show of it
THOUGHT = "💭 I will read a.txt first."
CHECKLIST = ["plan 2/2", "  ✓ Read a.txt · high", "  ✓ Summarise it · medium"]


def _first_reply() -> Reply:
    """Reasoning (two lines), then the plan and a read in one round of tool calls."""
    calls = [
        ("c1", "update_plan", json.dumps({"plan": PLAN})),
        ("c2", "read_file", json.dumps({"path": "a.txt"})),
    ]
    return Reply(
        events=[
            *reasoning_chunks(["The file is small.\n", "I will read a.txt first."]),
            *tool_call_chunks(calls),
            chunk(finish_reason="tool_calls"),
        ]
    )


def _run(server: FakeOpenAI, work: Path, *args: str, stdin: str = "") -> str:
    env = {**os.environ, **openai_env(server, ACP_PROGRESS_STATE_DIR=str(work / ".state"))}
    done = run_cli_inside(args, cwd=work, env=env, stdin=stdin)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout


def _replayed(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("── session "))
    return lines[start + 1 : lines.index("── continued ──")]


def _one_turn(server: FakeOpenAI, work: Path) -> str:
    (work / "a.txt").write_text("x\n")
    plan_done = tool_reply([("c3", "update_plan", {"plan": DONE})])
    server.script(_first_reply(), plan_done, text_reply("It holds x."))
    live = _run(server, work, "watch", "--summary", "off", "read a.txt and summarise it").splitlines()
    # what the live turn showed, which the replay must show too
    assert THOUGHT in live and "The file is small." not in "\n".join(live), live
    end = live.index(CHECKLIST[0])
    assert live[end : end + 3] == CHECKLIST, live
    return "\n".join(live)


def test_watch_continue_replays_the_thought_folded_and_the_plan_as_its_final_checklist(tmp_path) -> None:
    with FakeOpenAI(api_key=KEY, fallback=text_reply("Again.")) as server:
        _one_turn(server, tmp_path)
        out = _run(server, tmp_path, "watch", "--summary", "off", "--continue", "thanks")
    replay = _replayed(out)
    assert replay[0] == "› read a.txt and summarise it", replay
    assert THOUGHT in replay and "The file is small." not in out, replay
    start = replay.index("plan 2/2")
    assert replay[start : start + 3] == CHECKLIST, replay
    assert replay.count("plan 2/2") == 1 and not any(line.startswith("plan 0/") for line in replay), replay
    card = replay.index("✅ 📖 Reading a.txt — x")
    # in the order the turn showed them: the thought, the plan, the card, the answer
    assert replay.index(THOUGHT) < start < card < replay.index("It holds x."), replay


def test_watch_session_verbose_replays_every_line_of_the_thought(tmp_path) -> None:
    with FakeOpenAI(api_key=KEY, fallback=text_reply("Again.")) as server:
        _one_turn(server, tmp_path)
        listed = _run(server, tmp_path, "sessions", "--json", "--cwd", str(tmp_path))
        session = json.loads(listed.splitlines()[0])["sessionId"]
        out = _run(server, tmp_path, "watch", "--summary", "off", "--verbose", "--session", session, "go on")
    replay = _replayed(out)
    assert replay[1:3] == ["💭 The file is small.", THOUGHT], replay


def test_chat_session_replays_the_thought_and_the_plan(tmp_path) -> None:
    with FakeOpenAI(api_key=KEY, fallback=text_reply("Again.")) as server:
        _one_turn(server, tmp_path)
        out = _run(server, tmp_path, "chat", "--summary", "off", "--continue", stdin="thanks\n")
    replay = _replayed(out)
    assert THOUGHT in replay, replay
    start = replay.index("plan 2/2")
    assert replay[start : start + 3] == CHECKLIST, replay


# ---------------------------------------------------------------- in-process: a foreign agent's replay


def _plan(*statuses: str) -> object:
    return update_plan([plan_entry(f"step {i}", status=s) for i, s in enumerate(statuses, 1)])  # type: ignore[arg-type]


def _foreign_replay() -> list[object]:
    """Two turns, each replayed with every plan step (as an agent that keeps every update does)."""
    card = "c1"
    return [
        user_message(text_block("first")),
        update_agent_thought(text_block("line one\n")),
        update_agent_thought(text_block("line two")),
        _plan("pending", "pending"),
        _plan("in_progress", "pending"),
        ToolCallStart(session_update="tool_call", tool_call_id=card, title="Run it", kind="execute"),
        ToolCallProgress(session_update="tool_call_update", tool_call_id=card, status="completed"),
        _plan("completed", "completed"),
        update_agent_message(text_block("done one")),
        user_message(text_block("second")),
        _plan("in_progress"),
        _plan("completed"),
        update_agent_message(text_block("done two")),
    ]


def test_a_foreign_agents_replay_draws_each_turns_plan_once_with_its_last_entries() -> None:
    lines = replay_lines(_foreign_replay())  # type: ignore[arg-type]
    assert lines == [
        "› first",
        "💭 line two",
        "plan 2/2",
        "  ✓ step 1 · medium",
        "  ✓ step 2 · medium",
        "✅ 💻 Run it",
        "done one",
        "› second",
        "plan 1/1",
        "  ✓ step 1 · medium",
        "done two",
    ], lines


def test_on_a_terminal_the_replayed_thought_says_how_many_lines_it_had_and_the_plan_is_a_checklist() -> None:
    out = io.StringIO()
    show_replay(out, _foreign_replay(), "s-1", animate=True)  # type: ignore[arg-type]
    text = out.getvalue()
    assert "💭 line two  (2 lines; --verbose shows them)" in text, text
    assert "plan 2/2\n  ✓ step 1 · medium\n  ✓ step 2 · medium" in text and "plan 0/2" not in text, text
    assert text.index("line two") < text.index("plan 2/2") < text.index("Run it") < text.index("done one")
