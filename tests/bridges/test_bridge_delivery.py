"""Delivery layer table tests: fake clock, recording sink, every mode × grouping."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest
from acp import text_block, update_agent_message

from acp_adapter.frontends.bridges.bubbles import collapse_lines, render_line
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.delivery import RouteDelivery
from acp_adapter.frontends.bridges.events import (
    AnswerText,
    ProgressEvent,
    ProgressPayload,
    ReactionEvent,
    TurnEnd,
)
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.bridges.sink import utf16_len
from acp_adapter.tools import build_tool_complete, build_tool_failed, build_tool_start
from tests.helpers.bridge_fakes import FakeClock, RecordingSink

pytestmark = pytest.mark.anyio


def p(call: str, phase: str = "started", preview: str = "x", **kw: Any) -> ProgressEvent:
    return ProgressEvent(ProgressPayload(call, "search", phase, "Searching for", preview, "🔎", 1, **kw))  # type: ignore[arg-type]


def make(
    mode: str = "all", grouping: str = "accumulate", **kw: Any
) -> tuple[FakeClock, RecordingSink, RouteDelivery]:
    clock = FakeClock()
    sink = RecordingSink(clock=clock, **kw)
    config = ProgressConfig(tool_progress=mode, grouping=grouping, typing=True, reactions=True)  # type: ignore[arg-type]
    delivery = RouteDelivery(sink, config, clock)
    delivery.begin_turn(user_message=500)
    return clock, sink, delivery


def test_line_rendering() -> None:
    assert render_line(p("a").payload) == "🔎 Searching for x"
    assert render_line(p("a", "completed", duration_ms=29_999).payload) == "✅ Searching for x"
    assert render_line(p("a", "completed", duration_ms=31_000).payload) == "✅ Searching for x (31s)"
    assert render_line(p("a", "failed", error="boom").payload) == "❌ Searching for x — boom"
    assert render_line(p("a", "failed", preview="").payload) == "❌ Searching for"
    assert collapse_lines(["a", "a", "b", "a", "a", "a"]) == "a (×2)\nb\na (×3)"


async def test_accumulate_posts_first_line_then_coalesces_edits_with_a_trailing_flush() -> None:
    clock, sink, d = make()
    await d.handle(p("a"))
    assert sink.kinds() == ["post"]
    await d.handle(p("a", "completed"))  # last edit long ago: edits at once
    assert sink.edits()[-1][2] == "✅ Searching for x"
    for i, call in enumerate("bcdef"):
        clock.advance(0.1)
        await d.handle(p(call, preview=str(i)))
    assert len(sink.edits()) == 1  # inside the window: coalesced, waiting for the trailing flush
    assert d.next_deadline() == pytest.approx(1000.0 + 1.5)
    clock.advance(0.99)
    await d.tick()
    assert len(sink.edits()) == 1
    clock.advance(0.02)
    await d.tick()  # trailing flush: one edit carrying all five lines
    assert len(sink.edits()) == 2
    assert sink.shown() == ["✅ Searching for x\n" + "\n".join(f"🔎 Searching for {i}" for i in range(5))]
    assert d.next_deadline() is None or d.next_deadline() > clock.now  # nothing due
    times = [e[3] for e in sink.edits()]
    assert all(b - a >= 1.5 for a, b in itertools.pairwise(times))


async def test_consecutive_identical_lines_collapse() -> None:
    clock, sink, d = make()
    for call in ("a", "b", "c"):
        await d.handle(p(call, "completed"))
        clock.advance(2)
    assert sink.shown() == ["✅ Searching for x (×3)"]


async def test_terminal_line_replaces_its_started_line_in_place() -> None:
    clock, sink, d = make()
    await d.handle(p("a"))
    await d.handle(p("b", preview="y"))
    clock.advance(2)
    await d.handle(p("a", "failed", error="nope"))
    clock.advance(2)
    await d.tick()
    assert sink.shown() == ["❌ Searching for x — nope\n🔎 Searching for y"]


@pytest.mark.parametrize("alphabet", ["😀", "漢字", "ab"])
async def test_continuation_starts_before_the_limit_in_utf16_units(alphabet: str) -> None:
    clock, sink, d = make(limit=200)
    lines = 0
    for i in range(60):
        await d.handle(p(f"c{i}", preview=alphabet * 5 + str(i)))
        lines += 1
        clock.advance(0.3)
    clock.advance(5)
    await d.close()
    shown = sink.shown()
    assert len(shown) > 1  # continuations were needed
    assert all(utf16_len(m) <= 200 for m in shown)
    assert sum(m.count("\n") + 1 for m in shown) == lines  # no line lost or split
    assert len(sink.posts()) == len(shown)  # each continuation is a new post; no message got too long


async def test_a_single_line_longer_than_the_limit_is_truncated_not_lost() -> None:
    _, sink, d = make(limit=50)
    await d.handle(p("a", preview="🙂" * 100))
    (msg,) = sink.shown()
    assert utf16_len(msg) <= 50 and msg.endswith("…")


async def test_answer_closes_the_bubble_and_a_later_tool_starts_a_new_one_below() -> None:
    clock, sink, d = make()
    await d.handle(p("a"))
    await d.handle(AnswerText(0, "I looked."))
    await d.handle(AnswerText(0, "I looked. Now searching again."))
    await d.handle(p("b", preview="y"))  # segment 0 ends: the answer is posted before the new bubble
    clock.advance(2)
    await d.handle(p("b", "completed", preview="y"))
    await d.handle(AnswerText(1, "Done."))
    await d.handle(TurnEnd("end_turn"))
    clock.advance(2)
    await d.tick()
    assert sink.shown() == [
        "🔎 Searching for x",
        "I looked. Now searching again.",
        "✅ Searching for y",
        "Done.",
    ]


async def test_long_answers_are_split_at_the_limit() -> None:
    _, sink, d = make(limit=100)
    text = "\n".join(f"line {i} " + "漢" * 20 for i in range(20))
    await d.handle(AnswerText(0, text))
    await d.handle(TurnEnd("end_turn"))
    posts = sink.posts()
    assert len(posts) > 1 and all(utf16_len(m) <= 100 for m in posts)
    assert "\n".join(posts) == text


async def test_separate_posts_one_message_per_line_and_never_edits() -> None:
    clock, sink, d = make(grouping="separate")
    for event in (p("a"), p("a", "completed"), p("b", "failed", error="e")):
        await d.handle(event)
        clock.advance(0.1)
    await d.handle(TurnEnd("end_turn"))
    clock.advance(5)
    await d.tick()
    assert "edit" not in sink.kinds()
    assert sink.posts() == [
        "🔎 Searching for x",
        "✅ Searching for x",
        "❌ Searching for x — e",
        "(no answer: end_turn)",
    ]


async def test_typing_is_refreshed_before_it_lapses_and_off_at_the_end() -> None:
    clock, sink, d = make()
    await d.set_typing(True)
    await d.set_typing(True)  # already on: no extra call
    for _ in range(10):
        clock.advance(1.0)
        deadline = d.next_deadline()
        if deadline is not None and clock.now >= deadline:
            await d.tick()
    sent = [op[2] for op in sink.ops if op[0] == "typing" and op[1]]
    assert len(sent) == 3  # at 0, 4 and 8 seconds: never a 5-second gap
    assert all(b - a < 5.0 for a, b in itertools.pairwise(sent))
    await d.handle(TurnEnd("end_turn"))
    assert ("typing", False, clock.now) in sink.ops
    clock.advance(20)
    await d.tick()
    assert [op for op in sink.ops if op[0] == "typing" and op[1] and op[2] > clock.now - 15] == []


async def test_reactions_go_to_the_users_message_and_respect_the_flag() -> None:
    _, sink, d = make()
    await d.handle(ReactionEvent("working"))
    await d.handle(ReactionEvent("failure"))
    assert [op for op in sink.ops if op[0] == "react"] == [
        ("react", 500, "working"),
        ("react", 500, "failure"),
    ]
    clock = FakeClock()
    quiet = RecordingSink(clock=clock)
    off = RouteDelivery(quiet, ProgressConfig(tool_progress="all"), clock)
    off.begin_turn(1)
    await off.handle(ReactionEvent("working"))
    await off.set_typing(True)
    assert quiet.ops == []


async def test_a_failing_platform_call_is_contained_and_logged_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _clock, _sink, d = make(fail_edits=True)
    await d.handle(p("a"))
    with caplog.at_level(logging.WARNING, logger="acp_progress.bridges.delivery"):
        await d.handle(p("a", "completed"))
    assert d.stats.failures == 1
    assert "edit failed" in caplog.text and "sk-live-abcdef" not in caplog.text


def turn_updates() -> list[tuple[float, Any]]:
    out: list[tuple[float, Any]] = []
    t = 0.0
    for i in range(3):
        out.append(
            (
                t,
                build_tool_start(
                    f"s{i}", "t", "search", raw_input={"query": "TODO"}, meta={"toolId": "search"}
                ),
            )
        )
        out.append((t + 0.2, build_tool_complete(f"s{i}", "ok")))
        t += 0.4
    out.append(
        (t, build_tool_start("r", "t", "read", raw_input={"path": "a.py"}, meta={"toolId": "read_file"}))
    )
    out.append((t + 0.2, build_tool_failed("r", "missing")))
    out.append((t + 0.3, update_agent_message(text_block("Answer."))))
    return out


@pytest.mark.parametrize(
    ("mode", "grouping", "expected"),
    [
        ("off", "accumulate", ["Answer."]),
        ("off", "separate", ["Answer."]),
        ("new", "accumulate", ["✅ Searching for TODO (×3)\n❌ Reading a.py — missing", "Answer."]),
        (
            "new",
            "separate",
            ["🔎 Searching for TODO"]
            + ["✅ Searching for TODO"] * 3
            + ["📖 Reading a.py", "❌ Reading a.py — missing", "Answer."],
        ),
        ("all", "accumulate", ["✅ Searching for TODO (×3)\n❌ Reading a.py — missing", "Answer."]),
        ("verbose", "accumulate", ["✅ Searching for TODO (×3)\n❌ Reading a.py — missing", "Answer."]),
        (
            "all",
            "separate",
            ["🔎 Searching for TODO", "✅ Searching for TODO"] * 3
            + ["📖 Reading a.py", "❌ Reading a.py — missing", "Answer."],
        ),
    ],
)
async def test_every_mode_and_grouping_end_to_end(mode: str, grouping: str, expected: list[str]) -> None:
    clock, sink, d = make(mode, grouping)
    proj = TurnProjection(d.config)
    for at, update in turn_updates():
        clock.now = 1000.0 + at
        for event in proj.project(update, clock.now):
            await d.handle(event)
    await d.handle(TurnEnd("end_turn"))
    clock.advance(10)
    await d.tick()
    assert sink.shown() == expected
    if grouping == "separate":
        assert "edit" not in sink.kinds()
