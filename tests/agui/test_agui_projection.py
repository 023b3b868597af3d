"""The pure AG-UI projection, the redaction policy and the per-run lock — no agent, no HTTP."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from acp import update_agent_message_text, update_agent_thought_text

from acp_adapter.frontends.agui.options import (
    ToolProgressOptionError,
    run_tool_progress,
)
from acp_adapter.frontends.agui.policy import (
    PolicyError,
    apply_policy,
    default_policy,
    load_policy,
    none_policy,
)
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_progress,
    build_thinking_start,
    build_tool_complete,
    build_tool_failed,
    build_tool_progress,
    build_tool_start,
)
from tests.helpers.agui_checks import check_order, parse_wire, wire

GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def counts_only(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """An example host policy: publish counts, withhold messages."""
    if kind == "tool_progress":
        return {k: v for k, v in payload.items() if k in ("value", "total")}
    return default_policy(kind, payload)


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


def snapshots(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "ACTIVITY_SNAPSHOT"]


def counting_tool(call_id: str = "call-1") -> list[Any]:
    return [
        build_tool_start(call_id, "Counting", "other", raw_input={"n": 3}, meta={"toolId": "count"}),
        build_tool_progress(call_id, value=1, total=3),
        build_tool_progress(call_id, value=2, total=3),
        build_tool_complete(call_id, "counted 3"),
    ]


# ---------------------------------------------------------------- the mapping


def test_full_turn_maps_to_ordered_agui_events() -> None:
    updates = [
        build_thinking_start("think-1"),
        build_thinking_progress("think-1", 1.0, "Waiting for the first token"),
        build_thinking_complete("think-1", 1.2),
        update_agent_thought_text("I should count "),
        update_agent_thought_text("the files."),
        update_agent_message_text("Let me count. "),
        *counting_tool(),
        update_agent_message_text("There are 3."),
    ]
    events = run_all(RunProjection("t1", "r1", emit_tool_progress=True), updates, stop_reason="end_turn")
    # streamed deltas are re-chunked by the stream redactor: compare runs of one type
    types = [t for i, t in enumerate(e["type"] for e in events) if i == 0 or events[i - 1]["type"] != t]
    assert types == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "ACTIVITY_SNAPSHOT",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[0]["protocolVersion"] == "1.0"
    assert events[0]["threadId"] == "t1" and events[0]["runId"] == "r1"
    reasoning = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert reasoning == "I should count the files."
    # spinner text never reaches the client, in any event
    assert "Thinking" not in str(events) and "Still thinking" not in str(events)
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "count" and start["toolCallId"] == "call-1"
    assert len(snapshots(events)) == 2
    first_text = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
    assert start["parentMessageId"] == first_text["messageId"]
    assert next(e for e in events if e["type"] == "TOOL_CALL_ARGS")["delta"] == '{"n": 3}'
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "counted 3" and result["role"] == "tool"
    assert events[-1]["outcome"] == {"type": "success"} and events[-1]["result"] == {"stopReason": "end_turn"}


def test_cancelled_run_closes_open_text_and_reports_cancelled() -> None:
    projection = RunProjection("t", "r")
    events = run_all(projection, [update_agent_message_text("partial ans")], cancelled=True)
    assert [e["type"] for e in events][-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert "".join(e.get("delta", "") for e in events) == "partial ans"
    assert events[-1]["outcome"] == {"type": "cancelled"}


def test_run_error_is_short_redacted_and_last() -> None:
    projection = RunProjection("t", "r")
    events = projection.start() + projection.project(update_agent_thought_text("hmm"))
    events += projection.error(f"agent crashed\nAuthorization: Bearer {GH_TOKEN}\n" + "x" * 500, code="crash")
    out = wire(events)
    check_order(out)
    assert out[-1]["type"] == "RUN_ERROR" and out[-1]["code"] == "crash"
    assert GH_TOKEN not in out[-1]["message"] and "\n" not in out[-1]["message"]
    assert len(out[-1]["message"]) <= 200
    assert projection.project(update_agent_message_text("late")) == []
    assert projection.finish() == [] and projection.error("again") == []


def test_secrets_in_text_args_and_results_are_redacted_even_when_split() -> None:
    half = len(GH_TOKEN) // 2
    updates = [
        update_agent_message_text(f"the token is {GH_TOKEN[:half]}"),
        update_agent_message_text(f"{GH_TOKEN[half:]} ok"),
        build_tool_start("c", "Run", "execute", raw_input={"cmd": f"curl -H 'x: {GH_TOKEN}'"}),
        build_tool_complete("c", f"token={GH_TOKEN}"),
    ]
    events = run_all(RunProjection("t", "r"), updates)
    assert GH_TOKEN not in str(events) and GH_TOKEN[:half] not in str(events)


def test_failed_tool_reports_its_error_as_the_result_and_a_missing_result_uses_last_content() -> None:
    updates = [
        build_tool_start("a", "A", "read"),
        build_tool_failed("a", "path '../x' is outside the workspace"),
        build_tool_start("b", "B", "read"),
        build_tool_progress("b", message="half way"),
        build_tool_progress("b").model_copy(update={"status": "completed", "content": None}),
    ]
    events = run_all(RunProjection("t", "r"), updates)
    results = {e["toolCallId"]: e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {"a": "path '../x' is outside the workspace", "b": "half way"}


# ---------------------------------------------------------------- tool progress


def test_progress_is_off_by_default() -> None:
    events = run_all(RunProjection("t", "r"), counting_tool())
    assert snapshots(events) == []


def test_default_policy_output_for_a_counting_tool_is_exact() -> None:
    events = run_all(RunProjection("t", "run-1", emit_tool_progress=True), counting_tool())
    snaps = snapshots(events)
    assert len(snaps) == 2
    for snap in snaps:
        assert snap == {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "run-1:progress:call-1",
            "activityType": "TOOL_PROGRESS",
            "content": {"toolCallId": "call-1", "progress": {"value": "[redacted]", "total": "[redacted]"}},
            "replace": True,
        }


def test_counts_only_policy_publishes_counts_and_withholds_messages() -> None:
    updates = [
        build_tool_start("call-1", "Search", "search"),
        build_tool_progress("call-1", value=1, total=3, message="Scanned secret-project/a.txt"),
        build_tool_progress("call-1", message="message only"),
        build_tool_complete("call-1", "done"),
    ]
    events = run_all(RunProjection("t", "run-1", emit_tool_progress=True, policy=counts_only), updates)
    assert [s["content"] for s in snapshots(events)] == [
        {"toolCallId": "call-1", "progress": {"value": 1, "total": 3}}
    ]


def test_message_only_update_has_no_value_or_total_and_empty_update_publishes_nothing() -> None:
    updates = [
        build_tool_start("c", "Run", "execute"),
        build_tool_progress("c", message="12 lines of output so far"),
        build_tool_progress("c"),  # empty: nothing reported
        build_tool_progress("c", value=0),  # zero is a reported value
    ]
    events = run_all(RunProjection("t", "r", emit_tool_progress=True, policy=none_policy), updates)
    assert [s["content"]["progress"] for s in snapshots(events)] == [
        {"message": "12 lines of output so far"},
        {"value": 0},
    ]


def test_none_policy_still_passes_the_canonical_redactor() -> None:
    updates = [
        build_tool_start("c", "Run", "execute"),
        build_tool_progress("c", value=1, message=f"key {GH_TOKEN}"),
    ]
    events = run_all(RunProjection("t", "r", emit_tool_progress=True, policy=none_policy), updates)
    (snap,) = snapshots(events)
    assert snap["content"]["progress"]["value"] == 1
    assert GH_TOKEN not in snap["content"]["progress"]["message"]
    assert "[REDACTED]" in snap["content"]["progress"]["message"]


def test_nothing_for_a_tool_after_its_result_nor_for_think_cards_or_unknown_tools() -> None:
    updates = [
        *counting_tool("c"),
        build_tool_progress("c", value=3, total=3),
        build_tool_complete("c", "again"),
        build_thinking_start("think"),
        build_tool_progress("think", value=1, total=2),
        build_tool_progress("never-started", value=1, total=2),
    ]
    events = run_all(RunProjection("t", "r", emit_tool_progress=True), updates)
    assert len(snapshots(events)) == 2
    assert len([e for e in events if e["type"] == "TOOL_CALL_RESULT"]) == 1
    assert [e["type"] for e in events].count("TOOL_CALL_START") == 1


def test_raising_or_bad_policy_withholds_the_value_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        raise RuntimeError(f"boom {GH_TOKEN}")

    events = run_all(
        RunProjection("t", "r", emit_tool_progress=True, policy=broken),
        [*counting_tool("c"), update_agent_message_text("answer")],
    )
    assert snapshots(events) == []
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "[redacted]"  # withheld, not published
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "policy failed" in caplog.text
    assert apply_policy(lambda k, p: ["not", "a", "mapping"], "tool_progress", {"value": 1}) is None  # type: ignore[arg-type,return-value]


def test_load_policy_names_and_errors() -> None:
    assert load_policy(None) is default_policy
    assert load_policy("default") is default_policy
    assert load_policy("none") is none_policy
    assert load_policy("tests.agui.test_agui_projection:counts_only") is counts_only
    assert load_policy(counts_only) is counts_only
    for bad, words in [
        ("nonsense", "module:function"),
        ("no_such_module_xyz:f", "cannot import"),
        ("tests.agui.test_agui_projection:missing", "no attribute"),
        ("tests.agui.test_agui_projection:GH_TOKEN", "not callable"),
    ]:
        with pytest.raises(PolicyError, match=words):
            load_policy(bad)


def test_progress_switch_matrix() -> None:
    from acp_adapter.config import AguiSettings, ConfigError

    assert AguiSettings.from_env({}).tool_progress is False
    assert AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "1"}).tool_progress is True
    assert AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "0"}).tool_progress is False
    with pytest.raises(ConfigError, match="ACP_PROGRESS_AGUI_TOOL_PROGRESS"):
        AguiSettings.from_env({"ACP_PROGRESS_AGUI_TOOL_PROGRESS": "maybe"})
    for global_on in (False, True):
        assert run_tool_progress(global_on, None) is global_on
        assert run_tool_progress(global_on, {}) is global_on
        assert run_tool_progress(global_on, {"other": 1}) is global_on
        assert run_tool_progress(global_on, {"emitToolProgress": True}) is True
        assert run_tool_progress(global_on, {"emitToolProgress": False}) is False
    with pytest.raises(ToolProgressOptionError, match="emitToolProgress must be true or false"):
        run_tool_progress(False, {"emitToolProgress": "yes"})


# ---------------------------------------------------------------- the per-run lock


def test_emitter_ignores_everything_after_the_terminal_event() -> None:
    emitter = RunEmitter(RunProjection("t", "r", emit_tool_progress=True))
    emitter.start()
    for update in counting_tool()[:2]:
        emitter.feed(update)
    assert emitter.finish(stop_reason="end_turn")
    assert not emitter.feed(build_tool_progress("call-1", value=2, total=3))
    assert not emitter.emit_activity("r:summary", "PROGRESS_SUMMARY", {"text": "late"})
    assert not emitter.fail("late error")
    events = wire(emitter.drain())
    check_order(events)
    assert emitter.closed and emitter.finished


def test_emit_activity_is_redacted_and_replaces_by_message_id() -> None:
    emitter = RunEmitter(RunProjection("t", "r"))
    assert emitter.emit_activity("r:summary", "PROGRESS_SUMMARY", {"text": f"using {GH_TOKEN}"})
    events = wire(emitter.drain())
    assert [e["type"] for e in events] == ["RUN_STARTED", "ACTIVITY_SNAPSHOT"]
    assert events[1]["replace"] is True and GH_TOKEN not in str(events)


def test_abandoned_run_writes_nothing_more() -> None:
    emitter = RunEmitter(RunProjection("t", "r", emit_tool_progress=True))
    emitter.start()
    emitter.abandon()
    assert not emitter.feed(update_agent_message_text("x"))
    assert not emitter.finish()
    assert [e.type.value for e in emitter.drain()] == ["RUN_STARTED"]


def _stress_once(attempt: int) -> None:
    # nothing drains until the end, so the outbox holds every event of the run: above the default
    # bound, queued snapshots would coalesce (the backpressure tests' subject) and the count of
    # snapshots against accepted updates would depend on how late the finishing thread ran
    projection = RunProjection("t", f"r{attempt}", emit_tool_progress=True, policy=none_policy)
    emitter = RunEmitter(projection, max_queued=10_000)
    emitter.start()
    ids = [f"call-{i}" for i in range(4)]
    for call_id in ids:
        emitter.feed(build_tool_start(call_id, "Work", "other"))
    go = threading.Barrier(len(ids) + 1, timeout=30)
    accepted = [0] * len(ids)

    def hammer(index: int, call_id: str) -> None:
        go.wait()
        for n in range(300):
            if emitter.feed(build_tool_progress(call_id, value=n, total=300)):
                accepted[index] += 1
            emitter.emit_activity(f"x:{call_id}", "PROGRESS_SUMMARY", {"n": n})

    def finalise() -> None:
        go.wait()
        emitter.feed(build_tool_complete(ids[0], "done early"))
        emitter.finish(stop_reason="end_turn")

    threads = [threading.Thread(target=hammer, args=(i, c)) for i, c in enumerate(ids)]
    threads.append(threading.Thread(target=finalise))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = wire(emitter.drain())
    check_order(events)
    assert [e["type"] for e in events].count("RUN_FINISHED") == 1
    tool_snaps = [e for e in snapshots(events) if e["activityType"] == "TOOL_PROGRESS"]
    assert len(tool_snaps) == sum(accepted)
    result_at = next(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_RESULT")
    late = [
        e
        for e in events[result_at:]
        if e["type"] == "ACTIVITY_SNAPSHOT" and e["content"].get("toolCallId") == ids[0]
    ]
    assert late == [], "progress after the tool's result"


@pytest.mark.slow
def test_concurrent_progress_callbacks_and_run_finalisation_never_write_after_the_end() -> None:
    for attempt in range(30):
        _stress_once(attempt)


@pytest.mark.anyio
async def test_events_iterator_wakes_for_writes_from_other_threads() -> None:
    emitter = RunEmitter(RunProjection("t", "r", emit_tool_progress=True), asyncio.get_running_loop())
    emitter.start()

    def produce() -> None:
        for update in counting_tool():
            emitter.feed(update)
        emitter.finish()

    seen: list[str] = []
    producer = threading.Thread(target=produce)
    producer.start()
    async with asyncio.timeout(10):
        async for event in emitter.events():
            seen.append(event.type.value)
    producer.join()
    assert seen[0] == "RUN_STARTED" and seen[-1] == "RUN_FINISHED"
    assert seen.count("ACTIVITY_SNAPSHOT") == 2
