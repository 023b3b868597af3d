"""``with_progress(agent)``: any agent built on the ACP Python SDK gets a spinner, in process.

``acp.run_agent(with_progress(MyAgent()))`` serves ``MyAgent`` exactly as before, plus what
``acp-progress relay`` gives an agent in another process: a ``kind="think"`` card while a prompt is
outstanding and the agent has said nothing for ``think_after`` seconds, its heartbeats (and, with
summaries on, a one-sentence summary), and the card's close before the agent's next update and on
every ending — answer, error, cancel, hang-up — before the prompt's answer leaves. It is the same
:class:`~acp_adapter.frontends.foreign_watch.ForeignAgentWatch` the relay uses; only the transport
differs.

How it hooks in, without touching the agent's code or subclassing ``acp.Agent``:

* The SDK gives an agent its client connection through ``on_connect(conn)`` (or, for a factory such
  as pydantic-acp's adapter, by calling it with the connection). The wrapper hands the agent a
  :class:`~acp_adapter.frontends.watched_client.WatchedClient` instead: the real connection, with the
  agent's session updates and requests told to the watcher first.
* ``prompt`` and ``cancel`` are wrapped so the turn starts with the prompt and ends, card closed and
  flushed, before the answer is returned; ``initialize`` is read for the agent's own
  ``_meta.acpProgress.thinkCards`` promise.
* Every other attribute is the agent's own, looked up on each access (``__getattr__``). The SDK's
  router discovers handlers with ``getattr`` (``load_session``, ``set_session_mode``, ``fork_session``,
  extension methods, camel-case legacy names …), so it finds exactly the methods the agent has — a
  method the agent lacks is still "method not found".
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import PromptResponse

from acp_adapter.clock import Clock, LoopClock
from acp_adapter.frontends.foreign_watch import ForeignAgentWatch, ProgressOptions
from acp_adapter.frontends.ordered_lane import OrderedLane
from acp_adapter.frontends.watched_client import WatchedClient
from acp_adapter.text import prompt_to_text

if TYPE_CHECKING:
    from acp.helpers import SessionUpdate

    from acp_adapter.config import Settings
    from acp_adapter.summary import SummaryFactory

__all__ = ["FROM_SETTINGS", "ProgressWrappedAgent", "progress_options", "with_progress"]


class _FromSettings(enum.Enum):
    FROM_SETTINGS = "from settings"


#: The default of :func:`with_progress`'s ``heartbeat`` and ``summary``: what the settings say
#: (``ACP_PROGRESS_HEARTBEAT_INTERVAL``/``_DISABLED``, ``ACP_PROGRESS_SUMMARY`` …, or the settings file).
FROM_SETTINGS = _FromSettings.FROM_SETTINGS

#: The wrapper's own attributes; everything else is the wrapped agent's.
_OWN = frozenset({"_agent", "_options", "_clock", "_binding", "_turn_keys"})


def progress_options(
    settings: Settings | None = None,
    *,
    think_after: float | None = 0.5,
    heartbeat: float | _FromSettings | None = FROM_SETTINGS,
    summary: SummaryFactory | _FromSettings | None = FROM_SETTINGS,
) -> ProgressOptions:
    """The watcher's options as the relay reads them: heartbeat and summary from the settings
    (loaded from the environment and the settings file when ``settings`` is None) unless given;
    summaries are off unless the settings turn them on, as for the relay."""
    if heartbeat is FROM_SETTINGS or summary is FROM_SETTINGS:
        from acp_adapter.config import Settings

        loaded = settings if settings is not None else Settings.from_env()
        if heartbeat is FROM_SETTINGS:
            heartbeat = None if loaded.heartbeat_disabled else loaded.heartbeat_interval
        if summary is FROM_SETTINGS:
            from acp_adapter.summary import SummaryFactory

            summary = SummaryFactory.from_settings(loaded, default_mode="off")
    return ProgressOptions(think_after=think_after, heartbeat=heartbeat, summary=summary)


def failure_reason(exc: BaseException) -> str:
    """The reason our card shows when the agent's prompt raised (redacted by the card's builder)."""
    if isinstance(exc, RequestError):
        return f"The agent answered with an error: {exc}"
    return f"The agent failed: {type(exc).__name__}: {exc}"


class _Binding:
    """One client connection: its ordered lane, its watcher, and the connection the agent sees."""

    def __init__(self, conn: Any, options: ProgressOptions, clock: Clock | None) -> None:
        self.conn = conn
        self.lane = OrderedLane()
        self._options = options
        self._clock = clock
        self._watch: ForeignAgentWatch | None = None
        self.client = WatchedClient(conn, self.watch, self.lane)

    def watch(self) -> ForeignAgentWatch:
        """The watcher, made on first use (its clock is the running loop's, unknown before)."""
        if self._watch is None:
            clock = self._clock if self._clock is not None else LoopClock()
            self._watch = ForeignAgentWatch(self._options, self._post, clock)
        return self._watch

    def _post(self, session_id: str, update: SessionUpdate) -> None:
        conn = self.conn
        self.lane.post(lambda: conn.session_update(session_id=session_id, update=update))

    async def settle(self) -> None:
        """Deliver what we added before the prompt's answer leaves, even through a cancellation."""
        while True:
            try:
                await self.lane.flush()
                return
            except asyncio.CancelledError:
                _uncancel()


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


class ProgressWrappedAgent:
    """An ACP agent (anything with the SDK's ``Agent`` methods) that shows progress while it thinks.

    Made by :func:`with_progress`; the wrapped agent is :attr:`wrapped`."""

    def __init__(
        self,
        agent: Any,
        options: ProgressOptions,
        *,
        clock: Clock | None = None,
        binding: _Binding | None = None,
    ) -> None:
        self._agent = agent
        self._options = options
        self._clock = clock
        self._binding = binding
        self._turn_keys = itertools.count(1)

    def __getattr__(self, name: str) -> Any:
        # only for names this class does not define: the agent's methods, found as the router asks
        if name.startswith("__") or name in _OWN:
            raise AttributeError(name)
        return getattr(self._agent, name)

    def __repr__(self) -> str:
        return f"with_progress({self._agent!r})"

    @property
    def wrapped(self) -> Any:
        """The agent inside."""
        return self._agent

    @property
    def options(self) -> ProgressOptions:
        return self._options

    def on_connect(self, conn: Any) -> None:
        """The SDK hands us the client connection: the agent gets the watched one."""
        binding = self._binding
        if binding is None or binding.conn is not conn:
            binding = self._binding = _Binding(conn, self._options, self._clock)
        hook = getattr(self._agent, "on_connect", None)
        if hook is not None:
            hook(binding.client)

    def _handler(self, name: str, method: str) -> Any:
        """The agent's own handler, or the error the SDK gives when there is none."""
        handler = getattr(self._agent, name, None)
        if handler is None:
            raise RequestError.method_not_found(method)
        return handler

    async def initialize(self, *args: Any, **kwargs: Any) -> Any:
        result = await self._handler("initialize", "initialize")(*args, **kwargs)
        if self._binding is not None:
            self._binding.watch().agent_initialized(result)
        return result

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        """The agent's prompt, with our card opened while it is silent and closed before the answer
        (or before the error the agent raised goes to the editor)."""
        handler = self._handler("prompt", "session/prompt")
        binding = self._binding
        if binding is None:  # not served by the SDK (called directly): nothing to show progress on
            return await handler(session_id=session_id, prompt=prompt, **kwargs)
        watch = binding.watch()
        key = f"prompt-{next(self._turn_keys)}"
        watch.prompt_started(key, session_id, lambda: prompt_to_text(prompt, attachments=False))
        try:
            response = await handler(session_id=session_id, prompt=prompt, **kwargs)
        except asyncio.CancelledError:
            watch.prompt_ended(key, "Cancelled")
            task = asyncio.current_task()
            connection_closing = task is not None and task.cancelling() > 0
            await binding.settle()
            if connection_closing:
                # the SDK cancels a request's task only while it shuts the connection down, and then
                # awaits it: an answer now would wait forever on a sender that is gone
                raise
            # the agent let a cancellation of its own escape: the editor still gets its answer
            return PromptResponse(stop_reason="cancelled")
        except Exception as exc:
            watch.prompt_ended(key, failure_reason(exc))
            await binding.settle()
            raise
        watch.prompt_ended(key)
        await binding.settle()
        return response

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Our card fails at once; then the agent hears the cancel (if it listens for one)."""
        binding = self._binding
        if binding is not None:
            binding.watch().cancel_requested(session_id)
            with contextlib.suppress(asyncio.CancelledError):
                await binding.lane.flush()
        hook = getattr(self._agent, "cancel", None)
        if hook is not None:
            await hook(session_id=session_id, **kwargs)


class _ProgressAgentFactory(ProgressWrappedAgent):
    """A wrapped agent *factory* (called with the connection, as ``AgentSideConnection`` does for a
    callable): pydantic-acp's adapter makes a fresh agent per connection this way."""

    def __call__(self, conn: Any) -> ProgressWrappedAgent:
        binding = _Binding(conn, self._options, self._clock)
        agent = self._agent(binding.client)
        return ProgressWrappedAgent(agent, self._options, clock=self._clock, binding=binding)


def with_progress(
    agent: Any,
    *,
    think_after: float | None = 0.5,
    heartbeat: float | _FromSettings | None = FROM_SETTINGS,
    summary: SummaryFactory | _FromSettings | None = FROM_SETTINGS,
    settings: Settings | None = None,
    clock: Clock | None = None,
) -> ProgressWrappedAgent:
    """Wrap an ACP SDK agent so it shows a think card while it is silent:
    ``acp.run_agent(with_progress(MyAgent()))``.

    ``agent`` is an object with the SDK's ``Agent`` methods, or a factory called with the client
    connection (as ``AgentSideConnection`` accepts; pydantic-acp's adapter is one). Options, as the
    relay's: ``think_after`` seconds of silence before the card opens (None: never), ``heartbeat``
    seconds between its beats (None: none), ``summary`` a
    :class:`~acp_adapter.summary.SummaryFactory` (None: off); heartbeat and summary default to the
    settings (``settings``, else the environment and the settings file). ``clock`` is for tests.
    Every string we add passes the canonical redactor; the agent's own updates pass unchanged.
    """
    options = progress_options(settings, think_after=think_after, heartbeat=heartbeat, summary=summary)
    wrapper = _ProgressAgentFactory if callable(agent) else ProgressWrappedAgent
    return wrapper(agent, options, clock=clock)
