"""Model back-ends behind one small streaming interface (see ``base``)."""

from __future__ import annotations

from acp_adapter.models.base import (
    ChatModel,
    ImagePart,
    Message,
    ModelError,
    ModelEvent,
    PlanStep,
    PlanUpdate,
    ReasoningDelta,
    StatusNote,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from acp_adapter.tooling.calls import ToolCall

__all__ = [
    "ChatModel",
    "ImagePart",
    "Message",
    "ModelError",
    "ModelEvent",
    "PlanStep",
    "PlanUpdate",
    "ReasoningDelta",
    "StatusNote",
    "TextDelta",
    "ToolCall",
    "ToolCallRequest",
    "ToolSpec",
    "UsageReport",
    "create_model",
]


def create_model(settings: object) -> ChatModel:
    """Build the back-end named by ``settings.model`` (imports lazily: openai is an optional extra)."""
    from acp_adapter.config import Settings

    assert isinstance(settings, Settings)
    if settings.model == "openai":
        from acp_adapter.models.openai_compat import OpenAICompatModel

        return OpenAICompatModel(settings.openai)
    from acp_adapter.models.embedded import EmbeddedModel

    return EmbeddedModel(think_delay=settings.embedded_delay, chunk_delay=settings.embedded_chunk_delay)
