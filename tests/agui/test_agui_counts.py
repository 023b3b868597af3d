"""``--redact counts``: a host publishes a tool's counts (value, total) and withholds its messages."""

from __future__ import annotations

from acp_adapter.frontends.agui.policy import POLICY_REDACTED, TOOL_PROGRESS, apply_policy, load_policy
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.tools import build_tool_progress, build_tool_start


def test_the_counts_policy_publishes_numbers_and_withholds_messages() -> None:
    counts = load_policy("counts")
    published = apply_policy(
        counts, TOOL_PROGRESS, {"value": 2, "total": 20, "message": "reading payroll.xlsx"}
    )
    assert published == {"value": 2, "total": 20, "message": POLICY_REDACTED}
    assert apply_policy(counts, TOOL_PROGRESS, {"value": "2 of 20"}) == {"value": POLICY_REDACTED}


def test_a_run_with_the_counts_policy_shows_a_bar_with_numbers() -> None:
    projection = RunProjection("t", "r", emit_tool_progress=True, policy=load_policy("counts"))
    projection.project(build_tool_start("c1", "Counting", "other", raw_input={}, meta={"toolId": "count"}))
    [activity] = [
        e
        for e in projection.project(build_tool_progress("c1", value=2, total=20, message="secret.txt"))
        if e.type == "ACTIVITY_SNAPSHOT"
    ]
    assert activity.content["progress"] == {"value": 2, "total": 20, "message": POLICY_REDACTED}
