"""The root of every exception acp-progress raises on purpose.

``except AcpProgressError`` catches anything this package decided to raise — a bad setting, an
agent that would not start, a model call that failed, a tool that refused its input, a store
that cannot be read — and nothing else: a bug (``TypeError``, ``KeyError`` …) or an error of a
library underneath still surfaces as itself. Each error keeps the standard base a caller would
already catch (``ValueError`` for bad input), so the root adds a way to catch, never removes one.

The families, by where they come from:

* configuration and input: ``config.ConfigError``, ``presentation.DescriptorError``,
  ``descriptor_file.InputError``, ``protocol.NotStrictJson`` (all also ``ValueError``);
* the agent's own turn: ``cancel.TurnCancelled``, ``models.ModelError``, ``toolbox.ToolError``;
* driving an agent (the client side): ``client.AgentError`` and its kinds (``AgentStartError``,
  ``AgentLogError``, ``AgentCrashed``, ``TurnInProgress``);
* durable state: ``store.StoreError``, ``store.StoreVersionError``;
* the front-ends: the AG-UI, bridge and relay errors in their own packages.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

__all__ = ["AcpProgressError", "exception_chain"]


class AcpProgressError(Exception):
    """Base class of every exception this package raises on purpose."""


def exception_chain(exc: BaseException, limit: int = 50) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of exception groups among them, each
    once, breadth first, at most ``limit``.

    Libraries wrap what actually happened (anyio reports a refused connect as an ``OSError``
    caused by a group; pydantic wraps a Ctrl-C during schema building in its own error), so a
    question such as "was this a Ctrl-C?" or "was the connection refused?" looks down the chain.
    """
    seen: set[int] = set()
    todo: deque[BaseException] = deque([exc])
    while todo and len(seen) < limit:
        current = todo.popleft()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
