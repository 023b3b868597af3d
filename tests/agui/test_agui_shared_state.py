"""AG-UI: the plan as shared state, diffs in tool results, usage in RUN_FINISHED."""

from __future__ import annotations

import copy
from typing import Any

from acp import plan_entry, start_edit_tool_call, tool_diff_content, update_plan, update_tool_call
from acp.schema import Cost, Usage, UsageUpdate
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.frontends.agui.content import unified_diff
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.shared_state import plan_patch
from tests.helpers.agui_checks import check_order, parse_wire, wire

GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def apply_patch(document: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The RFC 6902 subset the projection emits (add at ``-``, replace, remove), applied strictly."""
    doc = copy.deepcopy(document)
    for op in ops:
        parts = op["path"].split("/")[1:]
        target: Any = doc
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        last = parts[-1]
        if op["op"] == "add":
            assert last == "-"
            target.append(op["value"])
        elif op["op"] == "replace":
            key = int(last) if isinstance(target, list) else last
            assert key in target if isinstance(target, dict) else key < len(target)
            target[key] = op["value"]
        elif op["op"] == "remove":
            del target[int(last)]
        else:
            raise AssertionError(op)
    return doc


ITEM = st.fixed_dictionaries(
    {
        "content": st.sampled_from(["a", "b", "c"]),
        "status": st.sampled_from(["pending", "in_progress", "completed"]),
        "priority": st.sampled_from(["high", "medium", "low"]),
    }
)


@given(st.lists(ITEM, max_size=6), st.lists(ITEM, max_size=6))
def test_plan_patch_turns_the_old_plan_into_the_new(
    old: list[dict[str, str]], new: list[dict[str, str]]
) -> None:
    ops = plan_patch(old, new)
    assert apply_patch({"plan": old}, ops) == {"plan": new}
    assert (ops == []) == (old == new)


def run_all(projection: RunProjection, updates: list[Any], **finish: Any) -> list[dict[str, Any]]:
    events = projection.start()
    for update in updates:
        events += projection.project(update)
    events += projection.finish(**finish)
    out = wire(events)
    for event in out:
        parse_wire(event)
    check_order(out)
    return out


def test_plan_is_a_snapshot_then_deltas_of_what_changed() -> None:
    first = [plan_entry("Read the code", priority="high"), plan_entry("Fix the bug", priority="medium")]
    second = [
        plan_entry("Read the code", priority="high", status="completed"),
        plan_entry("Fix the bug", priority="medium", status="in_progress"),
    ]
    third = [*second, plan_entry(f"Test it with {GH_TOKEN}", priority="low")]
    events = run_all(
        RunProjection("t", "r"),
        [update_plan(first), update_plan(first), update_plan(second), update_plan(third)],
    )
    state = [e for e in events if e["type"] in ("STATE_SNAPSHOT", "STATE_DELTA")]
    assert [e["type"] for e in state] == ["STATE_SNAPSHOT", "STATE_DELTA", "STATE_DELTA"]  # no-op skipped
    assert state[0]["snapshot"] == {
        "plan": [
            {"content": "Read the code", "status": "pending", "priority": "high"},
            {"content": "Fix the bug", "status": "pending", "priority": "medium"},
        ]
    }
    assert state[1]["delta"] == [
        {"op": "replace", "path": "/plan/0/status", "value": "completed"},
        {"op": "replace", "path": "/plan/1/status", "value": "in_progress"},
    ]
    (added,) = state[2]["delta"]
    assert added["op"] == "add" and added["path"] == "/plan/-"
    assert GH_TOKEN not in str(added) and added["value"]["priority"] == "low"
    doc = apply_patch(apply_patch(state[0]["snapshot"], state[1]["delta"]), state[2]["delta"])
    assert [item["status"] for item in doc["plan"]] == ["completed", "in_progress", "pending"]


def test_an_edit_cards_result_carries_the_unified_diff() -> None:
    diff = tool_diff_content("notes.py", "x = 1\ny = 3\n", old_text="x = 1\ny = 2\n")
    events = run_all(
        RunProjection("t", "r"),
        [
            start_edit_tool_call("edit-1", "Edit notes.py", "notes.py", {"path": "notes.py"}),
            update_tool_call("edit-1", status="completed", content=[diff]),
        ],
    )
    (result,) = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"].splitlines() == [
        "--- a/notes.py",
        "+++ b/notes.py",
        "@@ -1,2 +1,2 @@",
        " x = 1",
        "-y = 2",
        "+y = 3",
    ]


def test_a_new_file_is_diffed_against_nothing_and_a_long_diff_is_capped() -> None:
    text = unified_diff("new.txt", None, "".join(f"line {i}\n" for i in range(50)), max_lines=10)
    lines = text.splitlines()
    assert lines[0] == "--- /dev/null" and lines[1] == "+++ b/new.txt"
    assert len(lines) == 11 and lines[-1] == "… 43 more lines"


def test_usage_reaches_run_finished() -> None:
    usage = UsageUpdate(
        session_update="usage_update", used=1200, size=128000, cost=Cost(amount=0.01, currency="USD")
    )
    tokens = Usage(input_tokens=100, output_tokens=20, total_tokens=120, thought_tokens=5)
    events = run_all(RunProjection("t", "r"), [usage], stop_reason="end_turn", tokens=tokens)
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["result"] == {
        "stopReason": "end_turn",
        "usage": {"used": 1200, "size": 128000, "cost": {"amount": 0.01, "currency": "USD"}},
    }
    assert finished["usage"] == [
        {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120, "reasoningTokens": 5}
    ]


def test_a_run_without_usage_has_none() -> None:
    finished = run_all(RunProjection("t", "r"), [], stop_reason="end_turn")[-1]
    assert finished["result"] == {"stopReason": "end_turn"} and "usage" not in finished
