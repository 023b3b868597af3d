"""Reload and see the thread: ``GET /threads/{threadId}`` returns the thread's
stored conversation as AG-UI messages.

In-process: the app is built on a session store filled the way the agent's recorder fills it
(SDK update objects dumped to JSON) and asked over ASGI, so the agent never starts. The store is a
plain dict-backed one that does not scrub on the way in (a store back-end is the host's choice),
so the endpoint's own redaction is what these tests see.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    TextContentBlock,
    ToolCallStart,
    UserMessageChunk,
)
from ag_ui.core import AssistantMessage, ReasoningMessage, ToolMessage, UserMessage
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from acp_adapter.frontends.agui.admission import Admission
from acp_adapter.frontends.agui.app import create_app
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.history import MAX_TEXT_CHARS, bounded, history_messages
from acp_adapter.frontends.agui.policy import default_policy
from acp_adapter.store import SessionRecord, StoredSession

SECRET = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
TOKEN = "history-test-token-0123456789abcdef"
NAMESPACE = "agui:threads:instance:one"
ANY_MESSAGE: TypeAdapter[Any] = TypeAdapter(UserMessage | AssistantMessage | ReasoningMessage | ToolMessage)


class PlainStore:
    """A key-value and session store that keeps what it is given, as given."""

    def __init__(self) -> None:
        self.kv: dict[tuple[str, str], Any] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.kv[(namespace, key)] = value

    def get(self, namespace: str, key: str) -> Any | None:
        return self.kv.get((namespace, key))

    def items(self, namespace: str) -> list[tuple[str, Any]]:
        return [(key, value) for (ns, key), value in self.kv.items() if ns == namespace]

    def remove(self, namespace: str, key: str) -> None:
        self.kv.pop((namespace, key), None)

    def load(self, session_id: str) -> StoredSession | None:
        if session_id not in self.events:
            return None
        record = SessionRecord(session_id, "/w", None, 0.0, 0.0)
        return StoredSession(record, list(self.events[session_id]))


def dumped(update: Any) -> dict[str, Any]:
    result: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def text(block: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=block)


def conversation() -> list[Any]:
    """Two turns as the recorder keeps them: prompt, thought, answer, an edit and a failed tool."""
    return [
        UserMessageChunk(session_update="user_message_chunk", content=text("fix the typo")),
        AgentThoughtChunk(session_update="agent_thought_chunk", content=text("First I read the notes")),
        AgentMessageChunk(session_update="agent_message_chunk", content=text("Fixing it now.")),
        ToolCallStart(
            session_update="tool_call",
            tool_call_id="call-1",
            title="Edit notes.txt",
            kind="edit",
            status="completed",
            raw_input={"path": "notes.txt", "auth": f"Bearer {SECRET}"},
            content=[
                FileEditToolCallContent(type="diff", path="notes.txt", old_text="paers\n", new_text="pears\n")
            ],
        ),
        ToolCallStart(
            session_update="tool_call",
            tool_call_id="call-2",
            title="Run tests",
            kind="execute",
            status="failed",
            content=[ContentToolCallContent(type="content", content=text(f"token {SECRET} refused"))],
        ),
        AgentPlanUpdate(
            session_update="plan",
            entries=[PlanEntry(content="Fix the typo", status="completed", priority="high")],
        ),
        AgentMessageChunk(session_update="agent_message_chunk", content=text("Done: the typo ")),
        AgentMessageChunk(session_update="agent_message_chunk", content=text(f"is fixed ({SECRET}).")),
        UserMessageChunk(session_update="user_message_chunk", content=text("thanks")),
        AgentMessageChunk(session_update="agent_message_chunk", content=text("You are welcome.")),
    ]


def fill(
    store: PlainStore, thread_id: str, session_id: str, updates: Sequence[Any], ns: str = NAMESPACE
) -> None:
    store.put(ns, thread_id, {"sessionId": session_id, "cwd": "/w", "usedAt": 1.0, "title": "t"})
    store.events[session_id] = [dumped(update) for update in updates]


def client(
    store: PlainStore, *, scope: str = "instance:one", token: str | None = TOKEN, **kw: Any
) -> httpx.AsyncClient:
    app = create_app(
        AguiOptions(
            agent_command=["true"],
            thread_store=store,
            thread_scope=scope,
            admission=Admission(token=token),
            **kw,
        )
    )
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers)


@pytest.mark.anyio
async def test_the_thread_comes_back_as_agui_messages() -> None:
    store = PlainStore()
    fill(store, "thread-1", "session-1", conversation())
    async with client(store) as http:
        response = await http.get("/threads/thread-1")
    assert response.status_code == 200
    body = response.json()
    messages = body["messages"]
    for message in messages:
        ANY_MESSAGE.validate_python(message)  # each one is an ag-ui-protocol message
    assert [m["role"] for m in messages] == [
        "user",
        "reasoning",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert messages[0]["content"] == "fix the typo"
    assert messages[1]["content"] == "First I read the notes"
    calls = messages[2]["toolCalls"]
    assert messages[2]["content"] == "Fixing it now." and [c["id"] for c in calls] == ["call-1", "call-2"]
    assert [c["function"]["name"] for c in calls] == ["Edit notes.txt", "Run tests"]
    assert json.loads(calls[0]["function"]["arguments"])["path"] == "notes.txt"
    edit, failed = messages[3], messages[4]
    assert edit["toolCallId"] == "call-1" and "-paers\n+pears" in edit["content"] and "error" not in edit
    assert (
        failed["toolCallId"] == "call-2"
        and failed["error"]
        and failed["metadata"]["acpProgress"]["status"] == "failed"
    )
    assert messages[5]["content"].startswith("Done: the typo is fixed (")  # chunks are one message
    assert messages[-1]["content"] == "You are welcome."
    assert body["state"] == {"plan": [{"content": "Fix the typo", "status": "completed", "priority": "high"}]}
    assert body["truncated"] is False and body["omitted"] == 0
    assert len({m["id"] for m in messages}) == len(messages)


@pytest.mark.anyio
async def test_secrets_are_redacted_and_the_policy_decides_tool_results() -> None:
    store = PlainStore()
    fill(store, "thread-1", "session-1", conversation())

    def withhold(kind: str, payload: Any) -> Any:
        return {**payload, "content": "[withheld]"} if kind == "tool_result" else payload

    async with client(store) as http:
        plain = (await http.get("/threads/thread-1")).text
    async with client(store, policy=withhold) as http:
        withheld = (await http.get("/threads/thread-1")).json()["messages"]
    assert SECRET not in plain and "[REDACTED" in plain.upper()
    assert [m["content"] for m in withheld if m["role"] == "tool"] == ["[withheld]", "[withheld]"]


@pytest.mark.anyio
async def test_the_token_is_required() -> None:
    store = PlainStore()
    fill(store, "thread-1", "session-1", conversation())
    async with client(store) as http:
        assert (
            await http.get("/threads/thread-1", headers={"Authorization": "Bearer wrong"})
        ).status_code == 401
        http.headers.pop("Authorization")
        refused = await http.get("/threads/thread-1")
    assert refused.status_code == 401 and "fix the typo" not in refused.text


@pytest.mark.anyio
async def test_unknown_and_other_endpoints_threads_are_404() -> None:
    store = PlainStore()
    fill(store, "mine", "session-1", conversation())
    fill(store, "theirs", "session-2", conversation(), ns="agui:threads:instance:two")
    async with client(store) as http:
        assert (await http.get("/threads/mine")).status_code == 200
        for thread in ("nobody", "theirs", "x" * 10_000):
            response = await http.get(f"/threads/{thread}")
            assert response.status_code == 404 and "fix the typo" not in response.text, thread
    async with client(store, scope="instance:two") as http:
        assert (await http.get("/threads/theirs")).status_code == 200
        assert (await http.get("/threads/mine")).status_code == 404


@pytest.mark.anyio
async def test_a_thread_whose_session_the_store_does_not_keep_is_empty() -> None:
    store = PlainStore()
    store.put(NAMESPACE, "foreign", {"sessionId": "elsewhere", "cwd": "/w", "usedAt": 1.0})
    async with client(store) as http:
        body = (await http.get("/threads/foreign")).json()
    assert body["messages"] == [] and body["truncated"] is False


@pytest.mark.anyio
async def test_a_long_thread_is_cut_to_its_newest_messages_and_says_so() -> None:
    store = PlainStore()
    turns: list[Any] = []
    for n in range(400):
        turns.append(UserMessageChunk(session_update="user_message_chunk", content=text(f"question {n}")))
        turns.append(AgentMessageChunk(session_update="agent_message_chunk", content=text("x" * 10_000)))
    fill(store, "long", "session-long", turns)
    async with client(store) as http:
        response = await http.get("/threads/long")
    body = response.json()
    assert body["truncated"] is True and body["omitted"] == 800 - len(body["messages"]) > 0
    assert len(response.content) <= 2 * 1024 * 1024 + 1024
    assert body["messages"][-1]["content"] == "x" * 10_000
    assert body["messages"][-2]["content"] == "question 399"


def test_bounds_keep_the_newest_and_never_start_with_an_orphan_tool_result() -> None:
    messages, _ = history_messages(conversation(), default_policy)
    kept, omitted = bounded(messages, max_messages=5)
    assert [m["role"] for m in kept] == ["assistant", "user", "assistant"]  # tool results dropped too
    assert omitted == len(messages) - 3
    huge = [UserMessageChunk(session_update="user_message_chunk", content=text("y" * 200_000))]
    (only,), _ = history_messages(huge, default_policy)
    assert isinstance(only, UserMessage) and isinstance(only.content, str)
    assert len(only.content) < 70_000 and only.content.endswith("more characters not shown)")
    assert bounded(messages, max_bytes=10) == ([], len(messages))


class BrokenStore(PlainStore):
    def load(self, session_id: str) -> StoredSession | None:
        raise OSError("disk I/O error")


@pytest.mark.anyio
async def test_a_store_that_cannot_be_read_is_a_503_and_the_endpoint_goes_on() -> None:
    store = BrokenStore()
    fill(store, "thread-1", "session-1", conversation())
    async with client(store) as http:
        failed = await http.get("/threads/thread-1")
        assert failed.status_code == 503 and failed.headers["retry-after"]
        assert "disk" not in failed.text  # the reason is logged, not sent
        assert (await http.get("/threads")).status_code == 200


CHUNKS = {
    "user": lambda t: UserMessageChunk(session_update="user_message_chunk", content=text(t)),
    "assistant": lambda t: AgentMessageChunk(session_update="agent_message_chunk", content=text(t)),
    "reasoning": lambda t: AgentThoughtChunk(session_update="agent_thought_chunk", content=text(t)),
}
STEP = st.one_of(
    st.tuples(st.sampled_from(sorted(CHUNKS)), st.text("ab c\n", max_size=30)),
    st.tuples(st.just("tool"), st.sampled_from(["completed", "failed", "in_progress"])),
)


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(STEP, max_size=25), cap=st.integers(0, 12), max_bytes=st.integers(0, 3000))
def test_any_stored_conversation_becomes_valid_bounded_messages(
    steps: list[tuple[str, str]], cap: int, max_bytes: int
) -> None:
    updates: list[Any] = []
    for n, (kind, value) in enumerate(steps):
        if kind == "tool":
            updates.append(
                ToolCallStart(session_update="tool_call", tool_call_id=f"c{n}", title="t", status=value)  # type: ignore[arg-type]
            )
        else:
            updates.append(CHUNKS[kind](value))
    messages, _ = history_messages(updates, default_policy)
    roles = [m.role for m in messages]
    for before, after in itertools.pairwise(roles):
        assert not (before == after and before in ("user", "reasoning"))  # chunks are joined
    said = "".join(v for k, v in steps if k != "tool")
    assert (
        "".join(m.content or "" for m in messages if m.role != "tool" and isinstance(m.content, str)) == said
    )
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls or []]
    assert calls == [f"c{n}" for n, (kind, _) in enumerate(steps) if kind == "tool"]
    assert all(
        isinstance(m.content, str) and len(m.content) <= MAX_TEXT_CHARS + 60
        for m in messages
        if m.role != "assistant"
    )
    kept, omitted = bounded(messages, max_messages=cap, max_bytes=max_bytes)
    assert len(kept) <= cap and omitted == len(messages) - len(kept)
    assert sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in kept) <= max_bytes
    assert not kept or kept[0]["role"] != "tool"
    assert kept == [
        ANY_MESSAGE.validate_python(m).model_dump(mode="json", by_alias=True, exclude_none=True) for m in kept
    ]
    if kept:  # the newest are kept, in order
        assert kept[-1]["id"] == messages[-1].id
