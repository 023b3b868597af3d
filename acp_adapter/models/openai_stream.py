"""Per-stream state of an OpenAI-compatible chat completion, and tool-call assembly.

Why this exists: servers send a tool call in fragments spread over many chunks — several calls per
response, interleaved by ``index``, arguments cut anywhere, sometimes without ``index`` or with the
arguments as an object — and the agent loop wants whole :class:`~.base.ToolCall` values. The
fragments are the ``openai`` package's typed ``ChoiceDeltaToolCall`` objects (built without
validation, so a sloppy server's ``None`` index or object arguments arrive as they were sent). The
retry logic also needs to know how far an attempt got (headers, chunks, first delta, finish) to
word its errors and to decide whether a retry is still allowed. Both live here, apart from the
request plumbing of :mod:`.openai_compat`.

Arguments that are not a JSON object are not swallowed: they are passed as
``{RAW_ARGUMENTS_KEY: "<the text>"}``, so the toolbox rejects them with a clear argument error the
model can act on and the raw text stays visible. Empty arguments mean ``{}``.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_adapter.tooling.calls import ToolCall

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

log = logging.getLogger("acp_progress.models.openai")

RAW_ARGUMENTS_KEY = "_raw"
"""Key under which unparseable tool-call arguments reach the toolbox (which rejects it clearly)."""


@dataclass
class _PartialCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    replaced: str | None = None  # a server that sent arguments as an object, not a string


class ToolCallAssembler:
    """Collects tool-call fragments by ``index`` (falling back to ``id`` when a server omits it)."""

    def __init__(self) -> None:
        self.calls: dict[int, _PartialCall] = {}
        self._last: int | None = None

    def __bool__(self) -> bool:
        return bool(self.calls)

    def add(self, fragments: Sequence[ChoiceDeltaToolCall]) -> None:
        for fragment in fragments:
            index: int | None = fragment.index if isinstance(fragment.index, int) else None
            frag_id = fragment.id if isinstance(fragment.id, str) else ""
            if index is None:
                known = next((c.index for c in self.calls.values() if frag_id and c.id == frag_id), None)
                if known is not None:
                    index = known
                elif frag_id or self._last is None:
                    index = max(self.calls, default=-1) + 1
                else:
                    index = self._last
            call = self.calls.setdefault(index, _PartialCall(index))
            self._last = index
            if frag_id and not call.id:
                call.id = frag_id
            function = fragment.function
            if function is None:
                continue
            name = function.name
            if isinstance(name, str) and name and name != call.name:
                call.name = name if not call.name else call.name + name
            arguments: Any = function.arguments
            if isinstance(arguments, str):
                call.arguments.append(arguments)
            elif isinstance(arguments, Mapping):
                call.replaced = json.dumps(arguments)

    def complete(self) -> list[ToolCall]:
        out = []
        for index in sorted(self.calls):
            call = self.calls[index]
            raw = call.replaced if call.replaced is not None else "".join(call.arguments)
            out.append(
                ToolCall(
                    id=call.id or f"call_{uuid.uuid4().hex[:24]}",
                    name=call.name,
                    arguments=parse_arguments(call.name, raw),
                )
            )
        self.calls.clear()
        return out


def parse_arguments(name: str, raw: str) -> dict[str, Any]:
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    log.warning(
        "tool call %r: arguments are not a JSON object (%d characters); passing them as %r",
        name,
        len(text),
        RAW_ARGUMENTS_KEY,
    )
    return {RAW_ARGUMENTS_KEY: text}


@dataclass
class StreamState:
    """Progress of one attempt, used to word errors and to decide whether a retry is allowed."""

    responded: bool = False  # HTTP headers arrived
    chunks: int = 0  # events received
    started: bool = False  # a delta was yielded: no retry from here on
    finish_reason: str | None = None  # the stream is complete once a choice finished
    usage: CompletionUsage | None = None
    tools: ToolCallAssembler = field(default_factory=ToolCallAssembler)


def completion_as_chunk(raw: bytes) -> dict[str, Any] | None:
    """A non-streamed ``chat.completion`` body rewritten as one stream chunk (``message`` → ``delta``);
    None if it is not a JSON object."""
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("choices"), list):
        for choice in obj["choices"]:
            if isinstance(choice, dict) and "delta" not in choice:
                choice["delta"] = choice.pop("message", None) or {}
    return obj
