"""AIAgent in process: hook sites, routing order, contained callback failures, cancel, errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from acp_adapter.agent.heartbeat import HeartbeatScheduler
from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.config import Settings
from acp_adapter.models import Message, ModelError, StatusNote, TextDelta, ToolSpec
from acp_adapter.models.embedded import EmbeddedModel
from run_agent import AIAgent


class ScriptedModel:
    """Waits ``delay`` (cancellable), emits status notes meanwhile, then the scripted events."""

    name = "scripted"

    def __init__(self, events: Sequence[Any], delay: float = 0.0, error: ModelError | None = None) -> None:
        self.events = list(events)
        self.delay = delay
        self.error = error

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[Any]:
        yield StatusNote("Waiting for the first token")
        if cancel.wait(self.delay):
            raise TurnCancelled(cancel.reason)
        if self.error is not None:
            raise self.error
        yield from self.events


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, state: str, name: str, args: dict[str, Any] | None = None) -> None:
        with self.lock:
            self.calls.append((state, name, dict(args or {})))


SETTINGS = Settings(heartbeat_interval=0.02)


def make_agent(model: Any, **kwargs: Any) -> AIAgent:
    return AIAgent(model, settings=SETTINGS, scheduler=HeartbeatScheduler(), **kwargs)


def test_start_heartbeats_complete_then_answer():
    progress = Recorder()
    chunks: list[str] = []
    agent = make_agent(
        ScriptedModel([TextDelta("Hi "), TextDelta("there")], delay=0.15),
        agent_progress_callback=progress,
        message_callback=chunks.append,
    )
    result = agent.run_conversation("hello")
    assert result.stop_reason == "end_turn" and result.text == "Hi there"
    states = [s for s, _, _ in progress.calls]
    assert states[0] == "start" and states[-1] == "complete"
    beats = [a for s, _, a in progress.calls if s == "heartbeat"]
    assert len(beats) >= 3
    assert all(a["status"] == "Waiting for the first token" for a in beats)
    assert all(n == "llm_response" for _, n, _ in progress.calls)
    assert progress.calls[-1][2] == {}


def test_no_heartbeat_after_complete_under_a_tight_race():
    for _ in range(30):
        progress = Recorder()
        agent = make_agent(ScriptedModel([TextDelta("x")], delay=0.004), agent_progress_callback=progress)
        agent.heartbeat_interval = 0.001
        agent.run_conversation("race")
        time.sleep(0.005)
        states = [s for s, _, _ in progress.calls]
        assert states.index("complete") == len(states) - 1, states


def test_heartbeat_disabled_starts_no_timer():
    progress = Recorder()
    scheduler = HeartbeatScheduler()
    agent = AIAgent(
        ScriptedModel([TextDelta("x")], delay=0.1),
        settings=Settings(heartbeat_interval=0.01, heartbeat_disabled=True),
        scheduler=scheduler,
        agent_progress_callback=progress,
    )
    agent.run_conversation("quiet")
    assert [s for s, _, _ in progress.calls] == ["start", "complete"]
    assert scheduler._thread is None, "no scheduler thread should even start"


def test_raising_callbacks_never_break_the_turn():
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("callback exploded")

    agent = make_agent(
        ScriptedModel([TextDelta("still "), TextDelta("answered")], delay=0.08),
        agent_progress_callback=boom,
        thinking_callback=boom,
        message_callback=boom,
        usage_callback=boom,
    )
    result = agent.run_conversation("hello")
    assert result.stop_reason == "end_turn" and result.text == "still answered"


def test_routing_prefers_the_card_then_thought_text_then_the_terminal():
    thoughts: list[str] = []
    progress = Recorder()
    make_agent(
        ScriptedModel([TextDelta("a")], delay=0.05),
        agent_progress_callback=progress,
        thinking_callback=thoughts.append,
    ).run_conversation("x")
    assert progress.calls and thoughts == [], (
        "spinner text must not go to the thought channel when a card can show it"
    )

    thoughts.clear()
    make_agent(
        ScriptedModel([TextDelta("a")], delay=0.05), thinking_callback=thoughts.append
    ).run_conversation("x")
    assert thoughts[0] == "Thinking..." and any("Still thinking" in t for t in thoughts[1:])

    class FakePrinter:
        def __init__(self) -> None:
            self.events: list[str] = []

        def spinner_start(self, label: str) -> None:
            self.events.append("start")

        def spinner_heartbeat(self, elapsed: float, status: str | None) -> None:
            self.events.append("beat")

        def spinner_stop(self, error: str | None = None) -> None:
            self.events.append("stop")

        def answer(self, text: str) -> None:
            self.events.append(f"answer:{text}")

    printer = FakePrinter()
    make_agent(ScriptedModel([TextDelta("a")], delay=0.05), printer=printer).run_conversation("x")  # type: ignore[arg-type]
    assert printer.events[0] == "start" and "stop" in printer.events and printer.events[-1] == "answer:a"


def test_model_error_fails_the_card_and_tells_the_user():
    progress = Recorder()
    chunks: list[str] = []
    agent = make_agent(
        ScriptedModel(
            [], delay=0.01, error=ModelError("Server error (HTTP 500)", retryable=True, status=500)
        ),
        agent_progress_callback=progress,
        message_callback=chunks.append,
    )
    result = agent.run_conversation("hello")
    assert result.stop_reason == "end_turn" and result.error == "Server error (HTTP 500)"
    assert progress.calls[-1] == ("complete", "llm_response", {"error": "Server error (HTTP 500)"})
    assert "The model request failed: Server error (HTTP 500)" in "".join(chunks)


def test_cancel_during_the_wait_returns_promptly_and_closes_the_card():
    progress = Recorder()
    cancel = CancelToken()
    agent = make_agent(
        ScriptedModel([TextDelta("never")], delay=30), agent_progress_callback=progress, cancel=cancel
    )
    threading.Timer(0.1, cancel.cancel).start()
    started = time.monotonic()
    result = agent.run_conversation("slow")
    assert time.monotonic() - started < 1.0
    assert result.stop_reason == "cancelled"
    assert progress.calls[-1] == ("complete", "llm_response", {"error": "Cancelled"})


def test_a_crashing_back_end_becomes_a_model_error():
    class Crashing:
        name = "crash"

        def stream(self, messages: Any, tools: Any, cancel: Any) -> Iterator[Any]:
            raise KeyError("boom")
            yield

    progress = Recorder()
    result = make_agent(Crashing(), agent_progress_callback=progress).run_conversation("x")
    assert result.error is not None and "KeyError" in result.error
    assert progress.calls[-1][0] == "complete" and "error" in progress.calls[-1][2]


def test_embedded_model_is_deterministic_and_streams_the_whole_reply():
    model = EmbeddedModel(think_delay=0, chunk_delay=0)
    texts = []
    for _ in range(2):
        chunks: list[str] = []
        result = make_agent(model, message_callback=chunks.append).run_conversation(
            "Tell me about ACP please"
        )
        assert "".join(chunks) == result.text
        assert len(chunks) > 5
        texts.append(result.text)
    assert texts[0] == texts[1] and "Agent Client Protocol" in texts[0]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("what is (2+3)*4?", "(2+3)*4 = 20"),
        ("count words in: the quick brown fox", "That text has 4 words."),
        ("reverse: abc", "Reversed: cba"),
        ("hi", "Hello!"),
    ],
)
def test_embedded_model_answers_the_prompt(prompt: str, expected: str):
    result = make_agent(EmbeddedModel(think_delay=0, chunk_delay=0)).run_conversation(prompt)
    assert expected in result.text
