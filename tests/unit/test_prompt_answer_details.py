"""What a turn's updates and answer carry besides cards: ``messageId`` on every message chunk (one
id per message), the prompt response's own ``usage``, and the session's cost in ``usage_update``
when the OpenAI-compatible server reports it. In-process (the wire adds nothing to these fields);
the back-end is the fake OpenAI-compatible server on loopback."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from acp.schema import AgentMessageChunk, AgentThoughtChunk, UsageUpdate, UserMessageChunk
from openai.types import CompletionUsage

from acp_adapter.models.openai_compat import reported_cost
from tests.helpers.acp_agent import RecordingClient, prompt_text
from tests.helpers.fake_openai import FakeOpenAI, text_reply, tool_reply
from tests.helpers.openai_agent import KEY, openai_agent
from tests.helpers.shared_agent import progress_agent, served_inprocess


def _runs(updates: list[Any]) -> list[list[Any]]:
    """The uninterrupted runs of one kind of text chunk (any other update ends a run)."""
    runs: list[list[Any]] = []
    previous: type | None = None
    for update in updates:
        kind = type(update) if isinstance(update, AgentMessageChunk | AgentThoughtChunk) else None
        if kind is not None:
            if kind is previous:
                runs[-1].append(update)
            else:
                runs.append([update])
        previous = kind
    return runs


@pytest.mark.anyio
async def test_every_message_chunk_carries_its_message_s_id(tmp_path: Path) -> None:
    (tmp_path / "notes.py").write_text("# TODO: write the docs\n")
    client = RecordingClient()
    async with served_inprocess(client, progress_agent(state_dir=str(tmp_path / "state"))) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, "search the workspace for TODO")).stop_reason == "end_turn"
        assert (await prompt_text(conn, sid, "what is 2+2")).stop_reason == "end_turn"
        live = client.for_session(sid)
        runs = _runs(live)
        assert len(runs) >= 2, "two answers at least"
        ids = [{chunk.message_id for chunk in run} for run in runs]
        assert all(len(one) == 1 and None not in one for one in ids), "one id for every chunk of a message"
        assert len({next(iter(one)) for one in ids}) == len(runs), "a new message, a new id"

        # a load replays each stored message with its id, and each prompt as one user message
        replayed = RecordingClient()
        async with served_inprocess(replayed, progress_agent(state_dir=str(tmp_path / "state"))) as again:
            await again.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
        replay = replayed.for_session(sid)
        answers = [u for u in replay if isinstance(u, AgentMessageChunk)]
        assert answers and all(a.message_id for a in answers)
        assert {a.message_id for a in answers} <= {next(iter(one)) for one in ids}
        users = [u for u in replay if isinstance(u, UserMessageChunk)]
        assert len(users) == 2 and all(u.message_id for u in users)
        assert len({u.message_id for u in users}) == 2


@pytest.fixture
def server() -> Any:
    with FakeOpenAI(api_key=KEY) as fake:
        yield fake


@pytest.mark.anyio
async def test_the_answer_carries_usage_and_usage_update_the_session_s_cost(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the needle is here\n")
    server.script(
        text_reply("Hello", usage=(11, 7, 0.25)),
        tool_reply([("call_s1", "search", {"query": "needle"})], usage=(20, 5, 0.125)),
        text_reply("Found it.", usage=(40, 6, 0.5)),
        text_reply("No price.", usage=(3, 2)),
    )
    client = RecordingClient()
    agent = openai_agent(server, ACP_PROGRESS_OPENAI_CONTEXT_WINDOW="8192")
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        first = await prompt_text(conn, sid, "say hello")
        assert first.usage is not None
        assert (first.usage.input_tokens, first.usage.output_tokens, first.usage.total_tokens) == (11, 7, 18)
        second = await prompt_text(conn, sid, "where is the needle?")
        assert second.usage is not None and second.usage.total_tokens == 25 + 46
        third = await prompt_text(conn, sid, "again")
        assert third.usage is not None and third.usage.total_tokens == 5
    costs = [(u.cost.amount, u.cost.currency) for u in client.for_session(sid) if isinstance(u, UsageUpdate)]
    # cumulative for the session; a call with no reported price leaves the total as it was
    assert costs == [(0.25, "USD"), (0.375, "USD"), (0.875, "USD"), (0.875, "USD")]


@pytest.mark.parametrize(
    ("cost", "expected"),
    [
        (0.002, 0.002),
        (0, 0.0),
        (-1, None),
        (float("nan"), None),
        (float("inf"), None),
        (1e300, None),
        ("0.5", None),
        (True, None),
        ({"amount": 1}, None),
        (None, None),
    ],
)
def test_a_reported_cost_is_believed_only_when_sane(cost: Any, expected: float | None) -> None:
    fields: dict[str, Any] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if cost is not None:
        fields["cost"] = cost
    found = reported_cost(CompletionUsage.model_validate(fields))
    assert found == expected and (found is None or math.isfinite(found))
