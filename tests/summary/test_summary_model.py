"""The ``model`` generator against a real HTTP server on loopback (tests/helpers/fake_openai.py)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from acp import start_tool_call

from acp_adapter.config import Settings
from acp_adapter.summary import TRACE_ERROR, ManualClock, ModelGenerator, SummaryFactory
from tests.helpers.fake_openai import FakeOpenAI, Reply, error_reply, text_reply

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
        assert body["model"] == "tiny-summarizer" and body["stream"] is True  # a JSON reply is fine too
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


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def one_generation(factory: SummaryFactory, **create: Any) -> tuple[list[Any], list[Any]]:
    """Run one turn with a single generation; returns (events, error traces)."""
    clock = ManualClock()
    events: list[Any] = []
    traces: list[Any] = []
    summary = factory.create(
        user_text="fix test_x", on_summary=events.append, on_trace=lambda n, a: traces.append(a), clock=clock
    ).start()
    summary.observe(start_tool_call("think-1", "Thinking...", kind="think", status="in_progress"))
    await _settled(summary, clock, lambda: events or traces)
    summary.stop("finished")
    return events, [a for a in traces if "reason" in a]


async def test_a_streaming_summary_server_is_read_as_a_stream() -> None:
    with FakeOpenAI() as server:
        server.script(text_reply("Reading ", "the failing ", "test.", chunk_delay=0.01))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        events, errors = await one_generation(factory)
        await factory.aclose()
    assert [e.summary for e in events] == ["Reading the failing test."] and errors == []


async def test_a_server_that_ignores_stream_and_answers_json_still_works() -> None:
    with FakeOpenAI() as server:
        server.script(completion("Listing the workspace."))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        events, errors = await one_generation(factory)
        await factory.aclose()
    assert [e.summary for e in events] == ["Listing the workspace."] and errors == []


async def test_a_summary_stream_cut_off_before_its_finish_is_a_failure_not_half_a_sentence() -> None:
    with FakeOpenAI() as server:
        server.script(text_reply("Reading the fai", finish=False, done=False))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        events, errors = await one_generation(factory)
        await factory.aclose()
    assert events == [] and [e["errorType"] for e in errors] == ["IncompleteStream"]


async def test_a_failing_summary_server_warns_once_per_streak_with_its_reason_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="acp_progress.summary")

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    # unreachable: three turns of a conversation, one warning, every failure still a trace
    settings = Settings.from_env(
        {
            "ACP_PROGRESS_SUMMARY": "openai",
            "ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1",
        }
    )
    factory = SummaryFactory.from_settings(settings)
    assert factory is not None
    failures = [await one_generation(factory) for _ in range(3)]
    await factory.aclose()
    assert all(events == [] and len(errors) == 1 for events, errors in failures)
    (warning,) = warnings()
    assert "unreachable" in warning and "APIConnectionError" in warning

    # HTTP 500 twice, a success (the streak ends), then 401: a second streak, a second warning
    caplog.clear()
    with FakeOpenAI() as server:
        server.script(error_reply(500), error_reply(500), completion("Reading."), error_reply(401))
        factory = SummaryFactory.from_settings(settings_for(server))
        assert factory is not None
        outcomes = [await one_generation(factory) for _ in range(4)]
        await factory.aclose()
    assert [len(errors) for _, errors in outcomes] == [1, 1, 0, 1]
    assert [[e.summary for e in events] for events, _ in outcomes] == [[], [], ["Reading."], []]
    assert len(warnings()) == 2
    assert "HTTP 500" in warnings()[0] and "HTTP 401" in warnings()[1]
    assert any("work again after 2 failed" in r.getMessage() for r in caplog.records)
