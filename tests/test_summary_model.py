"""The ``model`` generator against a real HTTP server on loopback (tests/fake_openai.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from acp import start_tool_call

from acp_adapter.config import Settings
from acp_adapter.summary import TRACE_ERROR, ManualClock, ModelGenerator, SummaryFactory

from .fake_openai import FakeOpenAI, Reply, error_reply

pytestmark = pytest.mark.anyio


def completion(text: str) -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-summary",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "tiny-summarizer",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
        }
    )


def settings_for(server: FakeOpenAI, **extra: str) -> Settings:
    return Settings.from_env(
        {
            "ACP_PROGRESS_SUMMARY": "openai",
            "ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL": server.base_url,
            "ACP_PROGRESS_SUMMARY_OPENAI_MODEL": "tiny-summarizer",
            "ACP_PROGRESS_SUMMARY_OPENAI_API_KEY": "summary-key-123",
            "ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT": "5",
            "OPENAI_API_KEY": "primary-key-456",
            **extra,
        }
    )


async def _settled(summary: Any, clock: ManualClock, until: Any) -> None:
    import asyncio

    for _ in range(400):  # real HTTP on loopback: wait for it, briefly
        if until():
            return
        await asyncio.sleep(0.005)
        await clock.settle(1)


async def test_the_summary_model_writes_the_sentence_with_its_own_model_and_key() -> None:
    with FakeOpenAI(api_key="summary-key-123") as server:
        server.script(completion('"Reading the failing test."\n'))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        clock = ManualClock()
        events: list[Any] = []
        summary = factory.create(user_text="fix test_x", on_summary=events.append, clock=clock).start()
        summary.observe(start_tool_call("think-1", "Thinking...", kind="think", status="in_progress"))
        await _settled(summary, clock, lambda: events)
        summary.stop("finished")
        assert [e.summary for e in events] == ["Reading the failing test."]
        (request,) = server.requests
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["authorization"] == "Bearer summary-key-123"
        body = request.body
        assert body["model"] == "tiny-summarizer" and not body.get("stream")
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "fix test_x" in body["messages"][1]["content"]
        assert "primary-key-456" not in str(body)
        await factory.aclose()


async def test_a_failing_summary_model_is_a_trace_without_its_error_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="acp_progress.summary")
    with FakeOpenAI() as server:
        server.script(error_reply(401, "Incorrect API key provided: summary-key-123 SECRET-DETAIL"))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        clock = ManualClock()
        traces: list[tuple[str, Any]] = []
        summary = factory.create(on_trace=lambda n, a: traces.append((n, a)), clock=clock).start()
        summary.observe(start_tool_call("think-1", "Thinking...", kind="think", status="in_progress"))
        await _settled(summary, clock, lambda: traces)
        summary.stop("finished")
        await factory.aclose()
    assert traces == [(TRACE_ERROR, {"reason": "error", "generation": 1, "errorType": "AuthenticationError"})]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "SECRET-DETAIL" not in logged and "summary-key-123" not in logged and "Incorrect" not in logged


async def test_stopping_aborts_the_model_request() -> None:
    with FakeOpenAI() as server:
        server.script(Reply(delay=30, body={}))  # a server that hangs
        gen = ModelGenerator(base_url=server.base_url, model="m", timeout=30)
        factory = SummaryFactory(gen, interval=10, timeout=60)
        clock = ManualClock()
        summary = factory.create(clock=clock).start()
        summary.observe(start_tool_call("think-1", "Thinking...", kind="think", status="in_progress"))
        await _settled(summary, clock, lambda: server.requests)
        await summary.aclose("cancelled")
        assert summary.stats.aborted == 1
        assert server.wait_for_disconnect(timeout=5) is not None, "the HTTP request was aborted"
        await gen.aclose()
