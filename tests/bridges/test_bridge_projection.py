"""The pure projection: ACP updates -> typed progress payloads, per emission mode (table tests)."""

from __future__ import annotations

from typing import Any

import pytest
from acp import start_tool_call, text_block, update_agent_message, update_tool_call

from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import AnswerText, ProgressEvent, ReactionEvent
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.tools import (
    build_thinking_complete,
    build_thinking_start,
    build_tool_complete,
    build_tool_failed,
    build_tool_start,
)

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def ours_start(call_id: str, tool: str, args: dict[str, Any]) -> Any:
    """A start card exactly as this project's agent sends it (tool id in _meta.acpProgress)."""
    return build_tool_start(call_id, f"{tool} card title", "other", raw_input=args, meta={"toolId": tool})


def cfg(mode: str, **kw: Any) -> ProgressConfig:
    return ProgressConfig(tool_progress=mode, **kw)  # type: ignore[arg-type]


def payloads(events: list[Any]) -> list[tuple[str, str, str]]:
    return [
        (e.payload.tool_call_id, e.payload.phase, e.payload.label)
        for e in events
        if isinstance(e, ProgressEvent)
    ]


def run(proj: TurnProjection, updates: list[tuple[float, Any]]) -> list[Any]:
    out: list[Any] = []
    for at, update in updates:
        out.extend(proj.project(update, at))
    return out


# two searches in a row, then a read that fails: exercises "new" suppression and terminal phases
TURN = [
    (0.0, build_thinking_start("think1")),
    (0.5, build_thinking_complete("think1", 0.5)),
    (1.0, ours_start("c1", "search", {"query": "TODO"})),
    (2.0, build_tool_complete("c1", "3 matches")),
    (2.5, ours_start("c2", "search", {"query": "FIXME"})),
    (3.0, build_tool_complete("c2", "0 matches")),
    (4.0, ours_start("c3", "read_file", {"path": "README.md"})),
    (40.0, build_tool_failed("c3", "No such file\nor directory")),
]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("off", []),
        (
            "new",
            [
                ("c1", "started", "Searching for"),
                ("c1", "completed", "Searching for"),
                ("c2", "completed", "Searching for"),  # consecutive start of the same tool suppressed
                ("c3", "started", "Reading"),
                ("c3", "failed", "Reading"),
            ],
        ),
        (
            "all",
            [
                ("c1", "started", "Searching for"),
                ("c1", "completed", "Searching for"),
                ("c2", "started", "Searching for"),
                ("c2", "completed", "Searching for"),
                ("c3", "started", "Reading"),
                ("c3", "failed", "Reading"),
            ],
        ),
    ],
)
def test_emission_modes(mode: str, expected: list[tuple[str, str, str]]) -> None:
    events = run(TurnProjection(cfg(mode)), TURN)
    assert payloads(events) == expected
    progress = [e.payload for e in events if isinstance(e, ProgressEvent)]
    assert [p.index for p in progress] == list(range(1, len(progress) + 1))  # monotonic within the turn


def test_payload_fields_duration_error_and_emoji() -> None:
    events = run(TurnProjection(cfg("all")), TURN)
    by = {
        (e.payload.tool_call_id, e.payload.phase): e.payload for e in events if isinstance(e, ProgressEvent)
    }
    start = by[("c1", "started")]
    assert start.to_dict() == {
        "tool_call_id": "c1",
        "tool_id": "search",
        "phase": "started",
        "label": "Searching for",
        "preview": "TODO",
        "emoji": "🔎",
        "index": 1,
    }
    assert by[("c1", "completed")].duration_ms == 1000
    failed = by[("c3", "failed")]
    assert failed.duration_ms == 36000
    assert failed.error == "No such file or directory"  # one line
    assert failed.preview == "README.md"


def test_think_cards_are_not_tools_but_keep_typing_active() -> None:
    proj = TurnProjection(cfg("all"))
    assert proj.project(build_thinking_start("t"), 0.0) == []
    assert proj.active
    assert proj.project(build_thinking_complete("t", 1.0), 1.0) == []
    assert not proj.active
    proj.project(ours_start("c", "search", {"query": "x"}), 2.0)
    assert proj.active
    proj.project(build_tool_complete("c", "done"), 3.0)
    assert not proj.active


def test_verbose_lifts_the_cap_but_never_redaction() -> None:
    long_query = "word " * 80 + SECRET
    for mode, cap in (("all", 160), ("verbose", None)):
        events = TurnProjection(cfg(mode)).project(ours_start("c", "search", {"query": long_query}), 0.0)
        preview = events[0].payload.preview
        assert SECRET not in preview
        if cap is None:
            assert len(preview) > 160 and "[REDACTED]" in preview
        else:
            assert len(preview) <= cap


def test_error_is_redacted_and_capped() -> None:
    proj = TurnProjection(cfg("all"))
    proj.project(ours_start("c", "run_command", {"command": "deploy"}), 0.0)
    events = proj.project(
        update_tool_call("c", status="failed", content=None, raw_output=None).model_copy(
            update={"field_meta": {"acpProgress": {"error": f"auth {SECRET} rejected " + "x" * 400}}}
        ),
        1.0,
    )
    error = events[0].payload.error
    assert SECRET not in error and len(error) <= 160 and "\n" not in error


def test_other_agents_tools_use_title_and_a_safe_scalar_preview() -> None:
    proj = TurnProjection(cfg("all"))
    start = start_tool_call(
        "x1", "Fetch", kind="fetch", status="pending", raw_input={"api_key": SECRET, "url": "https://e.com"}
    )
    (event,) = proj.project(start, 0.0)
    p = event.payload
    assert (p.tool_id, p.label, p.preview, p.emoji) == (
        "Fetch",
        "Fetch",
        "https://e.com",
        "🌐",
    )  # an undescribed tool: its kind's symbol, as in watch
    # a later update fills in a better title; the terminal line uses it, the secret never shows
    done = update_tool_call("x1", status="completed", title="Fetch page")
    (event,) = proj.project(done, 1.0)
    assert event.payload.label == "Fetch page" and event.payload.phase == "completed"
    assert SECRET not in repr(event)


def test_nothing_after_a_terminal_phase_and_no_duplicate_start() -> None:
    proj = TurnProjection(cfg("all"))
    assert len(proj.project(ours_start("c", "search", {"query": "a"}), 0.0)) == 1
    assert proj.project(ours_start("c", "search", {"query": "a"}), 0.1) == []
    assert len(proj.project(build_tool_complete("c", "ok"), 1.0)) == 1
    assert proj.project(build_tool_failed("c", "late"), 2.0) == []


def test_reactions_follow_phases_when_enabled() -> None:
    events = run(TurnProjection(cfg("off", reactions=True)), TURN)
    assert [e.kind for e in events if isinstance(e, ReactionEvent)] == [
        "working",
        "success",
        "working",
        "success",
        "working",
        "failure",
    ]
    assert not [e for e in run(TurnProjection(cfg("all")), TURN) if isinstance(e, ReactionEvent)]


def test_answer_text_is_cumulative_per_segment_and_redacted() -> None:
    proj = TurnProjection(cfg("all"))
    out = run(
        proj,
        [
            (0.0, update_agent_message(text_block("Let me "))),
            (0.1, update_agent_message(text_block(f"look {SECRET[:10]}"))),
            (0.2, update_agent_message(text_block(SECRET[10:]))),
            (0.3, ours_start("c", "search", {"query": "a"})),
            (0.4, update_agent_message(text_block("Found it."))),
        ],
    )
    texts = [e for e in out if isinstance(e, AnswerText)]
    assert [t.segment for t in texts] == [0, 0, 0, 1]
    assert texts[2].text == "Let me look [REDACTED]"  # a secret split across chunks is still caught
    assert texts[3].text == "Found it."
