"""The client connection a wrapped agent talks to: the real one, with the watcher listening in.

:func:`~acp_adapter.with_progress` hands the wrapped agent this object instead of the SDK's
connection. Every call the agent makes goes to the real connection unchanged (same arguments, same
result, same errors); the ones that concern a session are told to the shared
:class:`~acp_adapter.frontends.foreign_watch.ForeignAgentWatch` first, so our think card closes
before the agent's update reaches the client:

* ``session_update`` — the agent spoke (a thought, a card of its own, a message chunk …);
* the requests that wait for the person or the editor (``request_permission``, the ``fs/*`` and
  ``terminal/*`` calls) — no spinner of ours until they are answered;
* ``ext_method``/``ext_notification`` whose params carry a ``sessionId``.

Anything else — methods this SDK version does not have yet included — is the real connection's
attribute, via ``__getattr__``. The deprecated camel-case call style (``conn.sessionUpdate(params)``)
is routed through the same methods by the SDK's own ``compatible_class``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from acp.schema import (
    CreateTerminalRequest,
    KillTerminalRequest,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    SessionNotification,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
    WriteTextFileRequest,
)
from acp.utils import compatible_class, param_model
from pydantic import BaseModel

from acp_adapter.frontends.foreign_watch import ForeignAgentWatch, facts_of_model
from acp_adapter.frontends.ordered_lane import OrderedLane

__all__ = ["WatchedClient"]

#: The client's session-scoped requests (their first parameter is the session id), with the
#: SDK's parameter models (for the deprecated one-model call style).
SESSION_REQUESTS: dict[str, type[BaseModel]] = {
    "request_permission": RequestPermissionRequest,
    "read_text_file": ReadTextFileRequest,
    "write_text_file": WriteTextFileRequest,
    "create_terminal": CreateTerminalRequest,
    "terminal_output": TerminalOutputRequest,
    "release_terminal": ReleaseTerminalRequest,
    "wait_for_terminal_exit": WaitForTerminalExitRequest,
    "kill_terminal": KillTerminalRequest,
}


def _session_in(params: Any) -> str | None:
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    return session_id if isinstance(session_id, str) else None


class WatchedClient:
    """The real client connection ``conn``, with the agent's session traffic told to ``watch``."""

    def __init__(self, conn: Any, watch: Callable[[], ForeignAgentWatch], lane: OrderedLane) -> None:
        self._conn = conn
        self._watch = watch
        self._lane = lane

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_conn", "_watch", "_lane"):
            raise AttributeError(name)
        return getattr(self._conn, name)

    @param_model(SessionNotification)
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        watch = self._watch()
        watch.agent_spoke(session_id, facts_of_model(update))  # closes our card first
        conn = self._conn
        await self._lane.call(lambda: conn.session_update(session_id=session_id, update=update, **kwargs))
        watch.observe(session_id, update)

    async def _ask(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        session_id = kwargs.get("session_id", args[0] if args else None)
        watch = self._watch()
        turn = watch.agent_asked(session_id if isinstance(session_id, str) else None)
        method = getattr(self._conn, name)
        try:
            return await self._lane.after_queued(lambda: method(*args, **kwargs))
        finally:
            watch.editor_answered(turn)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        session_id = _session_in(params)
        if session_id is None:
            return await self._conn.ext_method(method, params)
        watch = self._watch()
        turn = watch.agent_asked(session_id)
        try:
            return await self._lane.after_queued(lambda: self._conn.ext_method(method, params))
        finally:
            watch.editor_answered(turn)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self._watch().agent_spoke(_session_in(params))
        await self._lane.call(lambda: self._conn.ext_notification(method, params))


def _session_request(name: str, model: type[BaseModel]) -> Callable[..., Coroutine[Any, Any, Any]]:
    async def forward(self: WatchedClient, *args: Any, **kwargs: Any) -> Any:
        return await self._ask(name, args, kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"The real connection's ``{name}``, the agent waiting for the client meanwhile."
    return param_model(model)(forward)


for _name, _model in SESSION_REQUESTS.items():
    setattr(WatchedClient, _name, _session_request(_name, _model))

compatible_class(WatchedClient)
