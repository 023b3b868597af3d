"""Reading the tool cards a recording client got: the cards of a session (think cards left out),
the progress a card reported, the text of an update's content."""

from __future__ import annotations

from acp.schema import ToolCallStart

from tests.helpers.acp_agent import RecordingClient


def tool_cards(client: RecordingClient, session_id: str) -> list[list[object]]:
    return [
        ups
        for ups in client.cards(session_id).values()
        if isinstance(ups[0], ToolCallStart) and ups[0].kind != "think"
    ]


def progress_of(card: list[object]) -> list[dict[str, object]]:
    out = []
    for u in card:
        meta = (getattr(u, "field_meta", None) or {}).get("acpProgress", {})
        if meta.get("phase") == "progress" and "progress" in meta:
            out.append(meta["progress"])
    return out


def text_of(update: object) -> str:
    return " ".join(getattr(c.content, "text", "") for c in (getattr(update, "content", None) or []))
