"""Progress summaries on the AG-UI endpoint: PROGRESS_SUMMARY activity snapshots, one per run.

End to end: ``create_app(AguiOptions(summary=...))`` on uvicorn over loopback, driving this project's
agent (served in this process; embedded model, slowed down so a run spans several summary ticks);
every event read back is validated as its ag-ui-protocol model and the stream's order rules are
checked. The observer itself is also driven on a :class:`~acp_adapter.summary.ManualClock`, without
HTTP or real waits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import start_tool_call, update_agent_message_text, update_agent_thought_text, update_tool_call
from ag_ui.core import ActivitySnapshotEvent, RunAgentInput, RunFinishedEvent, UserMessage

from acp_adapter.cli import build_parser, main
from acp_adapter.config import Settings
from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.observers import ObserverSet, RunContext, RunOutcome
from acp_adapter.frontends.agui.projection import RunProjection
from acp_adapter.frontends.agui.request import BadRunInput, parse_run_request
from acp_adapter.frontends.agui.run import RunEmitter
from acp_adapter.frontends.agui.summaries import (
    PROGRESS_SUMMARY_ACTIVITY,
    SummaryObserver,
    SummarySetup,
    summary_message_id,
    summary_observers,
    summary_setup,
)
from acp_adapter.summary import ManualClock, SummaryEvent, SummaryFactory, SummaryRequest
from tests.agents.progress_agent import SECRET
from tests.helpers.acp_agent import agent_env
from tests.helpers.agui_checks import parse_wire
from tests.helpers.agui_http import Recorder, Served, assert_bad_switch_is_a_422, run, run_input, serving_all
from tests.helpers.agui_inprocess import use_in_process_agui_agents
from tests.helpers.agui_process import of_type, text_of

pytestmark = pytest.mark.timeout(120)


def summaries(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in of_type(events, "ACTIVITY_SNAPSHOT") if e["activityType"] == "PROGRESS_SUMMARY"]


def check_summaries(events: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    """The rules every run with summaries keeps: one activity id, growing revisions, all before the end."""
    shots = summaries(events)
    assert shots, [e["type"] for e in events]
    assert {s["messageId"] for s in shots} == {f"{run_id}:progress-summary"}
    assert all(s["replace"] is True for s in shots)
    revisions = [s["content"]["revision"] for s in shots]
    assert revisions == list(range(1, len(shots) + 1)), revisions
    for shot in shots:
        assert set(shot["content"]) == {"summary", "revision"}
        assert isinstance(shot["content"]["summary"], str) and shot["content"]["summary"].strip()
    last = max(events.index(s) for s in shots)
    assert last < len(events) - 1 and events[-1]["type"] == "RUN_FINISHED"  # nothing after the end
    return shots


# ---------------------------------------------------------------- end to end over HTTP


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agui-summary-ws")
    (root / "app.py").write_text("# TODO: wire the endpoint\nprint('hi')\n")
    (root / "lib.py").write_text("def f():\n    pass  # TODO later\n")
    return root


@pytest.fixture(scope="module")
def apps(workspace: Path) -> Iterator[dict[str, Served]]:
    """``on``: summaries from settings (embedded, 0.025 s cadence); ``off``: ACP_PROGRESS_SUMMARY=off;
    ``library``: AguiOptions without ``summary=`` (off unless a run asks). The agent thinks 0.15 s
    a call (six ticks)."""
    env = agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.15")
    specs: dict[str, Any] = {
        "on": Settings(summary="embedded", summary_interval=0.025),
        "off": Settings(summary="off", summary_interval=0.025),
        "library": None,
    }
    with pytest.MonkeyPatch.context() as patch:
        use_in_process_agui_agents(patch)  # the agent's process proves nothing about summaries
        served = {
            name: Served(
                create_app(AguiOptions(cwd=workspace, agent_env=env, summary=summary, run_observers=[rec])),
                rec,
            )
            for name, summary in specs.items()
            for rec in [Recorder()]
        }
        with serving_all(served):
            yield served


def test_a_run_publishes_progress_summaries_replaced_in_place(apps: dict[str, Served]) -> None:
    body = run_input("t-sum", "search for TODO")
    events = run(apps["on"].url, body)  # every event parsed as its model, order rules checked
    shots = check_summaries(events, body["runId"])
    assert len(shots) >= 2, [s["content"] for s in shots]
    texts = [s["content"]["summary"] for s in shots]
    assert texts[0].startswith("Thinking about the request to search for TODO"), texts
    assert any("earching for TODO" in t for t in texts), texts  # the tool, named by its card
    assert "found 2 matches" in text_of(events)  # the primary stream is untouched
    assert apps["on"].recorder.wait(body["runId"]).context.progress_summary is True
    # the agent is asked not to run a summary of its own: the endpoint writes the run's
    assert apps["on"].app.state.agui.host.env["ACP_PROGRESS_SUMMARY"] == "off"
    # a second run on the same thread starts its own activity at revision 1
    again = run_input("t-sum", "search for TODO")
    assert check_summaries(run(apps["on"].url, again), again["runId"])[0]["content"]["revision"] == 1


def test_summaries_off_publish_nothing_and_a_run_can_opt_either_way(apps: dict[str, Served]) -> None:
    assert not summaries(run(apps["off"].url, run_input("t-off", "search for TODO")))
    assert not summaries(run(apps["library"].url, run_input("t-lib", "search for TODO")))
    opt_in = run_input("t-off", "search for TODO", forwarded={"emitProgressSummary": True})
    check_summaries(run(apps["off"].url, opt_in), opt_in["runId"])
    lib_in = run_input("t-lib", "search for TODO", forwarded={"emitProgressSummary": True})
    check_summaries(run(apps["library"].url, lib_in), lib_in["runId"])
    opt_out = run_input("t-on", "search for TODO", forwarded={"emitProgressSummary": False})
    assert not summaries(run(apps["on"].url, opt_out))
    # null or absent: the endpoint's default holds; tool progress is an independent switch
    forwarded = {"emitProgressSummary": None, "emitToolProgress": True}
    both = run_input("t-on", "search for TODO", forwarded=forwarded)
    events = run(apps["on"].url, both)
    check_summaries(events, both["runId"])
    assert [e for e in of_type(events, "ACTIVITY_SNAPSHOT") if e["activityType"] == "TOOL_PROGRESS"]


def test_a_bad_switch_is_a_422(apps: dict[str, Served]) -> None:
    assert_bad_switch_is_a_422(apps["on"].url, "t-bad", "hello", "emitProgressSummary")


def test_a_secret_in_the_prompt_never_reaches_a_summary(apps: dict[str, Served]) -> None:
    body = run_input("t-secret", f"search for {SECRET}")
    events = run(apps["on"].url, body)
    shots = check_summaries(events, body["runId"])
    assert any("[REDACTED]" in s["content"]["summary"] for s in shots), [s["content"] for s in shots]
    assert SECRET not in json.dumps(events) and SECRET[4:16] not in json.dumps(shots)


# ---------------------------------------------------------------- the observer on a manual clock


class Scripted:
    """A generator answering from a list, recording what it was asked."""

    def __init__(self, *answers: str, fail: bool = False) -> None:
        self.answers = list(answers)
        self.fail = fail
        self.calls: list[SummaryRequest] = []

    async def generate(self, request: SummaryRequest) -> str:
        self.calls.append(request)
        if self.fail:
            raise RuntimeError(f"model down, key {SECRET}")
        return self.answers[min(len(self.calls), len(self.answers)) - 1]


def _context(prompt: str = "fix the failing test", run_id: str = "run-1") -> RunContext:
    run_input = RunAgentInput(
        thread_id="t",
        run_id=run_id,
        state=None,
        messages=[UserMessage(id="m1", role="user", content=prompt)],
        tools=[],
        context=[],
        forwarded_props=None,
    )
    emitter = RunEmitter(RunProjection("t", run_id), asyncio.get_running_loop())
    return RunContext("t", run_id, prompt, run_input, emitter, tool_progress=False, progress_summary=True)


def _activities(emitter: RunEmitter) -> list[ActivitySnapshotEvent]:
    return [e for e in emitter.drain() if isinstance(e, ActivitySnapshotEvent)]


def think(card: str = "think-1") -> Any:
    return start_tool_call(card, "Thinking...", kind="think", status="in_progress")


@pytest.mark.anyio
async def test_observer_publishes_each_revision_then_nothing_after_the_end() -> None:
    clock = ManualClock()
    context = _context()
    generator = Scripted("Reading the test.", "Reading the test.", "Fixing the assertion.", "Too late.")
    factory = SummaryFactory(generator, interval=10, id="progress-summary")
    observer = summary_observers(SummarySetup(factory, True, clock=clock))(context)
    assert isinstance(observer, SummaryObserver)
    assert len(ObserverSet.build([summary_observers(SummarySetup(factory, False))], context)) == 1
    observer.observe(think())
    await clock.settle()
    await clock.advance(10)  # same sentence: suppressed, no snapshot
    observer.observe(update_tool_call("think-1", status="completed"))
    observer.observe(start_tool_call("c1", "Editing test_app.py", kind="edit", status="in_progress"))
    await clock.advance(2)  # a new card revises the sentence within 2 s, not at the next tick
    shots = _activities(context.emitter)
    assert [s.content for s in shots] == [
        {"summary": "Reading the test.", "revision": 1, "id": "progress-summary"},
        {"summary": "Fixing the assertion.", "revision": 2, "id": "progress-summary"},
    ]
    assert {s.message_id for s in shots} == {summary_message_id("run-1")} == {"run-1:progress-summary"}
    assert all(s.activity_type == PROGRESS_SUMMARY_ACTIVITY and s.replace is True for s in shots)
    parse_wire(json.loads(shots[0].model_dump_json(by_alias=True, exclude_none=True)))
    # the user's text reached the generator (as the subject), the run input too (for execute functions)
    assert "fix the failing test" in generator.calls[0].prompt
    assert generator.calls[0].input is context.input

    observer.observe(update_agent_message_text("Done."))
    observer.on_end(RunOutcome("success", stop_reason="end_turn"))
    context.emitter.finish(stop_reason="end_turn")
    await clock.advance(60)
    assert observer.summary.stopped and observer.summary.outcome == "finished"
    assert len(generator.calls) == 3 and clock.pending == 0  # no cadence left behind
    rest = context.emitter.drain()
    assert len(rest) == 1 and isinstance(rest[0], RunFinishedEvent)


@pytest.mark.anyio
async def test_a_revision_racing_the_terminal_event_is_dropped_by_the_run_lock() -> None:
    context = _context()
    factory = SummaryFactory(Scripted("One."), interval=10)
    observer = SummaryObserver(context, factory, clock=ManualClock())
    context.emitter.finish()
    context.emitter.drain()
    # a summary that slipped past its stop would still find the run closed
    observer._publish(SummaryEvent("One.", 1))
    assert observer.published == 0 and context.emitter.drain() == []


@pytest.mark.anyio
async def test_a_failing_generator_costs_the_summary_not_the_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    context = _context(prompt=f"deploy with {SECRET}")
    generator = Scripted(fail=True)
    observer = SummaryObserver(context, SummaryFactory(generator, interval=10), clock=clock)
    observer.observe(update_agent_thought_text("Let me think."))
    await clock.advance(25)
    assert len(generator.calls) == 3 and not _activities(context.emitter)
    assert SECRET not in generator.calls[0].prompt  # the prompt was redacted before it left
    observer.on_end(RunOutcome("error", error="boom"))
    assert observer.summary.outcome == "failed"
    assert SECRET not in caplog.text and "model down" not in caplog.text  # never the error's message


@pytest.mark.anyio
async def test_cancelled_runs_stop_their_summary_as_cancelled() -> None:
    context = _context()
    factory = SummaryFactory(Scripted("Working."), interval=10)
    observer = SummaryObserver(context, factory, clock=ManualClock())
    observer.observe(think())
    observer.on_end(RunOutcome("cancelled", stop_reason="cancelled", abandoned=True))
    assert observer.summary.outcome == "cancelled"


# ---------------------------------------------------------------- configuration


def test_summary_setup_from_each_kind_of_argument() -> None:
    on = summary_setup(Settings(summary="auto"))
    assert on.default is True and on.owned is True  # auto is embedded for AG-UI
    off = summary_setup(Settings(summary="off", summary_interval=0, summary_max_length=40))
    assert off.default is False and off.factory.interval == 0 and off.factory.max_length == 40
    assert summary_setup(None).default is False
    given = SummaryFactory(Scripted("x"))
    mine = summary_setup(given)
    assert mine.factory is given and mine.default is True and mine.owned is False
    with pytest.raises(TypeError, match="summary"):
        summary_setup("embedded")  # type: ignore[arg-type]


def test_request_switch_defaults_and_overrides() -> None:
    def body(forwarded: Any) -> bytes:
        return json.dumps(run_input("t", "hi", forwarded=forwarded)).encode()

    assert parse_run_request(body(None), False, True).progress_summary is True
    assert parse_run_request(body({"emitProgressSummary": False}), False, True).progress_summary is False
    assert parse_run_request(body({"emitProgressSummary": True}), False, False).progress_summary is True
    assert parse_run_request(body({"emitToolProgress": True}), False).progress_summary is False
    with pytest.raises(BadRunInput, match="emitProgressSummary must be true or false"):
        parse_run_request(body({"emitProgressSummary": 1}), False, True)


def test_agui_command_line_has_the_summary_flags(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(
        ["agui", "--summary", "off", "--summary-interval", "0", "--summary-max-length", "60"]
    )
    assert (args.summary, args.summary_interval, args.summary_max_length) == ("off", "0", "60")
    assert main(["agui", "--summary-interval", "0.001"]) == 2
    assert "--summary-interval" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["agui", "--summary", "loud"])
