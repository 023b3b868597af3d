"""The model interface: a blocking iterator of typed events, cancellable through a token.

Keeping it this small is what lets the embedded offline model, an OpenAI-compatible server and
test doubles plug into the same agent loop, and lets the loop place its three spinner hook sites
(start before the call, complete on the first event, heartbeat while waiting) once for all.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from acp_adapter.cancel import CancelToken
from acp_adapter.errors import AcpProgressError
from acp_adapter.text import base64_size
from acp_adapter.tooling.calls import ToolSpec

if TYPE_CHECKING:  # its home is tooling.calls: a model names it, this module does not hand it out
    from acp_adapter.tooling.calls import ToolCall


@dataclass(frozen=True)
class ImagePart:
    """An image the user attached (base64 ``data``): a back-end that sees images gets it."""

    mime_type: str
    data: str

    @property
    def size(self) -> int:
        """The image's size in bytes (decoded)."""
        return base64_size(self.data)


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    #: images attached to a user message (the stored history keeps only the text's note of them)
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True)
class TextDelta:
    """A piece of the answer text."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """Provider reasoning text; it goes to the thought channel, never the spinner."""

    text: str


@dataclass(frozen=True)
class ToolCallRequest:
    """A complete tool call (arguments fully assembled)."""

    call: ToolCall


@dataclass(frozen=True)
class UsageReport:
    input_tokens: int
    output_tokens: int
    total_tokens: int
    context_window: int | None = None
    #: what the call cost in US dollars, when the server reports it (``usage.cost``); None: unknown
    cost: float | None = None


@dataclass(frozen=True)
class StatusNote:
    """What the back-end is doing while no content arrives (e.g. ``Retrying in 4s (429)``).

    It is not a "first delta": the spinner stays open and shows the note in its heartbeat.
    """

    text: str


PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]


@dataclass(frozen=True)
class PlanStep:
    """One entry of the model's plan (ACP ``PlanEntry``). ``call_ids`` are the tool calls that
    carry the step out: the agent loop moves the step along as they run (the embedded model's
    plans); a plan without them is moved by the model itself (the OpenAI plan tool)."""

    content: str
    status: PlanStatus = "pending"
    priority: PlanPriority = "medium"
    call_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanUpdate:
    """The model's whole plan, replacing any earlier one (ACP sends plans whole)."""

    steps: tuple[PlanStep, ...]


ModelEvent = TextDelta | ReasoningDelta | ToolCallRequest | UsageReport | StatusNote | PlanUpdate


@dataclass
class ModelError(AcpProgressError):
    """A model call failed; ``reason`` is short and fit to show a user (the caller redacts it).

    The other fields are what a retry loop needs, typed: whether it may be retried, the HTTP
    ``status``, the short ``label`` shown in ``Retrying in 2s (429)``, the server's ``retry_after``
    in seconds, the server's own words (``detail``, the tail of ``reason``) and the ``attempts`` made.
    """

    reason: str
    retryable: bool = False
    status: int | None = None
    label: str | None = None
    retry_after: float | None = None
    detail: str = ""
    attempts: int = 1

    def __str__(self) -> str:
        return self.reason

    @property
    def head(self) -> str:
        """``reason`` without the server's ``detail``."""
        suffix = f": {self.detail}"
        return self.reason[: -len(suffix)] if self.detail and self.reason.endswith(suffix) else self.reason


class ChatModel(Protocol):
    """A streaming chat model. ``stream`` blocks; it must return promptly once ``cancel`` is set
    (raising :class:`~acp_adapter.cancel.TurnCancelled`)."""

    name: str

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]: ...
