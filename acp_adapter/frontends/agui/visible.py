"""Every event the endpoint emits, with its text made safe to show (:mod:`acp_adapter.safety.web_text`).

Applied where events are encoded for the wire, so no producer (the projection, a summary, an
interrupt's question, an error message) can forget it: terminal control sequences are removed,
bidirectional controls, zero-width and tag characters are shown as ``<U+202E>``. A tool call's
arguments are JSON text: they are parsed, cleaned value by value and written again, so an escape
hidden as ``\\u001b`` inside the JSON is caught too.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ag_ui.core import BaseEvent, ToolCallArgsEvent

from acp_adapter.safety.web_text import web_visible, web_visible_value

log = logging.getLogger("acp_progress.agui.visible")


def visible_json_text(text: str) -> str:
    """JSON text with every string in it cleaned; text that is not JSON is cleaned as text."""
    try:
        value = json.loads(text)
    except ValueError:
        return web_visible(text)
    return json.dumps(web_visible_value(value), ensure_ascii=False)


def visible_event(event: BaseEvent) -> BaseEvent:
    """``event`` with every string it carries cleaned (the same event when nothing changed)."""
    dumped: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    cleaned = web_visible_value(dumped)
    if isinstance(event, ToolCallArgsEvent):
        cleaned["delta"] = visible_json_text(dumped["delta"])
    if cleaned == dumped:
        return event
    try:
        return type(event).model_validate(cleaned)
    except ValueError:  # cannot happen for our own events: never send the uncleaned one
        log.exception("could not rebuild a cleaned %s event; sending a placeholder", event.type)
        return type(event).model_validate(web_visible_value(_placeholder(dumped)))


def _placeholder(dumped: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ("[not shown]" if isinstance(v, str) and k not in ("type",) and not k.endswith("Id") else v)
        for k, v in dumped.items()
    }
