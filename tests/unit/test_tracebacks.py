"""Unexpected failures keep their tracebacks in the log (redacted); expected ones stay short."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from acp_adapter.agent.heartbeat import HeartbeatScheduler
from acp_adapter.cancel import CancelToken
from acp_adapter.config import Settings
from acp_adapter.models import ModelError, ToolCall
from acp_adapter.safety.logging import RedactingFormatter
from acp_adapter.tooling.toolbox import Tool, Toolbox, ToolError, ToolReturn
from run_agent import AIAgent

SECRET = "gh" + "p_" + "Tr4cebackT0kenAbcdefghijklmnopqrstuv"


class CrashingModel:
    name = "crashing"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def stream(self, messages: Any, tools: Any, cancel: CancelToken) -> Iterator[Any]:
        if False:  # pragma: no cover - makes this a generator
            yield None
        raise self.error


def _agent(model: Any) -> AIAgent:
    return AIAgent(model, settings=Settings(heartbeat_disabled=True), scheduler=HeartbeatScheduler())


def _formatted(records: list[logging.LogRecord]) -> str:
    formatter = RedactingFormatter("%(levelname)s %(name)s: %(message)s")
    return "\n".join(formatter.format(r) for r in records)


def test_a_crashing_back_end_is_logged_with_its_traceback_redacted(caplog):
    caplog.set_level(logging.DEBUG)
    result = _agent(CrashingModel(RuntimeError(f"bad state with {SECRET}"))).run_conversation("hi")
    assert result.error is not None and "crashed" in result.error
    crashed = [r for r in caplog.records if r.exc_info and r.name == "acp_progress.agent"]
    assert crashed, "the unexpected exception left no traceback in the log"
    text = _formatted(crashed)
    assert "Traceback (most recent call last)" in text and "RuntimeError" in text
    assert "def stream" in text or "in stream" in text
    assert SECRET not in text and "[REDACTED]" in text


def test_an_expected_model_error_stays_a_short_message(caplog):
    caplog.set_level(logging.DEBUG)
    result = _agent(CrashingModel(ModelError("Authentication failed (HTTP 401)"))).run_conversation("hi")
    assert result.error == "Authentication failed (HTTP 401)"
    assert not [r for r in caplog.records if r.exc_info]


def _boom(args: Any, ctx: Any) -> ToolReturn:
    raise KeyError("missing")


def _refuse(args: Any, ctx: Any) -> ToolReturn:
    raise ToolError("path 'x' is outside the workspace")


def test_a_tool_bug_keeps_its_traceback_and_a_tool_error_does_not(caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    schema = {"type": "object", "properties": {}}
    box = Toolbox([Tool("boom", "", schema, _boom), Tool("refuse", "", schema, _refuse)], tmp_path)
    outcome = box.execute(ToolCall("1", "boom", {}), cancel=CancelToken())
    assert not outcome.ok and outcome.error == "KeyError: 'missing'"
    text = _formatted([r for r in caplog.records if r.exc_info])
    assert "Traceback" in text and "_boom" in text and "KeyError" in text
    caplog.clear()
    outcome = box.execute(ToolCall("2", "refuse", {}), cancel=CancelToken())
    assert outcome.error == "path 'x' is outside the workspace"
    assert not [r for r in caplog.records if r.exc_info]


def test_a_raising_callback_is_logged_with_its_traceback(caplog):
    caplog.set_level(logging.DEBUG)

    def progress(state: str, name: str, args: Any = None) -> None:
        raise ValueError("callback bug")

    class Quick:
        name = "quick"

        def stream(self, messages: Any, tools: Any, cancel: CancelToken) -> Iterator[Any]:
            from acp_adapter.models import TextDelta

            yield TextDelta("ok")

    agent = AIAgent(
        Quick(),
        settings=Settings(heartbeat_disabled=True),
        scheduler=HeartbeatScheduler(),
        agent_progress_callback=progress,
        message_callback=lambda text: None,
    )
    assert agent.run_conversation("hi").text == "ok"
    text = _formatted([r for r in caplog.records if r.exc_info])
    assert "ValueError: callback bug" in text and "in progress" in text
