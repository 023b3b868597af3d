"""Questions from MCP tools reach a person: a real MCP server (tests/mcp_servers/tasks.py, built with
the ``mcp`` SDK, and server-everything, whose research task is here whether it asks or not) asks
during a call (``elicitation/create``), the agent asks
the editor (the SDK's client side, which answers, declines or cancels) and the answer goes back to
the server; the card shows "waiting for your answer" meanwhile. An editor that offers no questions
gets none: the server hears a decline with a reason. The server's schema is hostile until bounded
and cleaned (properties checked with Hypothesis). The MCP servers are real processes (the task
server one over streamable HTTP for the module's sessions); the agent runs in this process (its
process proves nothing about questions)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    AcceptElicitationResponse,
    CancelElicitationResponse,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationFormSessionMode,
    ElicitationUrlCapabilities,
    ElicitationUrlSessionMode,
    HttpMcpServer,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_adapter.mcp.elicitation import MAX_SCHEMA_BYTES, WAITING, UnfitQuestion, form_schema, safe_url
from tests.helpers.acp_agent import RecordingClient, final_status, prompt_text
from tests.helpers.mcp_kit import everything, http_tasks_server
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.tool_cards import progress_of, text_of, tool_cards

pytestmark = pytest.mark.anyio


@dataclass
class AskingClient(RecordingClient):
    """An editor that takes questions and answers them as told."""

    reply: str = "accept"
    content: dict[str, Any] = field(default_factory=lambda: {"colour": "teal"})
    asked: list[tuple[str, Any]] = field(default_factory=list)
    #: the card's progress lines when each question arrived
    lines_when_asked: list[list[str]] = field(default_factory=list)
    #: the link questions the agent said were done (``elicitation/complete``)
    completed: list[str] = field(default_factory=list)

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self.completed.append(elicitation_id)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.asked.append((message, mode))
        card = self.cards().get(getattr(mode, "tool_call_id", None) or "", [])
        self.lines_when_asked.append([str(p.get("message", "")) for p in progress_of(card)])
        if self.reply == "accept":
            return AcceptElicitationResponse(action="accept", content=self.content)
        if self.reply == "decline":
            return DeclineElicitationResponse(action="decline")
        return CancelElicitationResponse(action="cancel")


#: server-everything's research task runs four stages of a second each, a constant of the server
#: (no argument, no setting): its timers run at this fraction of their delay (200 ms a stage). Its
#: stages still reach the card one by one: the server sends each as a status notification.
RESEARCH_CLOCK = 0.2

GITHUB_TOKEN = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8"
FORMS = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()))


@contextlib.asynccontextmanager
async def editor(client: AskingClient, capabilities: ClientCapabilities) -> AsyncIterator[Any]:
    """The agent, in this process (its process proves nothing here), with an SDK client side that
    takes ``elicitation/create`` (an unstable ACP method in this SDK: the client side opts in)."""
    agent = progress_agent(mcp={"stop_grace": 0.2})  # server-everything outlives its closed stdin
    async with served_inprocess(client, agent, capabilities, use_unstable_protocol=True) as conn:
        yield conn


@pytest.fixture(scope="module")
async def asking() -> AsyncIterator[tuple[Any, AskingClient]]:
    """One agent whose editor takes form questions (each test sets the client's reply)."""
    client = AskingClient()
    async with editor(client, FORMS) as conn:
        yield conn, client


@pytest.fixture(scope="module")
def tasks_url() -> Iterator[str]:
    """The task server over streamable HTTP, one process for the module's sessions (each agent's
    session has an MCP session of its own with it, with the questions its editor takes): the
    questions are the point here, not the transport."""
    with http_tasks_server() as url:
        yield url


def jobs_server(url: str) -> HttpMcpServer:
    return HttpMcpServer(name="jobs", url=url, headers=[], type="http")


@pytest.fixture(scope="module")
async def jobs(
    asking: tuple[Any, AskingClient], tasks_url: str, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """One session of that agent with the task server, shared by the tests that ask through its
    ``asks`` tool: each looks at the questions and the card of its own turn."""
    conn, _client = asking
    cwd = tmp_path_factory.mktemp("jobs")
    return (await conn.new_session(cwd=str(cwd), mcp_servers=[jobs_server(tasks_url)])).session_id


@pytest.fixture(scope="module")
async def everything_session(
    asking: tuple[Any, AskingClient], tmp_path_factory: pytest.TempPathFactory
) -> str:
    """One session of that agent with server-everything, shared by the tests of its questions
    (its clock runs five times faster: see :data:`RESEARCH_CLOCK`)."""
    conn, _client = asking
    cwd = tmp_path_factory.mktemp("everything")
    server = everything(clock_scale=RESEARCH_CLOCK)
    return (await conn.new_session(cwd=str(cwd), mcp_servers=[server])).session_id


@pytest.mark.e2e
async def test_a_tool_s_question_reaches_the_editor_and_the_answer_goes_back(
    jobs: str, asking: tuple[Any, AskingClient]
) -> None:
    conn, client = asking
    client.reply, before = "accept", len(client.asked)
    sid = jobs
    ask = json.dumps({"question": "Which colour?\x1b[2J\x1b]0;pwned\x07"})
    assert (await prompt_text(conn, sid, f"call asks {ask}")).stop_reason == "end_turn"
    ((message, mode),) = client.asked[before:]
    assert message == "[jobs] Which colour?" and "\x1b" not in message
    assert isinstance(mode, ElicitationFormSessionMode) and mode.session_id == sid
    card = tool_cards(client, sid)[-1]
    assert mode.tool_call_id == card[0].tool_call_id
    assert "colour" in (mode.requested_schema.properties or {})
    assert client.lines_when_asked[-1][-1:] == [WAITING], "the card said it waits for the answer"
    assert final_status(card) == "completed" and "the person said teal" in text_of(card[-1])


@pytest.mark.e2e
@pytest.mark.parametrize("reply", ["decline", "cancel"])
async def test_a_decline_or_a_cancel_goes_back_to_the_server(
    jobs: str, asking: tuple[Any, AskingClient], reply: str
) -> None:
    conn, client = asking
    client.reply = reply
    sid = jobs
    await prompt_text(conn, sid, "call asks {}")
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and f"the person chose {reply}" in text_of(card[-1])


@pytest.mark.e2e
async def test_server_everything_s_question_reaches_the_editor(
    everything_session: str, asking: tuple[Any, AskingClient]
) -> None:
    conn, client = asking
    client.reply, before = "decline", len(client.asked)
    sid = everything_session
    await prompt_text(conn, sid, "call trigger-elicitation-request {}")
    assert len(client.asked) == before + 1
    message, mode = client.asked[-1]
    assert "Please provide inputs" in message and len(mode.requested_schema.properties or {}) >= 5
    card = tool_cards(client, sid)[-1]
    assert final_status(card) == "completed" and "decline" in text_of(card[-1]).lower()


@pytest.mark.e2e
async def test_an_editor_without_questions_gets_none_and_the_server_hears_why(
    tmp_path: Path, tasks_url: str
) -> None:
    client = AskingClient()
    async with editor(client, ClientCapabilities()) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[jobs_server(tasks_url)])).session_id
        await prompt_text(conn, sid, "call asks {}")
        assert client.asked == []
        card = tool_cards(client, sid)[-1]
        assert final_status(card) == "completed" and "the person chose decline" in text_of(card[-1])
        lines = [str(p.get("message", "")) for p in progress_of(card)]
        assert any(line.startswith("question declined: no person can answer here") for line in lines)


# ---------------------------------------------------------------- untrusted schemas


def test_a_schema_too_big_too_deep_or_not_a_form_is_refused() -> None:
    with pytest.raises(UnfitQuestion, match="too big"):
        form_schema({"type": "object", "description": "x" * (MAX_SCHEMA_BYTES + 1)})
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        deep = {"nested": deep}
    with pytest.raises(UnfitQuestion, match="too deep"):
        form_schema({"type": "object", "properties": {"a": deep}})
    with pytest.raises(UnfitQuestion, match="too many fields"):
        form_schema({"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(60)}})
    with pytest.raises(UnfitQuestion):
        form_schema(["not", "an", "object"])
    with pytest.raises(UnfitQuestion):
        safe_url("javascript:alert(1)")
    with pytest.raises(UnfitQuestion):
        safe_url("https://example.com/\x1b[2J")


def test_escapes_and_secrets_in_a_schema_are_cleaned() -> None:
    schema = form_schema(
        {
            "type": "object",
            "title": "Pick\x1b[31m red\x1b[0m",
            "properties": {
                "token\x07": {
                    "type": "string",
                    "description": "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8",
                }
            },
        }
    )
    dumped = json.dumps(schema.model_dump(mode="json", by_alias=True))
    assert "\\u001b" not in dumped and "\\u0007" not in dumped
    assert "Zz9Yy8Xx7Ww6" not in dumped
    assert schema.title == "Pick red"


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    _nested,
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_any_schema_is_either_refused_or_cleaned(raw: dict[str, Any]) -> None:
    try:
        schema = form_schema({"type": "object", "properties": raw})
    except UnfitQuestion:
        return
    dumped = json.dumps(schema.model_dump(mode="json", by_alias=True))
    for bad in ("\\u001b", "\\u0007", "\\u009b"):
        assert bad not in dumped


@pytest.mark.e2e
async def test_server_everything_s_research_task_reports_its_stages_and_asks_when_ambiguous(
    everything_session: str, asking: tuple[Any, AskingClient], tmp_path: Path
) -> None:
    """server-everything's research task (four stages of a second each, fixed by the server, run on
    a clock five times faster) runs as an MCP task: its stages reach the card and its report ends
    it. On an ambiguous topic it turns ``input_required``: the card says it waits for the person,
    the question reaches the editor, the report uses the answer. The two run side by side, each in
    its own session, so the server's stage timer is waited once."""
    conn, client = asking
    client.reply, client.content = "accept", {"interpretation": "snake"}
    before = len(client.asked)
    server = everything(clock_scale=RESEARCH_CLOCK)
    plain = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])).session_id
    ambiguous = everything_session
    answers = await asyncio.gather(
        prompt_text(conn, plain, 'call simulate-research-query {"topic": "tardigrades"}'),
        prompt_text(conn, ambiguous, 'call simulate-research-query {"topic": "python", "ambiguous": true}'),
    )
    assert [a.stop_reason for a in answers] == ["end_turn", "end_turn"]

    card = tool_cards(client, plain)[-1]
    assert card[0].title.startswith("mcp__everything__simulate-research-query")
    stages = [str(p.get("message", "")) for p in progress_of(card)]
    stages = [line for line in stages if line.startswith("task ")]
    assert any("Gathering sources" in line for line in stages), stages
    assert any("Generating report" in line or "Synthesizing" in line for line in stages), stages
    assert final_status(card) == "completed"
    assert "Research Report: tardigrades" in text_of(card[-1])

    assert len(client.asked) == before + 1
    card = tool_cards(client, ambiguous)[-1]
    lines = [str(p.get("message", "")) for p in progress_of(card)]
    assert any(line.startswith("task waiting for your answer") for line in lines), lines
    assert final_status(card) == "completed" and "snake" in text_of(card[-1])


@pytest.mark.e2e
async def test_a_link_question_reaches_an_editor_that_takes_links_and_a_bad_link_never_does(
    tmp_path: Path, tasks_url: str
) -> None:
    client = AskingClient()
    links = ClientCapabilities(elicitation=ElicitationCapabilities(url=ElicitationUrlCapabilities()))
    async with editor(client, links) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[jobs_server(tasks_url)])).session_id
        await prompt_text(conn, sid, 'call opens {"url": "https://example.com/login?x=1"}')
        ((message, mode),) = client.asked
        assert message == "[jobs] Sign in to go on"
        assert (
            isinstance(mode, ElicitationUrlSessionMode) and str(mode.url) == "https://example.com/login?x=1"
        )
        assert mode.elicitation_id == "login-1"
        assert "the person chose accept" in text_of(tool_cards(client, sid)[-1][-1])
        for _ in range(100):  # the server's notifications/elicitation/complete, passed on
            if client.completed:
                break
            await asyncio.sleep(0.05)
        assert client.completed == ["login-1"]
        await prompt_text(conn, sid, 'call opens {"url": "javascript:alert(1)"}')
        assert len(client.asked) == 1, "a link that is not http(s) is never shown"
        card = tool_cards(client, sid)[-1]
        assert "the person chose decline" in text_of(card[-1])
        lines = [str(p.get("message", "")) for p in progress_of(card)]
        assert any("its link is not http(s)" in line for line in lines), lines
