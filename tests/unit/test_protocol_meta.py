"""``_meta.acpProgress``: one typed model that the builders write and every consumer reads.

The wire form is pinned (byte for byte, key order included), every builder's ``_meta`` parses as
the model, the hot path's hand-built dict equals the model's dump, and a foreign or malformed
``_meta`` is ignored by every consumer instead of breaking it.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from acp import start_tool_call, update_tool_call
from acp.schema import AllowedOutcome, RequestPermissionResponse, Usage

from acp_adapter.agent.tool_cards import PermissionAnswer
from acp_adapter.client.driver import AUTOMATIC_META
from acp_adapter.frontends.agui.projection import reported_progress
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.relay import shows_own_think_cards
from acp_adapter.frontends.watch.render import CardBoard
from acp_adapter.protocol.meta import (
    META_KEY,
    ProgressMeta,
    ProgressReport,
    SummaryStatus,
    meta_field,
    meta_of,
    phase_of,
    read_meta,
)
from acp_adapter.store.turn_entries import is_progress, is_think_card
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


def wire(update: Any) -> str:
    return json.dumps(update.field_meta[META_KEY], ensure_ascii=False)


def test_every_builder_writes_the_same_wire_form_as_before() -> None:
    """The exact JSON of each builder's ``_meta.acpProgress`` (pinned, so the wire format cannot drift)."""
    named = {"toolId": "read_file", "label": "Reading", "preview": "a.py", "emoji": "📖"}
    expected = [
        (build_thinking_start("t"), '{"phase": "thinking", "elapsedMs": 0}'),
        (build_thinking_progress("t", 2.5), '{"phase": "thinking", "elapsedMs": 2500}'),
        (
            build_thinking_progress("t", 40, "waiting", summary="Checking the test.", summary_revision=3),
            '{"phase": "thinking", "elapsedMs": 40000, "status": "waiting", '
            '"summary": {"summary": "Checking the test.", "revision": 3}}',
        ),
        (build_thinking_complete("t", 1.0), '{"phase": "done", "elapsedMs": 1000}'),
        (build_thinking_failed("t", "boom", 1.0), '{"phase": "failed", "elapsedMs": 1000, "reason": "boom"}'),
        (
            build_tool_start("c", "Read", "read", meta=named),
            '{"phase": "started", "toolId": "read_file", '
            '"label": "Reading", "preview": "a.py", "emoji": "📖"}',
        ),
        (build_tool_start("c", "Read", "read"), '{"phase": "started"}'),
        (
            build_tool_progress("c", value=3, total=10),
            '{"phase": "progress", "progress": {"value": 3, "total": 10}}',
        ),
        (
            build_tool_progress("c", value=0.5, message="half"),
            '{"phase": "progress", "progress": {"value": 0.5, "message": "half"}}',
        ),
        (build_tool_complete("c", "ok", duration=1.25), '{"phase": "completed", "durationMs": 1250}'),
        (build_tool_complete("c", "ok"), '{"phase": "completed"}'),
        (
            build_tool_failed("c", "bad", duration=0.5),
            '{"phase": "failed", "error": "bad", "durationMs": 500}',
        ),
    ]
    for update, text in expected:
        assert wire(update) == text


def test_builder_meta_parses_as_the_model_and_dumps_back_identically() -> None:
    updates = [
        build_thinking_start("t"),
        build_thinking_progress("t", 3, "s", summary="x", summary_revision=1),
        build_thinking_failed("t", "r", 1),
        build_tool_start(
            "c", "T", "other", meta=ProgressMeta(tool_id="x", label="L", preview="p", emoji="🧰")
        ),
        build_tool_progress("c", value=1, total=2, message="m"),
        build_tool_progress("c", message="only"),
        build_tool_failed("c", "e", duration=1),
    ]
    for update in updates:
        meta = meta_of(update)
        assert meta is not None
        # the hot path's hand-built dict included: it is exactly what the model dumps to
        assert meta_field(meta) == update.field_meta


def test_progress_update_carries_only_what_changed() -> None:
    """A progress update has no ``status`` (the card is in_progress since its
    start), no title, no kind; only the reported fields."""
    update = build_tool_progress("c", value=1)
    dumped = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert set(dumped) == {"sessionUpdate", "toolCallId", "content", "_meta"}
    assert dumped["_meta"] == {META_KEY: {"phase": "progress", "progress": {"value": 1}}}


def test_the_other_messages_meta_is_typed_too() -> None:
    assert AUTOMATIC_META == {META_KEY: {"automatic": True}}
    usage = Usage(total_tokens=3, input_tokens=1, output_tokens=2)
    assert meta_field(ProgressMeta(usage=usage)) == {
        META_KEY: {"usage": {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}}
    }
    assert meta_field(ProgressMeta(think_cards=True)) == {META_KEY: {"thinkCards": True}}
    parsed = read_meta({META_KEY: {"usage": {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}}})
    assert parsed is not None and parsed.usage == usage


FOREIGN: list[Any] = [
    None,
    "a string",
    [1, 2],
    {},
    {"other.vendor": {"phase": "progress"}},
    {META_KEY: None},
    {META_KEY: "not an object"},
    {META_KEY: [1]},
    {META_KEY: {"phase": "exploding"}},
    {META_KEY: {"progress": {"value": "3", "total": 10}}},
    {META_KEY: {"progress": {"value": True, "total": 10}}},
    {META_KEY: {"progress": "half"}},
    {META_KEY: {"elapsedMs": 1.5}},
    {META_KEY: {"toolId": 7}},
    {META_KEY: {"thinkCards": "yes"}},
    {META_KEY: {"automatic": 1}},
    {META_KEY: {"summary": {"summary": "x"}}},
]


@pytest.mark.parametrize("field_meta", FOREIGN)
def test_foreign_or_invalid_meta_reads_as_none(field_meta: Any) -> None:
    assert read_meta(field_meta) is None


def test_unknown_fields_of_ours_are_ignored_not_fatal() -> None:
    meta = read_meta({META_KEY: {"phase": "progress", "progress": {"value": 1, "total": 2}, "newThing": 1}})
    assert meta is not None and meta.progress == ProgressReport(value=1, total=2)
    assert read_meta({META_KEY: {"summary": {"summary": "s", "revision": 2}}}) == ProgressMeta(
        summary=SummaryStatus(summary="s", revision=2)
    )


def _with(update: Any, field_meta: Any) -> Any:
    return update.model_copy(update={"field_meta": field_meta})


@pytest.mark.parametrize("field_meta", FOREIGN[1:])
def test_every_consumer_ignores_an_invalid_meta(field_meta: Any) -> None:
    start = _with(start_tool_call("c", "Other agent's tool", kind="read", status="in_progress"), field_meta)
    progress = _with(update_tool_call("c", status="in_progress"), field_meta)
    failed = _with(update_tool_call("c", status="failed"), field_meta)
    # watch
    board = CardBoard()
    board.apply(start, 0.0)
    board.apply(progress, 1.0)
    assert board.cards["c"].progress is None and board.cards["c"].report is None
    # AG-UI
    assert reported_progress(progress) == {}
    # bridges: the card is named by its title, the failure by its content
    projection = TurnProjection(ProgressConfig(tool_progress="all"))
    events = projection.project(start, 0.0) + projection.project(failed, 1.0)
    assert events
    # relay, store, agent
    assert shows_own_think_cards({"_meta": field_meta}) is False
    assert not is_think_card(start) and not is_progress(progress)
    answer = RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id="allow"), field_meta=field_meta
    )
    assert PermissionAnswer.of(answer, allowed=True).automatic is False


def test_consumers_read_our_meta() -> None:
    progress = build_tool_progress("c", value=2, total=4, message="half")
    board = CardBoard()  # watch
    board.apply(start_tool_call("c", "Scan", kind="search", status="in_progress"), 0.0)
    board.apply(progress, 1.0)
    assert board.cards["c"].progress == (2.0, 4.0)
    assert reported_progress(progress) == {"value": 2, "total": 4, "message": "half"}
    assert is_progress(progress) and is_think_card(build_thinking_start("t"))
    assert shows_own_think_cards({"_meta": {META_KEY: {"thinkCards": True}}})
    answer = RequestPermissionResponse(
        outcome=AllowedOutcome(outcome="selected", option_id="allow"), field_meta=AUTOMATIC_META
    )
    assert PermissionAnswer.of(answer, allowed=True).automatic


def test_phase_of_reads_only_a_known_phase() -> None:
    assert phase_of(build_tool_progress("c", value=1)) == "progress"
    assert phase_of(build_thinking_start("t")) == "thinking"
    for field_meta in FOREIGN[:9]:
        assert phase_of(_with(update_tool_call("c"), field_meta)) is None


def test_the_meta_key_is_spelled_only_in_its_home() -> None:
    """Every other module uses ``META_KEY``: a second spelling would drift when the key changes."""
    package = Path(__file__).resolve().parents[2] / "acp_adapter"
    home = package / "protocol" / "meta.py"
    spelled = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in sorted(package.rglob("*.py"))
        if path != home
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value == "acpProgress"
    ]
    assert spelled == []
