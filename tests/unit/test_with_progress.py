"""``with_progress(agent)`` in process: third-party SDK agents served over the SDK's in-memory
transports, bare and wrapped, with a manual clock where timing is the point (an agent that thinks
five seconds costs no wall-clock time).

What is checked, against the rules the relay follows too: a think card while the agent has said
nothing, with its heartbeats; the card closed before the agent's first update and on every ending
(answer, error, cancel, hang-up); never two spinners; nothing after the prompt's answer; the agent's
own updates and every other method passed through unchanged and in order.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp._transport import memory_transport_pair
from acp.core import AgentSideConnection, ClientSideConnection
from acp.schema import ToolCallProgress, ToolCallStart

from acp_adapter import with_progress
from acp_adapter.clock import ManualClock
from acp_adapter.protocol.meta import META_KEY
from tests.agents.slow_agent import SECRET, SlowAgent
from tests.helpers.acp_agent import ROOT, sdk_served

sys.path.insert(0, str(ROOT / "tests" / "agents" / "sdk_examples"))

from echo_agent import EchoAgent
from example_agent import ExampleAgent

pytestmark = pytest.mark.anyio

OURS = "progress-think-"


@dataclass
class Seen:
    session_id: str
    update: Any
    kwargs: dict[str, Any]


@dataclass
class Recorder:
    """The editor: every session update with its ``_meta`` extras, in arrival order."""

    seen: list[Seen] = field(default_factory=list)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.seen.append(Seen(session_id, update, kwargs))

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")

    def shown(self, session_id: str | None = None) -> list[str]:
        """Compact: ``think:start``/``think:<status>`` for our card, ``<kind>:start``/``card:<status>``
        for the agent's cards, ``msg``, ``thought`` …"""
        out = []
        for item in self.seen:
            if session_id is not None and item.session_id != session_id:
                continue
            update = item.update
            ours = getattr(update, "tool_call_id", "").startswith(OURS)
            if isinstance(update, ToolCallStart):
                out.append(("think" if ours else update.kind or "other") + ":start")
            elif isinstance(update, ToolCallProgress):
                out.append(("think:" if ours else "card:") + str(update.status))
            elif update.session_update == "agent_message_chunk":
                out.append("msg")
            elif update.session_update == "agent_thought_chunk":
                out.append("thought")
            else:
                out.append(update.session_update)
        return out

    def ours(self) -> list[Any]:
        return [s.update for s in self.seen if getattr(s.update, "tool_call_id", "").startswith(OURS)]

    def theirs(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """The agent's own updates exactly as the editor got them."""
        return [
            (s.session_id, s.update.model_dump(by_alias=True), s.kwargs)
            for s in self.seen
            if not getattr(s.update, "tool_call_id", "").startswith(OURS)
        ]


def wrapped_on(clock: ManualClock, agent: Any, **options: Any) -> Any:
    options = {"think_after": 0.5, "heartbeat": 1.0, **options}
    return with_progress(agent, clock=clock, summary=None, **options)


async def new_session(conn: ClientSideConnection) -> str:
    return (await conn.new_session(cwd=str(ROOT), mcp_servers=[])).session_id


def ask(conn: ClientSideConnection, session_id: str, text: str = "think hard") -> asyncio.Future[Any]:
    return asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block(text)]))


# ---------------------------------------------------------------------- the think card's life


async def test_an_agent_silent_for_five_seconds_gets_a_card_that_beats_and_closes_before_its_first_update():
    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, SlowAgent(gate=gate)), client) as conn:
        session = await new_session(conn)
        answer = ask(conn, session)
        await clock.advance(0.499)
        assert client.shown() == [], "nothing before think_after"
        await clock.advance(0.001)
        assert client.shown() == ["think:start"]
        await clock.advance(4.5)  # the agent's model thinks five seconds
        assert client.shown() == ["think:start"] + ["think:in_progress"] * 4
        gate.set()
        response = await answer
        assert response.stop_reason == "end_turn"
        assert client.shown() == ["think:start"] + ["think:in_progress"] * 4 + ["think:completed", "msg"]
        # the elapsed time counts from the prompt (when the agent went quiet), not from the card
        assert "Thought for 5" in client.ours()[-1].content[0].content.text
        before = len(client.seen)
        await clock.advance(30)
        assert len(client.seen) == before, "nothing after the prompt's answer"
        assert clock.pending == 0


async def test_an_agent_that_streams_at_once_passes_through_unchanged_with_no_card():
    """The SDK's own echo example: its chunks carry ``_meta`` and a ``source`` extra of its own."""
    bare, wrapped, clock = Recorder(), Recorder(), ManualClock()
    for agent, client in ((EchoAgent(), bare), (wrapped_on(clock, EchoAgent()), wrapped)):
        async with sdk_served(agent, client) as conn:
            session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
            response = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("one"), text_block("two")]
            )
            assert response.stop_reason == "end_turn"
            await clock.advance(30)  # far past think_after and heartbeats: no late card either
    assert wrapped.ours() == []
    strip = [(update, kwargs) for _sid, update, kwargs in wrapped.theirs()]
    assert strip == [(update, kwargs) for _sid, update, kwargs in bare.theirs()]
    assert [u["content"]["text"] for u, _ in strip] == ["one", "two"]
    assert strip[0][0]["_meta"] == {"echo": True} and strip[0][1] == {"source": "echo_agent"}


async def test_every_other_method_of_the_sdk_example_agent_answers_as_it_does_bare():
    async def drive(agent: Any) -> list[Any]:
        client = Recorder()
        async with sdk_served(agent, client) as conn:
            out: list[Any] = [await conn.authenticate(method_id="token")]
            session = await conn.new_session(cwd=str(ROOT), mcp_servers=[])
            out.append(session)
            out.append(await conn.load_session(cwd=str(ROOT), session_id=session.session_id, mcp_servers=[]))
            out.append(await conn.set_session_mode(session_id=session.session_id, mode_id="fast"))
            out.append(await conn.ext_method("example/ping", {"x": 1}))
            await conn.ext_notification("example/note", {"y": 2})
            out.append(await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]))
            out.append(client.theirs())
            return out

    assert await drive(with_progress(ExampleAgent(), summary=None)) == await drive(ExampleAgent())


async def test_a_method_the_agent_does_not_have_is_still_not_found():
    """The SDK's router finds handlers with getattr: the wrapper must not invent any."""
    for agent in (SlowAgent(), with_progress(SlowAgent(), summary=None)):
        async with sdk_served(agent, Recorder()) as conn:
            with pytest.raises(RequestError) as caught:
                await conn.load_session(cwd=str(ROOT), session_id="slow-1", mcp_servers=[])
            assert caught.value.code == -32601


# ---------------------------------------------------------------------- every ending


async def test_cancel_mid_wait_fails_the_card_the_agent_hears_it_and_nothing_follows():
    clock = ManualClock()
    agent = SlowAgent(gate=asyncio.Event())
    client = Recorder()
    async with sdk_served(wrapped_on(clock, agent), client) as conn:
        session = await new_session(conn)
        answer = ask(conn, session)
        await clock.advance(0.6)
        await conn.cancel(session_id=session)
        await clock.settle()
        assert client.shown() == ["think:start", "think:failed"]
        assert (await answer).stop_reason == "cancelled"
        assert agent.cancels == [session]
        await clock.advance(10)
        assert client.shown() == ["think:start", "think:failed"]
        assert clock.pending == 0


async def test_an_agent_that_raises_fails_the_card_with_a_redacted_reason_before_the_error_answer():
    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, SlowAgent(script="raise", gate=gate)), client) as conn:
        session = await new_session(conn)
        answer = ask(conn, session)
        await clock.advance(0.6)
        gate.set()
        with pytest.raises(RequestError):
            await answer
        assert client.shown() == ["think:start", "think:failed"]
        reason = client.ours()[-1].content[0].content.text
        assert "RuntimeError" in reason and "model backend failed" in reason
        assert SECRET not in str(client.ours()[-1].model_dump()), "what we add is redacted"
        await clock.advance(10)
        assert client.shown() == ["think:start", "think:failed"]
        assert clock.pending == 0


async def test_a_hang_up_mid_wait_ends_the_turn_and_leaves_no_timer():
    clock = ManualClock()
    wrapped = wrapped_on(clock, SlowAgent(gate=asyncio.Event()))
    agent_end, client_end = memory_transport_pair()
    agent_conn = AgentSideConnection(wrapped, agent_end)
    client_conn = ClientSideConnection(Recorder(), client_end)
    await client_conn.initialize(protocol_version=PROTOCOL_VERSION)
    session = await new_session(client_conn)
    answer = ask(client_conn, session)
    await clock.advance(0.6)
    watch = wrapped._binding.watch()
    assert len(watch.turns()) == 1 and watch.injected_updates == 1
    await agent_conn.close()  # the SDK cancels the running prompt's task
    await clock.settle()
    assert watch.turns() == ()
    assert watch.injected_updates == 2, "the card was closed (as failed) on the way out"
    assert clock.pending == 0
    await client_conn.close()
    with pytest.raises(ConnectionError):
        await answer


# ---------------------------------------------------------------------- never two spinners


async def test_an_agent_that_opens_a_tool_card_at_once_gets_no_think_card_while_it_runs():
    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, SlowAgent(script="tool", gate=gate)), client) as conn:
        answer = ask(conn, await new_session(conn))
        await clock.advance(5)  # its own card spins for five silent seconds
        assert client.shown() == ["execute:start"]
        gate.set()
        await answer
    assert client.shown() == ["execute:start", "card:completed", "msg"]


@pytest.mark.parametrize(("script", "own"), [("thought", ["thought"]), ("think", ["think:start"])])
async def test_an_agent_that_shows_its_own_thinking_gets_no_second_spinner(script, own):
    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, SlowAgent(script=script, gate=gate)), client) as conn:
        session = await new_session(conn)
        answer = ask(conn, session)
        await clock.advance(5)
        gate.set()
        await answer
        gate.clear()
        answer = ask(conn, session)  # and none in its next turn either
        await clock.advance(5)
        gate.set()
        await answer
    assert client.ours() == []
    assert client.shown()[0] == own[0]


async def test_an_agent_that_says_it_shows_its_own_think_cards_gets_none():
    class OwnSpinner(SlowAgent):
        def initialize_meta(self) -> dict[str, Any]:
            return {META_KEY: {"thinkCards": True}}

    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, OwnSpinner(gate=gate)), client) as conn:
        answer = ask(conn, await new_session(conn))
        await clock.advance(5)
        gate.set()
        await answer
    assert client.shown() == ["msg"]


# ---------------------------------------------------------------------- sessions and order


async def test_two_concurrent_sessions_each_get_their_own_card():
    clock, gate = ManualClock(), asyncio.Event()
    client = Recorder()
    async with sdk_served(wrapped_on(clock, SlowAgent(gate=gate)), client) as conn:
        first, second = await new_session(conn), await new_session(conn)
        answers = [ask(conn, first), ask(conn, second)]
        await clock.advance(0.6)
        await conn.cancel(session_id=first)
        await clock.advance(1.0)
        assert client.shown(first) == ["think:start", "think:failed"]
        assert client.shown(second) == ["think:start", "think:in_progress"], "the other turn goes on"
        gate.set()
        assert [(await a).stop_reason for a in answers] == ["cancelled", "end_turn"]
    assert client.shown(second) == ["think:start", "think:in_progress", "think:completed", "msg"]
    first_card, second_card = {u.tool_call_id for u in client.ours() if isinstance(u, ToolCallStart)}
    assert first_card != second_card


class Chatty(SlowAgent):
    """Updates with pauses of every length around the think timer, from several tasks at once."""

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        from acp.schema import PromptResponse

        async def talk(lane: int) -> None:
            for i in range(40):
                await asyncio.sleep(0.0007 * ((i * 7 + lane) % 5))
                await self._say(session_id, f"{lane}:{i} ")

        await asyncio.gather(*(talk(lane) for lane in range(3)))
        return PromptResponse(stop_reason="end_turn")


async def test_our_cards_never_interleave_with_the_agents_updates_under_a_busy_timer():
    """Real time, a think_after and heartbeat shorter than the agent's pauses: many cards open and
    close between its updates. Each card opens before it beats, closes once, never after its close,
    no agent update arrives while one is open, and the agent's own updates keep their order."""
    client = Recorder()
    wrapped = with_progress(Chatty(), think_after=0.001, heartbeat=0.0005, summary=None)
    async with sdk_served(wrapped, client) as conn:
        session = await new_session(conn)
        await conn.prompt(session_id=session, prompt=[text_block("go")])
        after = len(client.seen)
        await asyncio.sleep(0.05)
        assert len(client.seen) == after, "nothing after the answer"
    open_card: str | None = None
    closed: set[str] = set()
    for item in client.seen:
        update = item.update
        card = getattr(update, "tool_call_id", "")
        if not card.startswith(OURS):
            assert open_card is None, "the agent's update came while our card was open"
            continue
        assert card not in closed, "an update after the card's close"
        if isinstance(update, ToolCallStart):
            assert open_card is None, "two of our cards at once"
            open_card = card
        else:
            assert card == open_card, "an update for a card that is not open"
            if update.status in ("completed", "failed"):
                closed.add(card)
                open_card = None
    assert open_card is None
    said = [u["content"]["text"] for _s, u, _k in client.theirs()]
    for lane in range(3):
        mine = [t for t in said if t.startswith(f"{lane}:")]
        assert mine == [f"{lane}:{i} " for i in range(40)]
    assert closed, "the timer did fire between the agent's updates"


async def test_with_summaries_on_the_cards_heartbeats_carry_the_sentence_redacted():
    from acp_adapter.summary import SummaryFactory

    async def sentence(request: Any) -> str:
        return f"Checking the deploy key {SECRET}."

    client = Recorder()
    summaries = SummaryFactory(sentence, interval=0.025)
    wrapped = with_progress(SlowAgent(0.4), think_after=0.025, heartbeat=0.05, summary=summaries)
    async with sdk_served(wrapped, client) as conn:
        await conn.prompt(session_id=await new_session(conn), prompt=[text_block("deploy it")])
    summarised = [
        u
        for u in client.ours()
        if isinstance(u, ToolCallProgress) and (u.field_meta or {})[META_KEY].get("summary")
    ]
    assert summarised, client.shown()
    assert "Checking the deploy key" in summarised[-1].content[0].content.text
    assert SECRET not in str([u.model_dump() for u in client.ours()]), "what we add is redacted"
    assert client.shown()[-2:] == ["think:completed", "msg"]


class Asking(SlowAgent):
    """Asks the person first (no spinner of ours meanwhile), then thinks, then answers in the
    deprecated one-model call style (``conn.sessionUpdate(SessionNotification)``)."""

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        from acp import update_agent_message
        from acp.schema import PermissionOption, PromptResponse, SessionNotification, ToolCallUpdate

        option = PermissionOption(option_id="yes", name="Allow", kind="allow_once")
        tool_call = ToolCallUpdate(tool_call_id="ask-1", title="Delete the build folder")
        answer = await self.conn.request_permission(
            session_id=session_id, tool_call=tool_call, options=[option]
        )
        self.answers.append(answer.outcome.outcome)
        await self._wait(session_id)
        with pytest.warns(DeprecationWarning):
            legacy = self.conn.sessionUpdate(
                SessionNotification(session_id=session_id, update=update_agent_message(text_block("ok")))
            )
        await legacy
        return PromptResponse(stop_reason="end_turn")


async def test_no_card_while_the_agent_waits_for_the_person_and_the_legacy_call_style_is_watched_too():
    from acp.schema import AllowedOutcome, RequestPermissionResponse

    released = asyncio.Event()

    class Person(Recorder):
        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            await released.wait()
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="yes"))

    clock, gate = ManualClock(), asyncio.Event()
    agent = Asking(gate=gate)
    agent.answers = []
    client = Person()
    async with sdk_served(wrapped_on(clock, agent), client) as conn:
        answer = ask(conn, await new_session(conn))
        await clock.advance(5)  # the person takes their time: that is not the model thinking
        assert client.shown() == []
        released.set()
        await clock.advance(0.5)  # answered; now the agent is silent: its model thinks
        assert client.shown() == ["think:start"]
        gate.set()
        await answer
    assert agent.answers == ["selected"]
    assert client.shown() == ["think:start", "think:completed", "msg"], (
        "closed before the legacy-style update"
    )


async def test_attributes_of_the_connection_and_of_the_agent_pass_through():
    from acp_adapter.frontends.ordered_lane import OrderedLane
    from acp_adapter.frontends.watched_client import WatchedClient

    class Conn:
        custom = "the connection's own"

    client = WatchedClient(Conn(), lambda: None, OrderedLane())  # type: ignore[arg-type, return-value]
    assert client.custom == "the connection's own"
    agent = SlowAgent()
    agent.something_new = lambda: "the agent's own"
    wrapped = with_progress(agent, summary=None)
    assert wrapped.something_new() == "the agent's own" and wrapped.wrapped is agent
    with pytest.raises(AttributeError):
        wrapped.load_session  # noqa: B018 - the router must find no handler the agent lacks
