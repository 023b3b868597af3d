"""The progress-summary capability on a fake clock: cadence, event-driven, revisions, abort rules.

No test waits real seconds: a :class:`ManualClock` is advanced and the loop settled in between.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from acp import start_tool_call, update_agent_message_text, update_agent_thought_text, update_tool_call

from acp_adapter.summary import (
    TRACE_ABORT,
    TRACE_ERROR,
    ManualClock,
    ProgressSummary,
    SummaryEvent,
    SummaryRequest,
)

pytestmark = pytest.mark.anyio


class Scripted:
    """A generator that answers from a list; with ``block`` each call waits for ``release()``."""

    def __init__(self, *answers: Any, block: bool = False) -> None:
        self.answers = list(answers) or ["Working on it."]
        self.block = block
        self.calls: list[SummaryRequest] = []
        self.gates: list[asyncio.Event] = []
        self.cancelled = 0

    async def generate(self, request: SummaryRequest) -> Any:
        self.calls.append(request)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if self.block:
            gate = asyncio.Event()
            self.gates.append(gate)
            try:
                await gate.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return answer

    def release(self) -> None:
        for gate in self.gates:
            gate.set()


class Recorder:
    def __init__(self) -> None:
        self.events: list[SummaryEvent] = []
        self.traces: list[tuple[str, dict[str, Any]]] = []

    def summary(self, event: SummaryEvent) -> None:
        self.events.append(event)

    def trace(self, name: str, attrs: Any) -> None:
        self.traces.append((name, dict(attrs)))


def make(generator: Any, clock: ManualClock, rec: Recorder, **kwargs: Any) -> ProgressSummary:
    summary = ProgressSummary(
        generator,
        user_text=kwargs.pop("user_text", "fix the failing test"),
        clock=clock,
        on_summary=rec.summary,
        on_trace=rec.trace,
        **kwargs,
    )
    return summary.start()


def think(card: str = "think-1") -> Any:
    return start_tool_call(card, "Thinking...", kind="think", status="in_progress")


def tool(card: str, title: str, kind: Any = "read") -> Any:
    return start_tool_call(card, title, kind=kind, status="in_progress", raw_input={"path": "x"})


def done(card: str, status: Any = "completed") -> Any:
    return update_tool_call(card, status=status)


# ------------- the three checks: the stream never waits, revisions grow, nothing after stop


async def test_the_primary_stream_continues_at_once_while_the_first_summary_arrives() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("Reading the test file.", block=True)
    summary = make(gen, clock, rec)
    primary = [think(), done("think-1"), tool("c1", "Reading test_x.py"), update_agent_message_text("Hi")]
    delivered = []
    for update in primary:  # the primary stream: each observe returns without awaiting anything
        summary.observe(update)
        delivered.append(update)
    assert delivered == primary and rec.events == [], "the stream went on before any summary"
    await clock.settle()
    assert len(gen.calls) == 1 and summary.generating, "the first chunk started the first generation"
    gen.release()
    await clock.settle()
    assert [e.summary for e in rec.events] == ["Reading the test file."]
    assert rec.events[0].revision == 1 and summary.latest == rec.events[0]
    summary.stop("finished")


async def test_a_later_changed_summary_arrives_with_a_higher_revision_past_the_interval() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("Thinking about the failing test.", "Reading test_x.py.")
    summary = make(gen, clock, rec, interval=10)
    summary.observe(think())
    await clock.advance(9.9)
    assert [e.revision for e in rec.events] == [1]
    await clock.advance(0.1)  # t = 10: the cadence tick
    assert [(e.summary, e.revision) for e in rec.events] == [
        ("Thinking about the failing test.", 1),
        ("Reading test_x.py.", 2),
    ]
    summary.stop("finished")


async def test_stopping_before_the_next_interval_means_no_later_summary() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("One.", "Two.", "Three.")
    summary = make(gen, clock, rec, interval=10)
    summary.observe(think())
    await clock.advance(5)
    summary.stop("finished")
    await clock.advance(60)
    summary.observe(tool("late", "Reading late.txt"))  # after the end: ignored
    await clock.advance(60)
    assert [e.summary for e in rec.events] == ["One."]
    assert len(gen.calls) == 1 and clock.pending == 0, "no cadence timer survives the stop"


# ---------------------------------------------------------------- cadence


async def test_the_cadence_is_anchored_at_the_first_chunk_not_at_start() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("a", "b", "c", "d")
    summary = make(gen, clock, rec, interval=10)
    await clock.advance(100)  # started, but no chunk yet: nothing runs
    assert gen.calls == []
    summary.observe(update_agent_thought_text("hm"))  # t = 100: first chunk → generation now
    await clock.settle()
    assert len(gen.calls) == 1
    await clock.advance(25)  # ticks at 110 and 120
    assert len(gen.calls) == 3
    assert [round(c.snapshot.elapsed) for c in gen.calls] == [100, 110, 120]
    summary.stop("finished")


async def test_one_generation_at_a_time_and_ticks_while_pending_are_skipped() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("Slow one.", "Next one.", block=True)
    summary = make(gen, clock, rec, interval=10, timeout=1000)
    summary.observe(think())
    await clock.advance(35)  # ticks at 10, 20, 30 find the first generation pending
    assert len(gen.calls) == 1
    assert summary.stats.skipped_ticks == 3
    gen.release()
    await clock.settle()
    assert [e.summary for e in rec.events] == ["Slow one."]
    await clock.advance(5)  # tick at 40: a new generation
    assert len(gen.calls) == 2
    gen.release()
    await clock.settle()
    assert [e.revision for e in rec.events] == [1, 2]
    summary.stop("finished")


async def test_an_unchanged_result_is_not_emitted() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("Same sentence.", '  "Same   sentence."  ', {"summary": "Same sentence."}, "Other.")
    summary = make(gen, clock, rec, interval=10)
    summary.observe(think())
    await clock.advance(30)
    assert [(e.summary, e.revision) for e in rec.events] == [("Same sentence.", 1), ("Other.", 2)]
    assert summary.stats.suppressed == 2
    summary.stop("finished")


async def test_empty_results_emit_nothing() -> None:
    clock, rec = ManualClock(), Recorder()
    summary = make(Scripted("", None, {"other": 1}, "   "), clock, rec, interval=10)
    summary.observe(think())
    await clock.advance(30)
    assert rec.events == [] and summary.stats.empty == 4
    summary.stop("finished")


# ---------------------------------------------------------------- event-driven


async def test_event_driven_starts_on_the_first_non_terminal_chunk_and_then_only_on_activity() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("a", "b", "c", "d", "e")
    summary = make(gen, clock, rec, interval=0)
    summary.observe(think())
    await clock.settle()
    assert len(gen.calls) == 1
    summary.observe(update_tool_call("think-1", status="in_progress"))  # a heartbeat: no activity
    summary.observe(update_agent_message_text("partial answer"))  # answer text is not activity
    await clock.advance(120)
    assert len(gen.calls) == 1, "no activity, no generation, however long"
    summary.observe(tool("c1", "Reading a.py"))
    await clock.settle()
    assert len(gen.calls) == 2
    summary.observe(done("c1"))
    await clock.settle()
    assert len(gen.calls) == 3
    summary.observe(update_agent_thought_text("thinking again"))  # reasoning starts: activity
    summary.observe(update_agent_thought_text("still the same reasoning"))  # not new activity
    await clock.settle()
    assert len(gen.calls) == 4
    summary.stop("finished")


async def test_activity_during_a_generation_schedules_exactly_one_follow_up() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("first", "follow-up", "never", block=True)
    summary = make(gen, clock, rec, interval=0)
    summary.observe(think())
    await clock.settle()
    for i in range(5):  # lots of activity while the first generation runs
        summary.observe(tool(f"c{i}", f"Reading f{i}.py"))
        summary.observe(done(f"c{i}"))
    await clock.settle()
    assert len(gen.calls) == 1
    gen.release()
    await clock.settle()
    assert len(gen.calls) == 2, "one follow-up after the first settled"
    assert gen.calls[1].snapshot.completed_tools == tuple(f"Reading f{i}.py" for i in range(5))
    gen.release()
    await clock.advance(60)
    assert len(gen.calls) == 2, "no activity during the follow-up: nothing more"
    assert [e.summary for e in rec.events] == ["first", "follow-up"]
    summary.stop("finished")


@pytest.mark.parametrize("interval", [0, 10])
async def test_a_terminal_only_or_failed_stream_starts_nothing(interval: float) -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted()
    summary = make(gen, clock, rec, interval=interval)
    if interval == 0:
        summary.observe(done("somebody-elses-card"))  # only terminal updates
        summary.observe(done("think-x", "failed"))
    await clock.advance(30)
    summary.stop("failed")
    await clock.advance(30)
    assert gen.calls == [] and rec.events == []


async def test_updates_that_are_not_the_primary_streams_work_start_nothing() -> None:
    from acp.schema import UsageUpdate

    clock, rec = ManualClock(), Recorder()
    gen = Scripted()
    summary = make(gen, clock, rec, interval=10)
    summary.observe(UsageUpdate(session_update="usage_update", used=1, size=2))
    await clock.advance(30)
    assert gen.calls == []
    summary.stop("finished")


# ---------------------------------------------------------------- bounds and cleaning


async def test_max_length_bounds_the_summary_and_a_cut_one_ends_with_an_ellipsis() -> None:
    clock, rec = ManualClock(), Recorder()
    long = "Checking " + " ".join(f"file{i}.py" for i in range(60)) + " for the failing assertion."
    gen = Scripted(f"“{long}”\n\n", "Short and\n  sweet.")
    summary = make(gen, clock, rec, interval=10, max_length=50)
    summary.observe(think())
    await clock.advance(10)
    first, second = rec.events
    assert len(first.summary) <= 50 and first.summary.endswith("…")
    assert first.summary.startswith("Checking file0.py") and "\n" not in first.summary
    assert second.summary == "Short and sweet."
    summary.stop("finished")


@pytest.mark.parametrize("max_length", [1, 2, 20, 180])
async def test_a_cut_summary_is_never_longer_than_the_bound(max_length: int) -> None:
    from acp_adapter.summary import clean_summary

    for text in ["x" * 500, "word " * 100, "a" * max_length, "a" * (max_length + 1), "ab " * 70]:
        cleaned = clean_summary(text, max_length)
        assert len(cleaned) <= max_length
        if len(" ".join(text.split())) > max_length:
            assert cleaned.endswith("…")


# ---------------------------------------------------------------- abort and failures


@pytest.mark.parametrize("outcome", ["finished", "cancelled", "failed"])
async def test_the_end_aborts_the_generation_in_flight_and_drops_its_late_result(outcome: Any) -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("too late", block=True)
    summary = make(gen, clock, rec, interval=10)
    summary.observe(think())
    await clock.settle()
    assert summary.generating
    summary.stop(outcome)
    await clock.settle()
    assert gen.cancelled == 1, "the in-flight generation was cancelled"
    assert rec.events == [] and summary.latest is None
    assert (TRACE_ABORT, {"outcome": outcome, "generation": 1}) in rec.traces
    assert clock.pending == 0


async def test_a_result_that_ignores_cancellation_is_still_dropped() -> None:
    clock, rec = ManualClock(), Recorder()
    gate = asyncio.Event()

    async def stubborn(request: SummaryRequest) -> str:
        while True:
            try:
                await gate.wait()
                return "late result"
            except asyncio.CancelledError:
                continue  # a badly behaved generator that swallows the cancellation

    summary = make(stubborn, clock, rec, interval=10)
    summary.observe(think())
    await clock.settle()
    summary.stop("cancelled")
    gate.set()
    await clock.settle()
    assert rec.events == [] and summary.stats.dropped == 1


async def test_async_with_stops_as_failed_when_the_body_raises() -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted(block=True)
    summary = ProgressSummary(gen, clock=clock, on_summary=rec.summary, on_trace=rec.trace)
    with pytest.raises(RuntimeError):
        async with summary:
            summary.observe(think())
            await clock.settle()
            raise RuntimeError("the primary stream errored")
    assert summary.outcome == "failed" and gen.cancelled == 1 and rec.events == []


async def test_a_raising_generator_is_a_trace_and_a_sanitized_warning_never_a_broken_stream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, rec = ManualClock(), Recorder()
    calls = 0

    async def flaky(request: SummaryRequest) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 rejected by summary-host")
        return "Recovered on the next tick."

    caplog.set_level(logging.DEBUG, logger="acp_progress.summary")
    summary = make(flaky, clock, rec, interval=10)
    summary.observe(think())
    await clock.settle()
    errors = [attrs for name, attrs in rec.traces if name == TRACE_ERROR]
    assert errors == [{"reason": "error", "generation": 1, "errorType": "ConnectionError"}]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "ConnectionError" in logged and "failed" in logged
    assert "rejected" not in logged and "ghp_" not in logged and "summary-host" not in logged
    assert all(r.exc_info is None for r in caplog.records), "no traceback (it would carry the message)"
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    assert warning.name == "acp_progress.summary" and getattr(warning, "trace", None) == TRACE_ERROR
    await clock.advance(10)
    assert [e.summary for e in rec.events] == ["Recovered on the next tick."]
    summary.stop("finished")


async def test_a_hanging_generator_is_bounded_by_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("hung", "Answered after the timeout.", block=True)
    caplog.set_level(logging.WARNING, logger="acp_progress.summary")
    summary = make(gen, clock, rec, interval=10, timeout=4)
    summary.observe(think())
    await clock.advance(3.9)
    assert summary.generating
    await clock.advance(0.1)  # t = 4: the timeout fires
    assert not summary.generating and gen.cancelled == 1
    assert [a for n, a in rec.traces if n == TRACE_ERROR] == [{"reason": "timeout", "generation": 1}]
    assert any("timeout" in r.getMessage() for r in caplog.records)
    await clock.advance(6)  # t = 10: the next tick runs a new generation
    assert len(gen.calls) == 2
    gen.gates[-1].set()
    await clock.settle()
    assert [e.summary for e in rec.events] == ["Answered after the timeout."]
    summary.stop("finished")


async def test_a_sync_execute_function_runs_off_the_loop() -> None:
    import threading

    clock, rec = ManualClock(), Recorder()
    seen: list[int] = []

    def execute(request: SummaryRequest) -> dict[str, str]:
        seen.append(threading.get_ident())
        return {"summary": f"Working on: {request.snapshot.user_text}"}

    summary = make(execute, clock, rec, interval=10, user_text="the thing")
    summary.observe(think())
    for _ in range(200):
        if rec.events:
            break
        await asyncio.sleep(0.005)  # a real worker thread: wait for it briefly
    assert [e.summary for e in rec.events] == ["Working on: the thing"]
    assert seen and seen[0] != threading.get_ident()
    summary.stop("finished")


async def test_execute_receives_the_full_input_and_messages() -> None:
    clock, rec = ManualClock(), Recorder()
    got: list[SummaryRequest] = []

    async def execute(request: SummaryRequest) -> str:
        got.append(request)
        return "ok"

    run_input = {"threadId": "t1", "raw": "everything"}
    history = [{"role": "user", "content": "earlier"}]
    summary = make(execute, clock, rec, input=run_input, messages=history)
    summary.observe(think())
    await clock.settle()
    (request,) = got
    assert request.input is run_input and request.messages is history
    assert (
        request.prompt_messages[0]["role"] == "system"
        and request.prompt in request.prompt_messages[1]["content"]
    )
    summary.stop("finished")


async def test_a_failing_surface_callback_does_not_stop_the_summaries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    shown: list[int] = []

    def surface(event: SummaryEvent) -> None:
        shown.append(event.revision)
        raise RuntimeError("the surface broke")

    summary = ProgressSummary(Scripted("a", "b"), clock=clock, on_summary=surface).start()
    summary.observe(think())
    await clock.advance(10)
    assert shown == [1, 2]
    summary.stop("finished")


async def test_observe_from_another_thread_is_handed_to_the_loop() -> None:
    import threading

    clock, rec = ManualClock(), Recorder()
    gen = Scripted("From a thread.")
    summary = make(gen, clock, rec, interval=10)
    thread = threading.Thread(target=summary.observe, args=(think(),))
    thread.start()
    thread.join()
    await clock.settle()
    assert [e.summary for e in rec.events] == ["From a thread."]
    summary.stop("finished")


def test_the_event_shape() -> None:
    assert SummaryEvent("Reading.", 3).to_dict() == {
        "type": "progress-summary",
        "summary": "Reading.",
        "revision": 3,
    }
    assert SummaryEvent("Reading.", 1, id="progress").to_dict() == {
        "type": "progress-summary",
        "summary": "Reading.",
        "revision": 1,
        "id": "progress",
    }


async def test_the_id_option_is_on_every_event() -> None:
    clock, rec = ManualClock(), Recorder()
    summary = make(Scripted("a", "b"), clock, rec, interval=10, id="progress-summary")
    summary.observe(think())
    await clock.advance(10)
    assert [e.to_dict()["id"] for e in rec.events] == ["progress-summary", "progress-summary"]
    summary.stop("finished")


def test_bad_options_are_refused() -> None:
    for kwargs in ({"interval": -1}, {"interval": float("inf")}, {"max_length": 0}, {"timeout": 0}):
        with pytest.raises(ValueError):
            ProgressSummary(Scripted(), **kwargs)  # type: ignore[arg-type]
    summary = ProgressSummary(Scripted())
    with pytest.raises(ValueError, match="outcome"):
        summary.stop("done")  # type: ignore[arg-type]


async def test_a_new_card_revises_the_sentence_without_waiting_for_the_tick() -> None:
    """A new card revises the sentence at once: "Thinking about the request …" does not stay for up
    to 10 s while a tool's bar moves."""
    clock, rec = ManualClock(), Recorder()
    gen = Scripted("Thinking about the failing test.", "Reading test_x.py.", "Running the tests.", "Later.")
    summary = make(gen, clock, rec, interval=10)
    summary.observe(think())
    await clock.advance(3)
    summary.observe(done("think-1"))
    summary.observe(tool("c1", "Reading test_x.py"))  # new activity at t = 3: revised now
    await clock.settle()
    assert [e.summary for e in rec.events] == ["Thinking about the failing test.", "Reading test_x.py."]
    await clock.advance(0.2)
    summary.observe(tool("c2", "Running pytest", kind="execute"))  # 0.2 s later: at most 1 per 2 s
    await clock.settle()
    assert len(gen.calls) == 2
    await clock.advance(1.8)  # t = 5: two seconds after the last one began
    assert [e.summary for e in rec.events][-1] == "Running the tests." and len(gen.calls) == 3
    await clock.advance(9.9)  # nothing new: the cadence counts from t = 5, its next tick is t = 15
    assert len(gen.calls) == 3
    await clock.advance(0.1)
    assert len(gen.calls) == 4
    summary.stop("finished")
    assert clock.pending == 0
