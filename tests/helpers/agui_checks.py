"""Shared assertions for AG-UI event streams: each event parses as its model; the order rules hold."""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter

EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def parse_wire(payload: dict[str, Any]) -> Any:
    """Validate one wire event (camelCase JSON) as the ag-ui-protocol model of its ``type``."""
    event = EVENT_ADAPTER.validate_python(payload)
    assert event.type.value == payload["type"]
    return event


def wire(events: list[Any]) -> list[dict[str, Any]]:
    """Serialise model events exactly as the SSE encoder does."""
    return [json.loads(e.model_dump_json(by_alias=True)) for e in events]


def check_order(events: list[dict[str, Any]]) -> None:
    """RUN_STARTED first, one terminal event last, and every bracket opened before use and closed."""
    types = [e["type"] for e in events]
    assert types, "no events"
    assert types[0] == "RUN_STARTED", types
    assert types[-1] in ("RUN_FINISHED", "RUN_ERROR"), types
    assert sum(t in ("RUN_FINISHED", "RUN_ERROR", "RUN_STARTED") for t in types) == 2, types
    open_text: set[str] = set()
    open_reasoning: set[str] = set()
    tool_state: dict[str, str] = {}
    for event in events:
        kind, mid, tid = event["type"], event.get("messageId"), event.get("toolCallId")
        if kind == "TEXT_MESSAGE_START":
            assert mid not in open_text
            open_text.add(mid)
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert mid in open_text, event
        elif kind == "TEXT_MESSAGE_END":
            open_text.remove(mid)
        elif kind == "REASONING_START":
            open_reasoning.add(mid)
        elif kind in ("REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            assert mid in open_reasoning, event
        elif kind == "REASONING_END":
            open_reasoning.remove(mid)
        elif kind == "TOOL_CALL_START":
            assert tid not in tool_state, event
            tool_state[tid] = "open"
        elif kind == "TOOL_CALL_ARGS":
            assert tool_state.get(tid) == "open", event
        elif kind == "TOOL_CALL_END":
            assert tool_state.get(tid) == "open", event
            tool_state[tid] = "ended"
        elif kind == "TOOL_CALL_RESULT":
            assert tool_state.get(tid) == "ended", event
            tool_state[tid] = "result"
        elif kind == "ACTIVITY_SNAPSHOT" and event["activityType"] == "TOOL_PROGRESS":
            assert tool_state.get(event["content"]["toolCallId"]) == "ended", event
        assert kind != "ACTIVITY_DELTA"
    assert not open_text and not open_reasoning, (open_text, open_reasoning)
    assert all(state != "open" for state in tool_state.values()), tool_state
