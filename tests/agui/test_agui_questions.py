"""A tool's question through the AG-UI endpoint: the run pauses on an interrupt carrying the form,
the person's answer (accept, decline, cancel) resumes it and reaches the tool; a question nobody
answers is declined with its reason.

In process: the interrupt a question becomes (hostile strings included), the answers a resume may
give, the broker's timeout. End to end: the endpoint ``acp-progress agui`` builds, served over HTTP
in this process, driving this project's agent (in this process too: their processes prove nothing
here), with a real MCP server (``tests/mcp_servers/tasks.py``, built with the ``mcp`` SDK; one process
over streamable HTTP serves every session) whose ``asks`` and ``orders`` tools ask during the call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    DeclineElicitationResponse,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationUrlSessionMode,
)
from ag_ui.core import ResumeEntry
from pydantic import AnyUrl

from acp_adapter.client.driver import allow_all
from acp_adapter.client.questions import QuestionRequest
from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.interrupts import PendingInterrupt, PermissionBroker, ResumeError
from acp_adapter.frontends.agui.questions import (
    NO_INTERRUPTS,
    PendingQuestion,
    QuestionBroker,
)
from acp_adapter.mcp.config import frontend_servers
from tests.helpers.acp_agent import agent_env
from tests.helpers.agui_http import Served
from tests.helpers.agui_inprocess import use_in_process_agui_agents
from tests.helpers.agui_process import sse_events
from tests.helpers.mcp_kit import http_tasks_server, mcp_config

GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HOSTILE = "Name\x1b]0;pwned\x07\x1b[31m\u202etxt.exe\u200b"


def form(session: str = "s1") -> QuestionRequest:
    """A form question as the driver hands it over, its strings NOT cleaned by any agent."""
    schema = ElicitationSchema.model_validate(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": HOSTILE, "description": f"token {GH_TOKEN}"},
                "count": {"type": "integer", "title": "How many"},
                "urgent": {"type": "boolean", "title": "Urgent"},
                "size": {"type": "string", "title": "Size", "enum": ["small", "large\u202e"]},
            },
            "required": ["name", "count", "size"],
        }
    )
    mode = ElicitationFormSessionMode(session_id=session, tool_call_id="call-1", requested_schema=schema)
    return QuestionRequest(f"[jobs] Your order?\x1b[2J {GH_TOKEN}", mode)


def entry(pending: PendingQuestion, payload: Any, status: str = "resolved") -> ResumeEntry:
    return ResumeEntry.model_validate({"interruptId": pending.id, "status": status, "payload": payload})


@pytest.mark.anyio
async def test_the_interrupt_carries_the_form_with_every_string_cleaned_and_redacted() -> None:
    pending = PendingQuestion("question-1", form(), timeout=5)
    interrupt = pending.interrupt()
    dumped = json.dumps(interrupt.model_dump(mode="json", by_alias=True))
    for bad in ("\\u001b", "\\u0007", "\\u202e", "\\u200b", "A1b2C3d4E5f6"):
        assert bad not in dumped, bad
    assert interrupt.reason == "input_required" and interrupt.tool_call_id == "call-1"
    assert interrupt.message is not None and interrupt.message.startswith("[jobs] Your order?")
    fields = interrupt.metadata["acpProgress"]["fields"]  # type: ignore[index]
    assert [f["name"] for f in fields] == ["name", "count", "urgent", "size"]
    assert [f["kind"] for f in fields] == ["string", "integer", "boolean", "string"]
    assert fields[0]["title"] == "Name<U+202E>txt.exe<U+200B>" and fields[0]["required"] is True
    assert fields[2]["required"] is False and fields[3]["options"] == ["small", "large<U+202E>"]
    content = interrupt.response_schema["properties"]["content"]  # type: ignore[index]
    assert content["required"] == ["name", "count", "size"]


@pytest.mark.anyio
async def test_a_resume_accepts_declines_or_cancels_and_a_payload_that_does_not_fit_is_a_422() -> None:
    pending = PendingQuestion("question-1", form(), timeout=5)
    accepted = pending.choice(
        entry(pending, {"action": "accept", "content": {"name": "Ada", "count": 3, "size": "small"}})
    )
    assert isinstance(accepted, AcceptElicitationResponse)
    assert accepted.content == {"name": "Ada", "count": 3, "size": "small"}
    shown_option = pending.choice(  # an option as the interrupt showed it is that option
        entry(pending, {"action": "accept", "content": {"name": "Ada", "count": 1, "size": "large<U+202E>"}})
    )
    assert isinstance(shown_option, AcceptElicitationResponse)
    assert shown_option.content is not None and shown_option.content["size"] == "large\u202e"
    assert isinstance(pending.choice(entry(pending, {"action": "decline"})), DeclineElicitationResponse)
    assert isinstance(pending.choice(entry(pending, {"action": "cancel"})), CancelElicitationResponse)
    assert isinstance(pending.choice(entry(pending, None, "cancelled")), CancelElicitationResponse)
    ok = {"name": "Ada", "count": 3, "size": "small"}
    for content in (
        {**ok, "count": "3"},  # a number as text
        {**ok, "count": 2.5},  # not whole
        {**ok, "count": True},  # a boolean is not a number
        {**ok, "urgent": "yes"},
        {**ok, "size": "medium"},  # not an option
        {"name": "Ada", "count": 3},  # a required field missing
        {**ok, "extra": 1},  # a field the form does not have
        {**ok, "name": "x" * 10_001},
    ):
        with pytest.raises(ResumeError) as raised:
            pending.choice(entry(pending, {"action": "accept", "content": content}))
        assert raised.value.status == 422
    for payload in ({}, {"action": "yes"}, "accept", {"action": "accept", "content": []}):
        with pytest.raises(ResumeError):
            pending.choice(entry(pending, payload))


@pytest.mark.anyio
async def test_a_link_question_carries_its_link_and_an_accept_carries_no_content() -> None:
    mode = ElicitationUrlSessionMode(
        session_id="s1", elicitation_id="login-1", url=AnyUrl("https://example.com/login?x=1")
    )
    pending = PendingQuestion("question-2", QuestionRequest("Sign in", mode), timeout=5)
    interrupt = pending.interrupt()
    assert interrupt.metadata["acpProgress"]["url"] == "https://example.com/login?x=1"  # type: ignore[index]
    accepted = pending.choice(entry(pending, {"action": "accept", "content": {"ignored": 1}}))
    assert isinstance(accepted, AcceptElicitationResponse) and not accepted.content


class Run:
    """A run the broker can pause, recording what happened to it."""

    def __init__(self, asks: bool = True) -> None:
        self.asks_permission = asks
        self.paused: list[PendingInterrupt] = []
        self.expired: list[PendingInterrupt] = []
        self.asked = asyncio.Event()

    def pause(self, pending: PendingInterrupt) -> bool:
        self.paused.append(pending)
        self.asked.set()
        return True

    def expire(self, pending: PendingInterrupt) -> None:
        self.expired.append(pending)


def reason(response: Any) -> str | None:
    meta = response.field_meta or {}
    return meta.get("acpProgress", {}).get("reason")


@pytest.mark.anyio
async def test_the_broker_pauses_the_run_and_hands_back_its_answer() -> None:
    permissions = PermissionBroker(lambda r: None, timeout=5)  # type: ignore[arg-type,return-value]
    broker, run = QuestionBroker(permissions, timeout=5), Run()
    permissions.attach("s1", run)

    async def answer() -> None:
        await run.asked.wait()
        run.paused[0].answer(AcceptElicitationResponse(action="accept", content={"name": "Ada"}))

    response, _ = await asyncio.gather(broker(form()), answer())
    assert isinstance(response, AcceptElicitationResponse) and response.content == {"name": "Ada"}
    assert run.expired == []


@pytest.mark.anyio
async def test_a_run_without_interrupts_and_no_run_at_all_decline_at_once_saying_why() -> None:
    permissions = PermissionBroker(lambda r: None, timeout=5)  # type: ignore[arg-type,return-value]
    broker = QuestionBroker(permissions, timeout=5)
    response = await broker(form())
    assert isinstance(response, DeclineElicitationResponse) and reason(response) == NO_INTERRUPTS
    permissions.attach("s1", Run(asks=False))
    response = await broker(form())
    assert isinstance(response, DeclineElicitationResponse) and reason(response) == NO_INTERRUPTS


@pytest.mark.anyio
async def test_a_question_nobody_answers_in_time_is_declined_with_its_reason() -> None:
    permissions = PermissionBroker(lambda r: None, timeout=0.05)  # type: ignore[arg-type,return-value]
    broker, run = QuestionBroker(permissions, timeout=0.05), Run()
    permissions.attach("s1", run)
    response = await broker(form())
    assert isinstance(response, DeclineElicitationResponse)
    assert reason(response) == "nobody answered within 0.05 s"
    assert run.expired == run.paused and len(run.paused) == 1


@pytest.mark.anyio
async def test_a_question_left_by_a_plain_run_is_declined_saying_so() -> None:
    permissions = PermissionBroker(lambda r: None, timeout=5)  # type: ignore[arg-type,return-value]
    broker, run = QuestionBroker(permissions, timeout=5), Run()
    permissions.attach("s1", run)

    async def leave() -> None:
        await run.asked.wait()
        run.paused[0].answer(None)

    response, _ = await asyncio.gather(broker(form()), leave())
    assert isinstance(response, DeclineElicitationResponse) and "unanswered" in str(reason(response))


# ---------------------------------------------------------------------- end to end


def endpoint_options(workspace: Path, tasks_url: str, **options: Any) -> AguiOptions:
    """What ``acp-progress agui --yes --summary off --mcp-config …`` serves with (the other flags
    are ``options``), on this project's agent, the ``mcp.json`` naming the tasks server at
    ``tasks_url``."""
    return AguiOptions(
        cwd=str(workspace),
        permission_policy=allow_all,
        agent_env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"),
        mcp_servers=frontend_servers(str(mcp_config(workspace, tasks_url))),
        **options,
    )


@pytest.fixture(scope="module")
def tasks_url() -> Iterator[str]:
    """One tasks server (over streamable HTTP, in its own process) for every session of the
    module: each thread's session would start one of its own over stdio."""
    with http_tasks_server() as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tasks_url: str) -> Iterator[Served]:
    """``--redact none --tool-progress`` besides: the endpoint and this project's agent served in
    this process (what the questions do is the point, not their processes)."""
    workspace = tmp_path_factory.mktemp("agui-questions")
    with pytest.MonkeyPatch.context() as patched:
        use_in_process_agui_agents(patched)
        options = endpoint_options(workspace, tasks_url, policy="none", tool_progress=True)
        served = Served(create_app(options)).start()
        try:
            yield served
        finally:
            served.stop()


def post(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", url + "/", json=body, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return list(sse_events(response.iter_lines()))


def start(url: str, thread: str, prompt: str, asks: bool = True) -> list[dict[str, Any]]:
    props = {"permissionInterrupts": True} if asks else {}
    messages = [{"id": f"m-{thread}", "role": "user", "content": prompt}]
    return post(url, {"threadId": thread, "runId": "r0", "messages": messages, "forwardedProps": props})


def resume(url: str, thread: str, run: str, interrupt: dict[str, Any], payload: Any) -> list[dict[str, Any]]:
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
    return post(url, {"threadId": thread, "runId": run, "messages": [], "resume": [entry]})


def until_question(url: str, thread: str, events: list[dict[str, Any]]) -> tuple[dict[str, Any], list[Any]]:
    """Allow the tool's permission question (if asked) until the run pauses on the tool's question."""
    seen = list(events)
    for step in range(3):
        outcome = seen[-1].get("outcome", {})
        assert seen[-1]["type"] == "RUN_FINISHED" and outcome.get("type") == "interrupt", seen[-1]
        (interrupt,) = outcome["interrupts"]
        if interrupt["reason"] == "input_required":
            return interrupt, seen
        allow = next(o for o in interrupt["metadata"]["acpProgress"]["options"] if o["kind"] == "allow_once")
        seen += resume(url, thread, f"rp{step}", interrupt, {"optionId": allow["optionId"]})
    raise AssertionError("the run never asked the tool's question")


@pytest.mark.e2e
def test_the_page_s_answer_reaches_the_tool(server: Served) -> None:
    events = start(server.url, "q-accept", "call orders {}")
    interrupt, seen = until_question(server.url, "q-accept", events)
    assert "waiting for your answer" in json.dumps(seen)
    dumped = json.dumps(interrupt)
    assert "\\u001b" not in dumped and "\\u202e" not in dumped and "\\u0007" not in dumped
    fields = {f["name"]: f for f in interrupt["metadata"]["acpProgress"]["fields"]}
    assert fields["name"]["title"] == "Name<U+202E>txt.exe"
    assert fields["size"]["options"] == ["small", "large"] and fields["urgent"]["kind"] == "boolean"
    content = {"name": "Ada", "count": 3, "urgent": True, "size": "large"}
    after = resume(server.url, "q-accept", "r9", interrupt, {"action": "accept", "content": content})
    assert after[-1]["type"] == "RUN_FINISHED" and after[-1]["outcome"]["type"] == "success"
    assert "ordered 3 large for Ada, urgent=True" in json.dumps(after)


@pytest.mark.e2e
def test_a_decline_and_a_cancel_reach_the_tool(server: Served) -> None:
    for action in ("decline", "cancel"):
        thread = f"q-{action}"
        interrupt, _ = until_question(server.url, thread, start(server.url, thread, "call asks {}"))
        after = resume(server.url, thread, "r9", interrupt, {"action": action})
        assert after[-1]["outcome"]["type"] == "success"
        assert f"the person chose {action}" in json.dumps(after)


@pytest.mark.e2e
def test_an_answer_that_does_not_fit_is_refused_and_the_question_stays(server: Served) -> None:
    interrupt, _ = until_question(server.url, "q-bad", start(server.url, "q-bad", "call orders {}"))
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"action": "accept"}}
    body = {"threadId": "q-bad", "runId": "r8", "messages": [], "resume": [entry]}
    refused = httpx.post(server.url + "/", json=body, timeout=20)
    assert refused.status_code == 422 and "required" in refused.json()["detail"]
    after = resume(server.url, "q-bad", "r9", interrupt, {"action": "decline"})
    assert "the person chose decline" in json.dumps(after)


@pytest.mark.e2e
def test_a_run_without_interrupts_has_the_question_declined_saying_why(server: Served) -> None:
    events = start(server.url, "q-plain", "call asks {}", asks=False)
    assert events[-1]["outcome"]["type"] == "success"
    text = json.dumps(events)
    assert "the person chose decline" in text and "does not take interrupts" in text


@pytest.mark.e2e  # the MCP server is a process of its own
def test_a_question_nobody_answers_is_declined_after_the_bounded_wait(
    tmp_path: Path, tasks_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``--permission-timeout 0.5`` besides: the endpoint and this project's agent served in this
    process (the bounded wait is the point, not their processes)."""
    use_in_process_agui_agents(monkeypatch)
    caplog.set_level(logging.INFO, logger="acp_progress")
    # the wait is bounded, whatever its length: half a second
    served = Served(create_app(endpoint_options(tmp_path, tasks_url, permission_timeout=0.5))).start()
    try:
        until_question(served.url, "q-wait", start(served.url, "q-wait", "call asks {}"))
        deadline = time.monotonic() + 30
        while "nobody answered within 0.5 s; declined" not in caplog.text:  # nobody answers
            assert time.monotonic() < deadline, caplog.text
            time.sleep(0.02)
        later = start(served.url, "q-wait", "hello", asks=False)
        assert later[-1]["type"] == "RUN_FINISHED"
    finally:
        served.stop()


def test_the_agent_takes_a_decline_s_reason_cleaned_and_bounded() -> None:
    from acp_adapter.mcp.elicitation import decline_reason

    hostile = DeclineElicitationResponse(
        action="decline", field_meta={"acpProgress": {"reason": "late\x1b]0;x\x07\x1b[2J " + "y" * 900}}
    )
    why = decline_reason(hostile)
    assert why is not None and why.startswith("late") and "\x1b" not in why and len(why) <= 300
    assert decline_reason(DeclineElicitationResponse(action="decline")) is None
    odd = DeclineElicitationResponse(action="decline", field_meta={"acpProgress": {"reason": 3}})
    assert decline_reason(odd) is None
