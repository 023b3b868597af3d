"""Progress summaries: a replaceable one-sentence status written beside a turn's update stream.

A capability observes the canonical ACP update stream of one turn (``agent_thought_chunk`` =
reasoning, ``tool_call``/``tool_call_update`` = tools, ``agent_message_chunk`` = answer; think cards
are reasoning, not tools), keeps a small snapshot of it, and asks a separate generator — your
function, an OpenAI-compatible model, or the offline embedded writer — for one sentence on a
cadence or on events. Each new sentence is a :class:`SummaryEvent` with a growing ``revision``
that a surface shows in place of the previous one. It never delays, changes or breaks the primary
stream, and it goes quiet the moment the turn ends.

The stable API for front-ends (``serve``, ``relay``, ``watch``, AG-UI, chat bridges)::

    from acp_adapter.summary import from_settings

    summary = from_settings(                       # None when ACP_PROGRESS_SUMMARY is off
        settings,                                  # acp_adapter.config.Settings
        user_text=person_text,                     # the request (context payloads are stripped)
        on_summary=lambda event: show(event.to_dict()),
        on_trace=lambda name, attrs: ...,          # "agent.progress-summary.error" …
        default_mode="embedded",                   # this front-end's default for ACP_PROGRESS_SUMMARY=auto
    )
    if summary is not None:
        summary.start()                            # on the event loop; or ``async with summary:``
        for update in turn:                        # every SessionUpdate the client sees, in order
            summary.observe(update)                # O(1), never awaits the generator
        summary.stop("finished")                   # or "cancelled" / "failed"; nothing is emitted after
        summary.latest                             # the last SummaryEvent, or None

* :func:`from_settings` — one turn's :class:`ProgressSummary` per the settings (cheap: the
  generator is built once per distinct settings). :meth:`SummaryFactory.from_settings` +
  :meth:`SummaryFactory.create` do the same in two steps (validate at start-up, create per turn);
  both raise :class:`~acp_adapter.config.ConfigError` naming the variable.
* :class:`ProgressSummary` ``(generator, *, user_text, interval=10, max_length=180, guidance,
  template, variables, id, timeout=20, on_summary, on_trace, clock, input, messages)`` with
  ``start()``, ``observe(update)``, ``stop(outcome)``, ``await aclose(outcome)``, ``async with``,
  ``latest``, ``snapshot()``, ``stats``. ``generator`` may be a plain ``execute`` function (sync
  or async) returning a string or ``{"summary": ...}``; it receives a :class:`SummaryRequest`.
* :class:`SummaryEvent` ``(summary, revision, id=None)`` — frozen; ``to_dict()`` is
  ``{"type": "progress-summary", "summary", "revision", "id"?}``.
* Generators: :class:`ExecuteGenerator`, :class:`ModelGenerator` (``openai.AsyncOpenAI``, own base
  URL/model/key), :class:`EmbeddedGenerator` (offline, deterministic).
* Templates: a Jinja2 string rendered sandboxed with ``data.userText``, ``data.elapsed``,
  ``data.reasoningActive``, ``data.reasoningActiveText``, ``data.activeTools``,
  ``data.completedTools``, ``data.previous`` and ``data.<variable>``; or a function of a
  :class:`TemplateContext`. The capability's safety rules stay in the system message either way.
* Time: :class:`LoopClock` by default; tests pass a :class:`ManualClock` and ``await clock.advance(s)``.
* Traces: ``on_trace(name, attrs)`` and a record on the ``acp_progress.summary`` logger (``extra``
  ``trace``/``trace_attrs``) for :data:`TRACE_ERROR`, :data:`TRACE_ABORT`, :data:`TRACE_EMIT`. An
  error trace carries ``reason`` (``error``, ``timeout``, ``template``) and ``errorType``, never
  the error's message.

Every string that leaves — the prompt, the summary — passes the canonical redactor.
"""

from __future__ import annotations

from acp_adapter.summary.capability import (
    DEFAULT_INTERVAL,
    DEFAULT_MAX_LENGTH,
    DEFAULT_TIMEOUT,
    ProgressSummary,
)
from acp_adapter.summary.clean import clean_summary
from acp_adapter.summary.clock import Clock, LoopClock, ManualClock, Timer
from acp_adapter.summary.event import (
    TRACE_ABORT,
    TRACE_EMIT,
    TRACE_ERROR,
    Outcome,
    SummaryCallback,
    SummaryEvent,
    TraceCallback,
)
from acp_adapter.summary.factory import SummaryFactory, SummaryMode, from_settings, resolve_mode
from acp_adapter.summary.generators import (
    EmbeddedGenerator,
    ExecuteFunction,
    ExecuteGenerator,
    GeneratorResult,
    ModelGenerator,
    SummaryGenerator,
    SummaryRequest,
    embedded_summary,
)
from acp_adapter.summary.prompt import BuiltPrompt, PromptBuilder, default_facts, instructions
from acp_adapter.summary.snapshot import (
    ProgressSnapshot,
    SnapshotTracker,
    clean_user_text,
    tool_name,
)
from acp_adapter.summary.stats import SummaryStats
from acp_adapter.summary.templates import PromptTemplate, StringTemplate, TemplateContext

__all__ = [
    "DEFAULT_INTERVAL",
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_TIMEOUT",
    "TRACE_ABORT",
    "TRACE_EMIT",
    "TRACE_ERROR",
    "BuiltPrompt",
    "Clock",
    "EmbeddedGenerator",
    "ExecuteFunction",
    "ExecuteGenerator",
    "GeneratorResult",
    "LoopClock",
    "ManualClock",
    "ModelGenerator",
    "Outcome",
    "ProgressSnapshot",
    "ProgressSummary",
    "PromptBuilder",
    "PromptTemplate",
    "SnapshotTracker",
    "StringTemplate",
    "SummaryCallback",
    "SummaryEvent",
    "SummaryFactory",
    "SummaryGenerator",
    "SummaryMode",
    "SummaryRequest",
    "SummaryStats",
    "TemplateContext",
    "Timer",
    "TraceCallback",
    "clean_summary",
    "clean_user_text",
    "default_facts",
    "embedded_summary",
    "from_settings",
    "instructions",
    "resolve_mode",
    "tool_name",
]
