"""The OpenAI-compatible back-end against a scriptable fake server (real socket, real SSE).

Two levels: ``OpenAICompatModel.stream`` driven directly (fast, precise timing), and the real stdio
agent (``python -m acp_adapter`` with ``ACP_PROGRESS_MODEL=openai``) driven as an editor would.
The 200 ms cancellation bound is the spec; it is measured with ``time.monotonic`` on both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from acp import RequestError
from acp.schema import AgentMessageChunk, AgentThoughtChunk, ToolCallStart, UsageUpdate

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.config import ConfigError, OpenAISettings, Settings
from acp_adapter.models import create_model
from acp_adapter.models.base import (
    Message,
    ModelError,
    ReasoningDelta,
    StatusNote,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from acp_adapter.models.openai_compat import RAW_ARGUMENTS_KEY, OpenAICompatModel
from acp_adapter.models.openai_errors import retry_after
from acp_adapter.tooling.builtin import default_toolbox
from acp_adapter.tooling.calls import ToolCall
from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text, spawn_agent
from tests.helpers.fake_openai import (
    FakeOpenAI,
    Reply,
    chunk,
    error_reply,
    text_chunks,
    text_reply,
    tool_reply,
    usage_chunk,
)
from tests.helpers.openai_agent import KEY, openai_agent, openai_env
from tests.helpers.shared_agent import served_inprocess

CANCEL_BOUND = 0.2  # seconds: the spec
SEARCH = ToolSpec(
    "search",
    "Search text across the workspace.",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


def make_model(server: FakeOpenAI, **overrides: Any) -> OpenAICompatModel:
    backoff = overrides.pop("backoff_base", 0.05)
    max_backoff = overrides.pop("max_backoff", 30.0)
    fields: dict[str, Any] = {
        "base_url": server.base_url,
        "api_key": KEY,
        "model": "test-model",
        "timeout": 3.0,
        "max_retries": 2,
    }
    fields.update(overrides)
    model = OpenAICompatModel(OpenAISettings(**fields), backoff_base=backoff, max_backoff=max_backoff)
    assert model._ready.wait(10), "the OpenAI client did not start"
    return model


def collect(
    model: OpenAICompatModel,
    messages: list[Message] | None = None,
    tools: tuple[ToolSpec, ...] = (),
    cancel: CancelToken | None = None,
) -> list[Any]:
    return list(model.stream(messages or [Message("user", "hi")], tools, cancel or CancelToken()))


def content(events: list[Any]) -> list[Any]:
    return [e for e in events if not isinstance(e, StatusNote | UsageReport)]


def failure(model: OpenAICompatModel, **kwargs: Any) -> ModelError:
    with pytest.raises(ModelError) as info:
        collect(model, **kwargs)
    return info.value


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Runner:
    """Consume ``model.stream`` on a worker thread, recording when each event arrived and when the
    thread's ``stream`` call returned, so tests can cancel from outside and time the reaction."""

    def __init__(self, model: OpenAICompatModel, cancel: CancelToken, messages: list[Message] | None = None):
        self.cancel = cancel
        self.events: list[tuple[float, Any]] = []
        self.error: BaseException | None = None
        self.returned_at: float | None = None
        self.first_content = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(model, messages or [Message("user", "hi")]))
        self._thread.start()

    def _run(self, model: OpenAICompatModel, messages: list[Message]) -> None:
        try:
            for event in model.stream(messages, (), self.cancel):
                self.events.append((time.monotonic(), event))
                if not isinstance(event, StatusNote | UsageReport):
                    self.first_content.set()
        except BaseException as exc:
            self.error = exc
        finally:
            self.returned_at = time.monotonic()

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the thread running stream() did not return"


def cancel_and_time(runner: Runner, server: FakeOpenAI) -> tuple[float, float]:
    """Cancel now; returns (stream-thread return latency, server-side disconnect latency)."""
    cancelled_at = time.monotonic()
    runner.cancel.cancel("test")
    runner.join()
    assert isinstance(runner.error, TurnCancelled), runner.error
    assert runner.returned_at is not None
    disconnected = server.wait_for_disconnect(-1, timeout=2)
    assert disconnected is not None, "the server never saw the request aborted"
    return runner.returned_at - cancelled_at, disconnected - cancelled_at


# ---------------------------------------------------------------- streaming


def test_text_streams_and_the_request_is_a_streaming_chat_completion(server):
    server.script(text_reply("Hel", "lo", " world"))
    model = make_model(server)
    events = collect(model, [Message("system", "be brief"), Message("user", "hi")])
    assert events[0] == StatusNote("Waiting for the first token")
    assert content(events) == [TextDelta("Hel"), TextDelta("lo"), TextDelta(" world")]
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert "tools" not in body, "no tools: no empty tools list (some servers reject it)"


@pytest.mark.parametrize("field_name", ["reasoning_content", "reasoning"])
def test_provider_reasoning_becomes_reasoning_deltas(server, field_name):
    server.script(text_reply("42", reasoning=["Let me ", "think."], reasoning_field=field_name))
    events = content(collect(make_model(server)))
    assert events == [ReasoningDelta("Let me "), ReasoningDelta("think."), TextDelta("42")]


def test_role_only_and_empty_chunks_are_not_deltas(server):
    server.script(
        Reply(
            events=[
                b": keep-alive\n\n",
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": None, "reasoning_content": None}),
                *text_chunks(["ok"], role_first=False),
                chunk(finish_reason="stop"),
            ]
        )
    )
    assert content(collect(make_model(server))) == [TextDelta("ok")]


def test_two_interleaved_tool_calls_are_assembled_across_many_chunks(server):
    args_a = {"query": "naïve TODO", "path": "src/deep/dir", "nested": {"n": [1, 2, {"x": "}{"}]}}
    args_b = {"path": "README.md"}
    reply = tool_reply(
        [("call_a", "search", args_a), ("call_b", "read_file", args_b)], piece=3, interleave=True
    )
    fragments = [
        e
        for e in reply.events
        if isinstance(e, dict) and e["choices"] and "tool_calls" in e["choices"][0]["delta"]
    ]
    assert len(fragments) > 20, "the arguments must really be split into many fragments"
    indexes = [f["choices"][0]["delta"]["tool_calls"][0]["index"] for f in fragments[:4]]
    assert indexes == [0, 1, 0, 1], "fragments of the two calls alternate"
    server.script(reply)
    events = content(collect(make_model(server), tools=(SEARCH,)))
    assert events[0] == TextDelta(""), "the first tool-call fragment is the first delta (closes the spinner)"
    assert events[1:] == [
        ToolCallRequest(ToolCall("call_a", "search", args_a)),
        ToolCallRequest(ToolCall("call_b", "read_file", args_b)),
    ]


def test_the_first_tool_fragment_is_yielded_long_before_the_call_completes(server):
    server.script(
        tool_reply([("call_1", "search", {"query": "a long query string"})], piece=2, chunk_delay=0.015)
    )  # about 16 fragments: a quarter of a second from the first to the last
    runner = Runner(make_model(server), CancelToken())
    runner.join()
    assert runner.error is None
    (first_at, first), *_ = [(t, e) for t, e in runner.events if not isinstance(e, StatusNote)]
    complete_at = next(t for t, e in runner.events if isinstance(e, ToolCallRequest))
    assert first == TextDelta("")
    assert complete_at - first_at > 0.1, "the spinner closes on the first fragment, not on the finished call"


def test_text_before_tool_calls_is_streamed_and_no_empty_delta_is_added(server):
    server.script(tool_reply([("c1", "search", {"query": "x"})], text=["Let me look."]))
    events = content(collect(make_model(server), tools=(SEARCH,)))
    assert events == [TextDelta("Let me look."), ToolCallRequest(ToolCall("c1", "search", {"query": "x"}))]


def test_unparseable_tool_arguments_reach_the_agent_as_raw_and_the_tool_fails(server, tmp_path):
    server.script(
        tool_reply(
            [("c1", "search", '{"query": "unterminated'), ("c2", "list_dir", ""), ("c3", "search", "[1, 2]")]
        )
    )
    events = content(collect(make_model(server), tools=(SEARCH,)))
    calls = [e.call for e in events if isinstance(e, ToolCallRequest)]
    assert [c.arguments for c in calls] == [
        {RAW_ARGUMENTS_KEY: '{"query": "unterminated'},
        {},
        {RAW_ARGUMENTS_KEY: "[1, 2]"},
    ]
    outcome = default_toolbox(tmp_path).execute(calls[0], cancel=CancelToken())
    assert not outcome.ok and outcome.error, "a call with unparseable arguments must fail, visibly"


def test_tool_calls_without_index_or_id_are_still_assembled(server):
    def frag(**f: Any) -> dict[str, Any]:
        return chunk({"tool_calls": [f]})

    server.script(
        Reply(
            events=[
                frag(id="c1", function={"name": "search", "arguments": '{"qu'}),
                frag(function={"arguments": 'ery": "a"}'}),
                frag(
                    id="c2", function={"name": "list_dir", "arguments": {"path": "."}}
                ),  # object, not string
                frag(function={"name": "list_dir"}),  # a repeated name is not appended
                chunk(finish_reason="tool_calls"),
            ]
        )
    )
    calls = [e.call for e in content(collect(make_model(server))) if isinstance(e, ToolCallRequest)]
    assert calls == [ToolCall("c1", "search", {"query": "a"}), ToolCall("c2", "list_dir", {"path": "."})]


def test_a_server_that_ignores_stream_true_is_still_understood(server):
    message = {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"query": "q"}'}}
        ],
    }
    completion = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    server.script(Reply(body=completion))
    events = collect(make_model(server), tools=(SEARCH,))
    assert content(events) == [
        TextDelta("Looking."),
        ToolCallRequest(ToolCall("c1", "search", {"query": "q"})),
    ]
    assert events[-1] == UsageReport(3, 2, 5, None)


def test_history_and_tools_are_converted_to_the_openai_shapes(server):
    server.script(text_reply("done"))
    call = ToolCall("call_9", "search", {"query": "TODO"})
    history = [
        Message("system", "sys"),
        Message("user", "find TODO"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "a.py:1: TODO", tool_call_id="call_9", name="search"),
    ]
    collect(make_model(server), history, tools=(SEARCH,))
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "find TODO"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"query": "TODO"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "a.py:1: TODO"},
    ]
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "search",
            "description": SEARCH.description,
            "parameters": dict(SEARCH.parameters),
        },
    }
    # the plan tool comes with every tool list: the model states its plan with it
    assert [t["function"]["name"] for t in body["tools"]] == ["search", "update_plan"]


def test_usage_is_reported_once_with_the_context_window(server):
    cumulative = [
        chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}),
        chunk({"content": "b"}, usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
        chunk(finish_reason="stop"),
        usage_chunk(5, 2),
    ]
    server.script(Reply(events=cumulative))
    events = collect(make_model(server, context_window=8192))
    usages = [e for e in events if isinstance(e, UsageReport)]
    assert usages == [UsageReport(5, 2, 7, 8192)]
    assert events[-1] == usages[0]


def test_connections_are_reused_between_calls(server):
    server.script(text_reply("one"), text_reply("two"))
    model = make_model(server)
    collect(model)
    collect(model)
    assert server.requests[0].peer == server.requests[1].peer, "the stream was drained for keep-alive"


# ---------------------------------------------------------------- failures


def assert_clean(reason: str, caplog: pytest.LogCaptureFixture) -> None:
    assert KEY not in reason
    assert KEY not in caplog.text, "the API key leaked into the logs"
    assert len(reason) < 200 and "\n" not in reason


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def test_401_names_the_setting_and_is_not_retried(server, debug_logs):
    model = make_model(server, api_key="sk-wrong-0000000000000000000000")
    err = failure(model)
    assert err.reason == "Authentication failed (HTTP 401): check OPENAI_API_KEY"
    assert err.status == 401 and len(server.requests) == 1
    assert_clean(err.reason, debug_logs)


def test_401_with_a_key_echoing_server_never_shows_the_key(server, debug_logs):
    server.script(error_reply(401, f"Incorrect API key provided: {KEY}", code="invalid_api_key"))
    err = failure(make_model(server))
    assert err.reason == "Authentication failed (HTTP 401): check OPENAI_API_KEY"
    assert_clean(err.reason, debug_logs)


def test_empty_api_key_is_allowed_and_sends_a_placeholder(server):
    server.api_key = None
    server.script(text_reply("local"), error_reply(401))
    model = make_model(server, api_key="")
    assert content(collect(model)) == [TextDelta("local")]
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"
    assert failure(model).reason == "Authentication failed (HTTP 401): OPENAI_API_KEY is empty"


def test_404_model_not_found(server, debug_logs):
    server.script(error_reply(404, "The model `test-model` does not exist.", code="model_not_found"))
    err = failure(make_model(server))
    assert err.reason == "Model 'test-model' not found (HTTP 404)"
    assert len(server.requests) == 1
    assert_clean(err.reason, debug_logs)


def test_404_from_a_wrong_base_url_points_at_the_setting(server):
    model = make_model(server, base_url=f"http://127.0.0.1:{server.port}/wrong")
    err = failure(model)
    assert err.reason.startswith("Not found (HTTP 404): check OPENAI_BASE_URL")
    assert f"http://127.0.0.1:{server.port}/wrong" in err.reason


def test_500_is_retried_then_reported_with_the_attempt_count(server, debug_logs):
    server.script(*[error_reply(500, f"upstream exploded ({KEY})")] * 3)
    err = failure(make_model(server))
    assert err.reason.startswith("Server error (HTTP 500) after 3 attempts")
    assert "upstream exploded" in err.reason
    assert len(server.requests) == 3
    assert_clean(err.reason, debug_logs)


def test_429_retries_honour_retry_after_and_show_in_status_notes(server):
    server.script(error_reply(429, retry_after=0.25), error_reply(503), text_reply("finally"))
    events = collect(make_model(server))
    notes = [e.text for e in events if isinstance(e, StatusNote)]
    assert notes == [
        "Waiting for the first token",
        "Retrying in 0.25s (429)",
        "Waiting for the first token (attempt 2 of 3)",
        "Retrying in 0.1s (503)",
        "Waiting for the first token (attempt 3 of 3)",
    ]
    assert content(events) == [TextDelta("finally")]
    at = [r.at for r in server.requests]
    assert at[1] - at[0] >= 0.25 and at[2] - at[1] >= 0.1


def test_429_exhausted(server, debug_logs):
    server.script(*[error_reply(429, retry_after=0)] * 3)
    err = failure(make_model(server))
    assert err.reason == "Rate limited (HTTP 429) after 3 attempts"
    assert err.status == 429 and len(server.requests) == 3
    assert_clean(err.reason, debug_logs)


def test_backoff_doubles_and_is_capped(server):
    server.script(*[error_reply(502)] * 3, text_reply("ok"))
    events = collect(make_model(server, max_retries=3, backoff_base=0.02, max_backoff=0.05))
    assert [e.text for e in events if isinstance(e, StatusNote) and e.text.startswith("Retrying")] == [
        "Retrying in 0.02s (502)",
        "Retrying in 0.04s (502)",
        "Retrying in 0.05s (502)",
    ]


def test_max_retries_zero_means_one_attempt(server):
    server.script(error_reply(500), text_reply("never"))
    err = failure(make_model(server, max_retries=0))
    assert err.reason == "Server error (HTTP 500): fake error 500"
    assert len(server.requests) == 1


def test_retry_after_parsing_is_capped():
    assert retry_after({"retry-after": "120"}) == 30.0
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    in_5s = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 5))
    assert 3 <= (retry_after({"retry-after": in_5s}) or 0) <= 5
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


def test_connection_refused(debug_logs):
    port = closed_port()
    settings = OpenAISettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, timeout=2, max_retries=1)
    model = OpenAICompatModel(settings, backoff_base=0.01)
    events: list[Any] = []
    with pytest.raises(ModelError) as info:
        for event in model.stream([Message("user", "hi")], (), CancelToken()):
            events.append(event)
    assert (
        info.value.reason
        == f"Cannot connect to http://127.0.0.1:{port}/v1 (connection refused) after 2 attempts"
    )
    assert StatusNote("Retrying in 0.01s (connection refused)") in events
    assert_clean(info.value.reason, debug_logs)


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_a_stream_that_breaks_after_content_is_reported_and_not_retried(server, framing, debug_logs):
    server.script(Reply(events=[*text_chunks(["a", "b", "c", "d"])], break_after=3, framing=framing))
    got: list[Any] = []
    with pytest.raises(ModelError) as info:
        for event in make_model(server).stream([Message("user", "hi")], (), CancelToken()):
            got.append(event)
    assert info.value.reason == "The stream ended unexpectedly after 3 chunks"
    assert content(got) == [TextDelta("a"), TextDelta("b"), TextDelta("c")]
    assert len(server.requests) == 1, "content was already shown: no retry"
    assert_clean(info.value.reason, debug_logs)


def test_a_stream_that_breaks_before_any_content_is_retried(server):
    server.script(
        Reply(events=[chunk({"role": "assistant", "content": ""}), *text_chunks(["x"])], break_after=1)
    )
    server.script(text_reply("second try"))
    events = collect(make_model(server))
    assert StatusNote("Retrying in 0.05s (stream dropped)") in events
    assert content(events) == [TextDelta("second try")]


def test_malformed_sse_is_reported(server, debug_logs):
    server.script(Reply(events=[*text_chunks(["ok"]), "{this is not json", chunk(finish_reason="stop")]))
    err = failure(make_model(server))
    assert err.reason == "Malformed server-sent event from the model server"
    assert_clean(err.reason, debug_logs)


def test_an_error_event_inside_the_stream_is_reported(server):
    server.script(Reply(events=[{"error": {"message": "model overloaded", "type": "server_error"}}]))
    assert failure(make_model(server)).reason == "The model server reported an error: model overloaded"


@pytest.mark.parametrize("where", ["before headers", "after headers"])
def test_no_first_token_within_the_timeout(server, where, debug_logs):
    delay = {"delay": 5} if where == "before headers" else {"first_byte_delay": 5}
    server.script(text_reply("late", **delay))
    model = make_model(server, timeout=0.3)
    started = time.monotonic()
    err = failure(model)
    elapsed = time.monotonic() - started
    assert err.reason == "No response from the model server within 0.3s"
    assert 0.29 <= elapsed < 1.5, elapsed
    assert len(server.requests) == 1, "a timeout is not retried: the user already waited the whole timeout"
    assert_clean(err.reason, debug_logs)


def test_missing_openai_package_is_a_clear_config_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    with pytest.raises(ConfigError) as info:
        OpenAICompatModel(OpenAISettings())
    assert "pip install 'acp-progress[openai]'" in str(info.value)


def test_a_base_url_without_scheme_is_refused_by_the_settings_model():
    with pytest.raises(ValueError, match="expected an http:// or https:// URL with a host"):
        OpenAISettings(base_url="localhost:11434/v1")


def test_settings_select_and_configure_the_backend(server):
    settings = Settings.from_env(
        {
            "ACP_PROGRESS_MODEL": "openai",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": KEY,
            "ACP_PROGRESS_OPENAI_MODEL": "test-model",
            "ACP_PROGRESS_OPENAI_CONTEXT_WINDOW": "4096",
        }
    )
    model = create_model(settings)
    assert isinstance(model, OpenAICompatModel) and model.name == "openai"
    assert model.context_window == 4096
    with pytest.raises(ConfigError, match="ACP_PROGRESS_OPENAI_CONTEXT_WINDOW"):
        Settings.from_env({"ACP_PROGRESS_OPENAI_CONTEXT_WINDOW": "lots"})


# ---------------------------------------------------------------- cancellation (200 ms is the spec)


def test_cancel_while_waiting_for_the_response_headers(server):
    server.script(text_reply("never", delay=30))
    runner = Runner(make_model(server), CancelToken())
    assert server.wait_for_requests(1)
    time.sleep(0.1)
    returned, aborted = cancel_and_time(runner, server)
    assert returned < CANCEL_BOUND and aborted < CANCEL_BOUND, (returned, aborted)


def test_cancel_while_waiting_for_the_first_byte_after_headers(server):
    server.script(text_reply("never", first_byte_delay=30))
    runner = Runner(make_model(server), CancelToken())
    assert server.wait_for_requests(1)
    time.sleep(0.1)
    returned, aborted = cancel_and_time(runner, server)
    assert returned < CANCEL_BOUND and aborted < CANCEL_BOUND, (returned, aborted)


def test_cancel_mid_stream(server):
    server.script(Reply(events=text_chunks(["a", "b", "c"]), hang_after=2))
    runner = Runner(make_model(server), CancelToken())
    assert runner.first_content.wait(5)
    time.sleep(0.05)
    returned, aborted = cancel_and_time(runner, server)
    assert returned < CANCEL_BOUND and aborted < CANCEL_BOUND, (returned, aborted)
    assert [e for _, e in runner.events if isinstance(e, TextDelta)] == [TextDelta("a"), TextDelta("b")]


def test_a_consumer_that_stops_reading_aborts_the_request(server):
    server.script(Reply(events=text_chunks(["a", "b", "c"]), hang_after=1))
    model = make_model(server)
    events = model.stream([Message("user", "hi")], (), CancelToken())
    assert next(e for e in events if isinstance(e, TextDelta)) == TextDelta("a")
    closed_at = time.monotonic()
    events.close()  # the agent loop went away without cancelling
    disconnected = server.wait_for_disconnect(-1, timeout=2)
    assert disconnected is not None and disconnected - closed_at < CANCEL_BOUND


def test_cancel_during_retry_backoff(server):
    server.script(error_reply(503), text_reply("never"))
    runner = Runner(make_model(server, backoff_base=10), CancelToken())
    deadline = time.monotonic() + 5
    while not any(isinstance(e, StatusNote) and e.text.startswith("Retrying") for _, e in runner.events):
        assert time.monotonic() < deadline, "no retry note"
        time.sleep(0.01)
    cancelled_at = time.monotonic()
    runner.cancel.cancel()
    runner.join()
    assert isinstance(runner.error, TurnCancelled)
    assert runner.returned_at is not None and runner.returned_at - cancelled_at < CANCEL_BOUND
    assert len(server.requests) == 1


def test_an_already_cancelled_token_sends_nothing(server):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(TurnCancelled):
        collect(make_model(server), cancel=cancel)
    assert not server.requests


def test_cancelling_one_stream_leaves_a_concurrent_one_alone(server):
    slow = text_reply("a", "b", "c", "d", chunk_delay=0.1)
    server.script(slow, slow)
    model = make_model(server)
    first, second = Runner(model, CancelToken()), Runner(model, CancelToken())
    assert first.first_content.wait(5) and second.first_content.wait(5)
    first.cancel.cancel()
    first.join()
    second.join()
    assert isinstance(first.error, TurnCancelled)
    assert second.error is None
    assert "".join(e.text for _, e in second.events if isinstance(e, TextDelta)) == "abcd"


def test_cancel_while_connecting_returns_at_once():
    """A server that accepts nothing (full backlog): the connect itself is what gets cancelled."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        for _ in range(8):  # fill the accept queue so a further connect hangs in SYN
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect(("127.0.0.1", port))
            fillers.append(s)
        settings = OpenAISettings(base_url=f"http://127.0.0.1:{port}/v1", timeout=30, max_retries=0)
        model = OpenAICompatModel(settings)
        try:
            assert model._ready.wait(10)
            runner = Runner(model, CancelToken())
            time.sleep(0.3)
            assert runner.returned_at is None, "the request should still be waiting"
            cancelled_at = time.monotonic()
            runner.cancel.cancel()
            runner.join()
            assert isinstance(runner.error, TurnCancelled)
            assert runner.returned_at is not None and runner.returned_at - cancelled_at < CANCEL_BOUND
        finally:
            model.close()
            for s in fillers:
                s.close()


def test_close_releases_the_client_and_the_loop_and_later_streams_fail_clearly(server):
    server.script(text_reply("one"))
    model = make_model(server)
    assert content(collect(model)) == [TextDelta("one")]
    loop_threads = [t for t in threading.enumerate() if t.name == "openai-loop"]
    model.close()
    model.close()  # idempotent
    assert model._client is not None and model._client.is_closed()
    assert all(not t.is_alive() for t in loop_threads if t is model._loop._thread)
    with pytest.raises(ModelError, match="shut down"):
        collect(model)


def test_an_unexpected_exception_is_logged_with_its_traceback(server, caplog, monkeypatch):
    server.script(text_reply("x"))
    model = make_model(server)

    def explode(self: Any, chunk: Any, state: Any) -> Iterator[Any]:
        raise KeyError("a bug in chunk handling")

    monkeypatch.setattr(OpenAICompatModel, "_handle", explode)
    with caplog.at_level(logging.ERROR, logger="acp_progress"):
        err = failure(model)
    model.close()
    assert err.reason == "Unexpected error in the OpenAI back-end (KeyError)" and not err.retryable
    (record,) = [r for r in caplog.records if r.name == "acp_progress.models.openai"]
    assert record.exc_info is not None and record.exc_info[0] is KeyError
    assert "a bug in chunk handling" in caplog.text and "Traceback" in caplog.text


def test_the_agent_closes_the_model_it_built_on_shutdown(server):
    from acp_adapter.server import ProgressAgent
    from run_agent import AIAgent

    settings = Settings.from_env({"ACP_PROGRESS_MODEL": "openai", "OPENAI_BASE_URL": server.base_url})
    agent = ProgressAgent(turn_runner=AIAgent, settings=settings)
    model = agent.model
    assert isinstance(model, OpenAICompatModel) and model._ready.wait(10)
    agent.shutdown()
    assert model._client is not None and model._client.is_closed() and model._loop.closed

    borrowed = make_model(server)
    ProgressAgent(turn_runner=AIAgent, settings=settings, model=borrowed).shutdown()
    assert not borrowed._loop.closed, "a model passed in belongs to the caller"
    borrowed.close()


def _read_request(conn: socket.socket) -> None:
    """Read one whole HTTP request (headers, then Content-Length bytes of body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


def test_a_server_that_closes_without_responding_is_retried_and_named():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        stop = threading.Event()

        def slam() -> None:
            listener.settimeout(0.1)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                _read_request(conn)  # all of it: closing on unread bytes would be a reset, not a close
                conn.close()

        thread = threading.Thread(target=slam, daemon=True)
        thread.start()
        settings = OpenAISettings(base_url=f"http://127.0.0.1:{port}/v1", timeout=5, max_retries=1)
        model = OpenAICompatModel(settings, backoff_base=0.01)
        try:
            events: list[Any] = []
            with pytest.raises(ModelError) as info:
                events.extend(model.stream([Message("user", "hi")], (), CancelToken()))
        finally:
            stop.set()
            thread.join(2)
            model.close()
    assert info.value.reason == (
        f"The model server at http://127.0.0.1:{port}/v1 closed the connection without responding "
        "after 2 attempts"
    )
    assert info.value.attempts == 2 and info.value.label == "connection closed"


# ---------------------------------------------------------------- over ACP, end to end
# The agent runs in this process (the SDK's in-memory transports) where its process adds nothing;
# a real stdio agent where its log or a new process is the point.


def texts(update: Any) -> str:
    return " ".join(
        getattr(getattr(c, "content", None), "text", "") for c in (getattr(update, "content", None) or [])
    )


def no_key_anywhere(client: RecordingClient, *extra: Any) -> None:
    for received in client.updates:
        assert KEY not in received.update.model_dump_json(), received.update
    for item in extra:
        assert KEY not in (item.model_dump_json() if hasattr(item, "model_dump_json") else str(item))


@pytest.mark.anyio
async def test_e2e_spinner_reasoning_usage_and_a_tool_loop(server, tmp_path):
    (tmp_path / "notes.txt").write_text("the needle is here\n")
    server.script(
        text_reply("Hello", " there", reasoning=["Let me ", "think."], usage=(11, 7), first_byte_delay=0.4),
        tool_reply([("call_s1", "search", {"query": "needle"})], piece=3, usage=(20, 5)),
        text_reply("Found it in notes.txt.", usage=(40, 6)),
    )
    client = RecordingClient()
    agent = openai_agent(server, ACP_PROGRESS_OPENAI_CONTEXT_WINDOW="8192")
    async with served_inprocess(client, agent) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        first = await prompt_text(conn, sid, "say hello")
        n_first = len(client.updates)
        second = await prompt_text(conn, sid, "where is the needle?")

    # --- turn 1: spinner with heartbeats while the server withholds the first token
    assert first.stop_reason == "end_turn"
    updates = [r.update for r in client.updates[:n_first]]
    start = updates[0]
    assert isinstance(start, ToolCallStart) and start.kind == "think" and start.title == "Thinking..."
    card = client.cards(sid)[start.tool_call_id]
    beats = [u for u in card[1:] if u.status == "in_progress"]
    assert len(beats) >= 3, f"expected heartbeats over a 0.4 s wait at 0.05 s, got {len(beats)}"
    assert any("Waiting for the first token" in texts(b) for b in beats)
    assert card[-1].status == "completed"
    complete_at = updates.index(card[-1])
    first_thought = next(i for i, u in enumerate(updates) if isinstance(u, AgentThoughtChunk))
    first_answer = next(i for i, u in enumerate(updates) if isinstance(u, AgentMessageChunk))
    assert complete_at < first_thought < first_answer
    thoughts = "".join(u.content.text for u in updates if isinstance(u, AgentThoughtChunk))
    assert thoughts == "Let me think."
    assert "Thinking..." not in thoughts and "Still thinking" not in thoughts
    answer1 = "".join(u.content.text for u in updates if isinstance(u, AgentMessageChunk))
    assert answer1 == "Hello there"
    usage_updates = [u for u in updates if isinstance(u, UsageUpdate)]
    assert usage_updates and usage_updates[-1].used == 18 and usage_updates[-1].size == 8192
    usage1 = first.field_meta["acpProgress"]["usage"]
    assert usage1["totalTokens"] == 18 and usage1["inputTokens"] == 11

    # --- turn 2: the model calls search (arguments split across chunks), then answers
    assert second.stop_reason == "end_turn"
    later = client.cards(sid)
    search_card = later["call_s1"]
    assert isinstance(search_card[0], ToolCallStart) and search_card[0].status == "in_progress"
    assert final_status(search_card) == "completed"
    think_cards = [c for cid, c in client.think_cards(sid).items() if cid != start.tool_call_id]
    assert len(think_cards) == 2 and all(final_status(c) == "completed" for c in think_cards)
    answer2 = "".join(
        r.update.content.text for r in client.updates[n_first:] if isinstance(r.update, AgentMessageChunk)
    )
    assert answer2 == "Found it in notes.txt."
    assert second.field_meta["acpProgress"]["usage"]["totalTokens"] == 25 + 46

    bodies = server.chat_bodies
    assert len(bodies) == 3
    tools = {t["function"]["name"]: t for t in bodies[1]["tools"]}
    assert (
        tools["search"]["type"] == "function"
        and "query" in tools["search"]["function"]["parameters"]["properties"]
    )
    follow_up = bodies[2]["messages"]
    assistant = next(m for m in follow_up if m["role"] == "assistant" and m.get("tool_calls"))
    assert assistant["tool_calls"][0]["id"] == "call_s1"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"query": "needle"}
    tool_msg = next(m for m in follow_up if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "call_s1" and "needle" in tool_msg["content"]
    assert any(m["role"] == "user" and m["content"] == "say hello" for m in follow_up), "history is kept"
    no_key_anywhere(client, first, second)


@pytest.mark.e2e
@pytest.mark.anyio
async def test_e2e_errors_fail_the_card_never_leak_the_key_and_the_session_recovers(server, tmp_path):
    server.script(
        error_reply(401, f"Incorrect API key provided: {KEY}", code="invalid_api_key"),
        error_reply(500, f"backend crashed while using {KEY}"),
        Reply(events=text_chunks(["partial"]), break_after=1),
        text_reply("recovered"),
    )
    client = RecordingClient()
    env = openai_env(server, ACP_PROGRESS_OPENAI_MAX_RETRIES="0", ACP_PROGRESS_LOG_LEVEL="DEBUG")
    async with spawn_agent(client, env=env) as (conn, _proc, log_path):
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        failures: list[RequestError] = []
        for i in range(3):
            with pytest.raises(RequestError) as err:
                await prompt_text(conn, sid, f"prompt {i}")
            failures.append(err.value)
        recovered = await prompt_text(conn, sid, "prompt 3")
    # honest endings: a failed model call answers the prompt with a JSON-RPC error, not end_turn
    assert recovered.stop_reason == "end_turn"
    assert [f.code for f in failures] == [-32603] * 3
    assert (
        str(failures[0]) == "The model request failed: Authentication failed (HTTP 401): check OPENAI_API_KEY"
    )
    assert failures[1].data["details"].startswith("Server error (HTTP 500): backend crashed while using")
    assert "The stream ended unexpectedly after 1 chunk" in failures[2].data["details"]
    cards = list(client.think_cards(sid).values())
    assert [final_status(c) for c in cards] == ["failed", "failed", "completed", "completed"]
    reasons = [
        "Authentication failed (HTTP 401): check OPENAI_API_KEY",
        "Server error (HTTP 500): backend crashed while using",
    ]
    for card, reason in zip(cards, reasons, strict=False):
        assert reason in texts(card[-1])
    answer = client.answer(sid)
    assert "⚠️" not in answer, "the reason is the error's, not a second copy in the answer"
    assert "partial" in answer
    assert answer.endswith("recovered")
    responses = [recovered, *(f.data for f in failures)]
    no_key_anywhere(client, *responses)
    assert KEY not in log_path.read_text(errors="replace"), "the API key leaked into the agent's log"


@pytest.mark.anyio
async def test_e2e_retry_shows_in_the_heartbeat_and_cancel_answers_within_200ms(server, tmp_path):
    server.script(
        error_reply(429, retry_after=0.3), text_reply("after the retry"), text_reply("never", delay=30)
    )
    client = RecordingClient()
    started = asyncio.Event()
    async with served_inprocess(client, openai_agent(server)) as conn:
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        first = await prompt_text(conn, sid, "retry please")
        n_first = len(client.updates)

        client.on_update = lambda r: started.set() if isinstance(r.update, ToolCallStart) else None
        task = asyncio.create_task(prompt_text(conn, sid, "this will be cancelled"))
        await asyncio.wait_for(started.wait(), 10)
        assert await asyncio.to_thread(server.wait_for_requests, 3, 10)
        await asyncio.sleep(0.15)
        cancelled_at = time.monotonic()
        await conn.cancel(session_id=sid)
        response = await asyncio.wait_for(task, 5)
        answered_at = time.monotonic()
        disconnected = await asyncio.to_thread(server.wait_for_disconnect, -1, 2)

    assert first.stop_reason == "end_turn"
    (retry_card,) = [c for c in client.think_cards(sid).values() if c[0] is client.updates[0].update]
    beat_texts = [texts(u) for u in retry_card[1:] if u.status == "in_progress"]
    assert any("Retrying in 0.3s (429)" in t for t in beat_texts), beat_texts
    assert final_status(retry_card) == "completed"
    assert "after the retry" in "".join(
        r.update.content.text for r in client.updates[:n_first] if isinstance(r.update, AgentMessageChunk)
    )

    assert response.stop_reason == "cancelled"
    assert answered_at - cancelled_at < CANCEL_BOUND, f"cancel took {answered_at - cancelled_at:.3f}s"
    assert disconnected is not None and disconnected - cancelled_at < CANCEL_BOUND, "HTTP request not aborted"
    last_card = list(client.think_cards(sid).values())[-1]
    assert final_status(last_card) == "failed" and "Cancelled" in texts(last_card[-1])


@pytest.mark.e2e
@pytest.mark.anyio
async def test_e2e_a_stored_session_continues_in_a_new_process_with_its_history(server, tmp_path):
    """Durable sessions: the process that had the conversation is killed; a new one
    loads the session and its next request to the model carries the earlier messages, the tool
    call and its result paired as the API demands."""
    (tmp_path / "notes.txt").write_text("the needle is here\n")
    server.script(
        tool_reply([("call_n1", "search", {"query": "needle"})]),
        text_reply("It is in notes.txt."),
        text_reply("You asked where the needle is."),
    )
    env = openai_env(server, ACP_PROGRESS_STATE_DIR=str(tmp_path / "state"))
    async with spawn_agent(RecordingClient(), env=env) as (conn, proc, _log):
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "where is the needle?")).stop_reason == "end_turn"
        proc.kill()
        await proc.wait()

    client = RecordingClient()
    async with spawn_agent(client, env=env) as (conn, _proc, _log):
        await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        assert (await prompt_text(conn, sid, "what did I ask?")).stop_reason == "end_turn"

    messages = server.chat_bodies[-1]["messages"]
    roles = [m["role"] for m in messages if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[1 if messages[0]["role"] == "system" else 0]["content"] == "where is the needle?"
    call = next(m for m in messages if m.get("tool_calls"))
    assert call["tool_calls"][0]["id"] == "call_n1"
    tool = next(m for m in messages if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_n1" and "needle" in tool["content"]
    assert messages[-1] == {"role": "user", "content": "what did I ask?"}
    answer = "".join(u.content.text for u in client.for_session(sid) if isinstance(u, AgentMessageChunk))
    assert answer.endswith("You asked where the needle is.")  # the replayed answer, then the new one
