"""Fakes for bridge tests: a settable clock and a sink that records every platform call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_adapter.frontends.bridges.sink import utf16_len


@dataclass
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class RecordingSink:
    """A chat that remembers what it shows: posts, edits (with the clock time), typing, reactions."""

    clock: FakeClock | None = None
    limit: int = 4096
    typing_ttl: float | None = 5.0
    utf16: bool = True
    ops: list[tuple[Any, ...]] = field(default_factory=list)
    messages: dict[int, str] = field(default_factory=dict)
    fail_edits: bool = False
    #: texts posted with ``silent=True`` (no notification on the phone)
    silent: list[str] = field(default_factory=list)

    def measure(self, text: str) -> int:
        return utf16_len(text) if self.utf16 else len(text)

    def _t(self) -> float:
        return self.clock.now if self.clock is not None else 0.0

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> int:
        assert self.measure(text) <= self.limit, "delivery posted past the platform limit"
        mid = len(self.messages) + 1
        self.messages[mid] = text
        self.ops.append(("post", mid, text, self._t()))
        if silent:
            self.silent.append(text)
        return mid

    async def edit(self, message_id: int, text: str) -> None:
        assert self.measure(text) <= self.limit, "delivery edited past the platform limit"
        if self.fail_edits:
            raise RuntimeError("edit refused token=sk-live-abcdef0123456789abcdef")
        self.messages[message_id] = text
        self.ops.append(("edit", message_id, text, self._t()))

    async def delete(self, message_id: int) -> None:
        self.messages.pop(message_id, None)
        self.ops.append(("delete", message_id))

    async def typing(self, on: bool) -> None:
        self.ops.append(("typing", on, self._t()))

    async def react(self, target: int, kind: str) -> None:
        self.ops.append(("react", target, kind))

    def kinds(self) -> list[str]:
        return [op[0] for op in self.ops]

    def edits(self) -> list[tuple[Any, ...]]:
        return [op for op in self.ops if op[0] == "edit"]

    def posts(self) -> list[str]:
        return [op[2] for op in self.ops if op[0] == "post"]

    def shown(self) -> list[str]:
        """The chat as a person sees it now, oldest message first."""
        return [self.messages[k] for k in sorted(self.messages)]
