"""The one client-side card accumulator: the card facts every front-end reads."""

from __future__ import annotations

from acp import start_tool_call, update_tool_call

from acp_adapter.protocol.cards import CardAccumulator
from acp_adapter.protocol.meta import ProgressReport
from acp_adapter.summary.snapshot import ACTIVITY, LIVE, SnapshotTracker
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_progress,
    build_thinking_start,
    build_tool_complete,
    build_tool_progress,
    build_tool_start,
)


def test_a_tool_card_from_start_to_end() -> None:
    cards = CardAccumulator()
    applied = cards.apply(
        build_tool_start("c", "Read a.py", "read", raw_input={"path": "a.py"}, meta={"toolId": "read_file"}),
        1.0,
    )
    assert applied is not None and applied.started and not applied.late
    card = cards.cards["c"]
    assert (card.title, card.kind, card.status, card.tool_id) == (
        "Read a.py",
        "read",
        "in_progress",
        "read_file",
    )
    assert card.raw_input == {"path": "a.py"} and card.opened_at == 1.0 and card.live
    cards.apply(build_tool_progress("c", value=1, total=4, message="one"), 2.0)
    assert card.progress == (1.0, 4.0) and card.detail == "one"
    assert card.report == ProgressReport(value=1, total=4, message="one")
    cards.apply(build_tool_progress("c", message="still going"), 3.0)
    assert card.progress == (1.0, 4.0), "a message-only report keeps the bar"
    assert card.report == ProgressReport(message="still going")
    cards.apply(build_tool_complete("c", "done"), 4.0)
    assert card.status == "completed" and card.closed_at == 4.0 and not card.live and card.detail == "done"
    assert card.updates == 3 and cards.live == []
    late = cards.apply(build_tool_progress("c", value=2, total=4), 5.0)
    assert late is not None and late.late


def test_an_update_for_a_card_never_seen_starts_one() -> None:
    cards = CardAccumulator()
    applied = cards.apply(update_tool_call("x", status="in_progress", title="Other agent"), 7.0)
    assert applied is not None and applied.started
    assert cards.cards["x"].title == "Other agent" and cards.cards["x"].opened_at == 7.0


def test_other_updates_are_not_cards_and_a_start_replaces_the_card() -> None:
    cards = CardAccumulator()
    assert cards.apply(object(), 0.0) is None
    cards.apply(start_tool_call("c", "first", kind="read", status="in_progress"), 0.0)
    cards.apply(start_tool_call("c", "second", kind="edit", status="completed"), 1.0)
    card = cards.cards["c"]
    assert (card.title, card.kind, card.status, card.closed_at) == ("second", "edit", "completed", 1.0)


def test_without_reports_meta_is_not_read() -> None:
    cards = CardAccumulator(reports=False)
    cards.apply(build_tool_start("c", "T", "other", meta={"toolId": "t"}), 0.0)
    cards.apply(build_tool_progress("c", value=1, total=2), 1.0)
    assert cards.cards["c"].tool_id is None and cards.cards["c"].report is None


def test_think_cards_are_marked_think() -> None:
    cards = CardAccumulator()
    cards.apply(build_thinking_start("t"), 0.0)
    cards.apply(build_thinking_progress("t", 30.0), 30.0)
    assert cards.cards["t"].think and cards.cards["t"].live
    cards.apply(build_thinking_complete("t", 31.0), 31.0)
    assert not cards.cards["t"].live


def test_a_late_heartbeat_of_a_closed_think_card_is_not_a_new_tool_for_the_summary() -> None:
    """The summary tracker reads card facts from the accumulator: a think card stays a think card
    after it closed (forgetting it would count a late heartbeat as a running tool)."""
    tracker = SnapshotTracker("q")
    tracker.observe(build_thinking_start("t"))
    tracker.observe(build_thinking_complete("t", 1.0))
    bits = tracker.observe(build_thinking_progress("t", 2.0))
    assert not bits & ACTIVITY and bits & LIVE
    assert tracker.snapshot(1.0, None).active_tools == ()


def test_a_tools_progress_is_the_same_activity_and_a_late_one_does_not_revive_it() -> None:
    tracker = SnapshotTracker("q")
    assert tracker.observe(build_tool_start("c", "Search", "search")) & ACTIVITY
    bits = tracker.observe(build_tool_progress("c", value=1, total=2))
    assert bits & LIVE and not bits & ACTIVITY
    assert tracker.observe(build_tool_complete("c", "done")) & ACTIVITY
    late = tracker.observe(build_tool_progress("c", value=2, total=2))
    assert not late & ACTIVITY
    assert tracker.snapshot(1.0, None).active_tools == ()
    assert tracker.snapshot(1.0, None).completed_tools == ("Search",)
