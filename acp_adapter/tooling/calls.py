"""What a tool call is, independent of who asks for it: the shape a model requests a call in, and the
shape a tool is offered to a model in.

They live with the tools, not with the model back-ends, so the tool layer never depends on the
models; back-ends import these types to emit calls and to describe the toolbox to their server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON-schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class Concern:
    """Why a call of a tool that never asks must ask this once (a read of a hard-linked file):
    ``reason`` is shown in the question, ``rule`` is the key an "always" answer is kept under
    (one for every tool that has the same concern) and ``covers`` says what it covers, in words."""

    reason: str
    rule: str
    covers: str


@dataclass(frozen=True)
class ToolCall:
    """A tool call requested by the model; ``id`` is the model's own id and keys the ACP card."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    #: set (by the toolbox) only on the question a running tool asks: why this call asks
    concern: Concern | None = None
