"""Tool progress is held while the client has unread bytes, so a newer value replaces it in the
outbox instead of queuing behind old ones in the transport and the pipe. Anything else queued
behind held progress (a start, a terminal update, text, a flush) releases everything in order;
cards are never merged; without a probe nothing is ever held. The pump's decisions are witnessed
by counting the probe's calls, never by sleeping a fixed time."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from acp import update_agent_message_text
from acp.agent.connection import AgentSideConnection

from acp_adapter.agent import outbox as outbox_module
from acp_adapter.agent.outbox import _HoldPoll
from acp_adapter.events import SessionStream, UpdateOutbox
from acp_adapter.protocol import JsonRpcStream, StreamLimits
from acp_adapter.protocol.backlog import peer_backlog_probe
from acp_adapter.protocol.stdio import ProtocolFds, open_protocol_streams

pytestmark = pytest.mark.anyio

FULL = 5000  # bytes the client has not read: well above the hold threshold


class FakeBacklog:
    """A probe whose answer the test sets; counts how often the pump asked."""

    def __init__(self, unread: int | None = FULL) -> None:
        self.unread = unread
        self.calls = 0

    def __call__(self) -> int | None:
        self.calls += 1
        return self.unread


class Client:
    """Records every update the outbox sends, in order."""

    def __init__(self) -> None:
        self.got: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.got.append(update)

    def seen(self) -> list[tuple[str, Any]]:
        """(card or kind, progress value or status) of each update."""
        out: list[tuple[str, Any]] = []
        for update in self.got:
            progress = ((getattr(update, "field_meta", None) or {}).get("acpProgress") or {}).get("progress")
            if progress is not None:
                out.append((update.tool_call_id, progress["value"]))
            elif hasattr(update, "tool_call_id"):
                out.append((update.tool_call_id, update.status))
            else:
                out.append((update.session_update, None))
        return out

    def values(self, card: str) -> list[Any]:
        return [value for cid, value in self.seen() if cid == card and isinstance(value, int)]


async def until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop run until ``condition`` holds (a bound for a stuck test, not a timing)."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.001)


async def held_for_a_while(probe: FakeBacklog) -> None:
    """The pump asked the probe three more times: it decided to hold at least twice since now."""
    target = probe.calls + 3
    await until(lambda: probe.calls >= target, "the pump to re-check the backlog")


def open_card(probe: FakeBacklog | None, *cards: str) -> tuple[Client, UpdateOutbox, SessionStream]:
    client = Client()
    outbox = UpdateOutbox(client, asyncio.get_running_loop(), backlog=probe)
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    for card in cards:
        stream.tool_start(card, f"Scanning {card}", "search")
    return client, outbox, stream


async def test_progress_waits_while_the_client_has_unread_bytes_and_the_newest_goes_out_after():
    probe = FakeBacklog()
    client, outbox, stream = open_card(probe, "a")
    await until(lambda: len(client.got) == 1, "the start (never held)")
    for i in range(100):
        stream.tool_progress("a", value=i, total=100)
    await held_for_a_while(probe)
    assert client.seen() == [("a", "in_progress")], "held while the client has 5000 bytes unread"
    assert outbox.replaced == 99 and outbox.holds == 1
    probe.unread = outbox_module.HOLD_ABOVE + 1
    await held_for_a_while(probe)
    assert client.values("a") == [], "still above the threshold"
    probe.unread = outbox_module.HOLD_ABOVE  # the client read (nearly) everything
    await until(lambda: client.values("a") == [99], "the newest value")
    stream.tool_progress("a", value=100, total=100)
    await until(lambda: client.values("a") == [99, 100], "the next value, at once while the client keeps up")
    await outbox.aclose()


@pytest.mark.parametrize("behind", ["start", "terminal", "text", "flush"])
async def test_anything_else_queued_behind_held_progress_releases_everything_in_order(behind: str):
    probe = FakeBacklog()  # the client never reads during this test
    client, outbox, stream = open_card(probe, "a")
    await until(lambda: len(client.got) == 1, "the start")
    for i in range(10):
        stream.tool_progress("a", value=i)
    await held_for_a_while(probe)
    assert client.values("a") == []
    if behind == "start":
        stream.tool_start("b", "Scanning b", "search")
        expected = ("b", "in_progress")
    elif behind == "terminal":
        stream.tool_finish("a", result_text="done")
        expected = ("a", "completed")
    elif behind == "text":
        outbox.submit("s", update_agent_message_text("found 3"))
        expected = ("agent_message_chunk", None)
    else:
        # a prompt's answer waits for flush(): it must not wait for a slow reader
        await asyncio.wait_for(outbox.flush(), 5)
        expected = ("a", 9)
    await until(lambda: client.seen()[-1] == expected, f"the {behind} after the held progress")
    assert client.seen() == [("a", "in_progress"), ("a", 9), expected][: 3 if behind != "flush" else 2]
    if behind in ("start", "text", "flush"):
        # progress queued after the release is held again: the client still has not read
        stream.tool_progress("a", value=10)
        await held_for_a_while(probe)
        assert client.values("a") == [9]
    await outbox.aclose()
    assert client.values("a")[-1] == (9 if behind == "terminal" else 10), "closing delivers what is held"


async def test_held_progress_of_different_cards_is_never_merged_and_keeps_its_order():
    probe = FakeBacklog()
    client, outbox, stream = open_card(probe, "a", "b")
    await until(lambda: len(client.got) == 2, "the starts")
    for i in range(20):
        stream.tool_progress("b", value=100 + i)
        stream.tool_progress("a", value=i)
    await held_for_a_while(probe)
    assert len(client.got) == 2
    probe.unread = 0
    await until(lambda: len(client.got) == 4, "both cards' newest values")
    assert client.seen()[2:] == [("b", 119), ("a", 19)], "each card's own newest, in first-report order"
    await outbox.aclose()


async def test_without_a_probe_or_with_an_unknown_backlog_nothing_is_held():
    for probe in (None, FakeBacklog(unread=None)):
        client, outbox, stream = open_card(probe, "a")
        stream.tool_progress("a", value=1)
        await until(lambda client=client: client.values("a") == [1], "the value, unheld")  # type: ignore[misc]
        assert outbox.holds == 0
        await outbox.aclose()


async def test_closing_an_outbox_that_holds_progress_delivers_it_and_stops_the_pump():
    probe = FakeBacklog()
    client, outbox, stream = open_card(probe, "a")
    for i in range(5):
        stream.tool_progress("a", value=i)
    await held_for_a_while(probe)
    await asyncio.wait_for(outbox.aclose(), 5)
    assert client.seen() == [("a", "in_progress"), ("a", 4)]
    assert outbox._task is None
    calls = probe.calls
    await asyncio.sleep(0.005)
    assert probe.calls == calls, "a stopped pump asks nothing"


def test_the_re_check_backs_off_only_while_the_clients_backlog_stands_still():
    poll = _HoldPoll()
    assert poll.next_delay(900, now=10.0) == 0.0, "first after one turn of the loop"
    assert poll.next_delay(900, now=10.0) == outbox_module.HOLD_POLL
    assert poll.next_delay(900, now=10.040) == pytest.approx(0.010), "a quarter of 40 ms unchanged"
    assert poll.next_delay(900, now=11.0) == outbox_module.HOLD_POLL_MAX, "a client that stopped reading"
    assert poll.next_delay(400, now=11.001) == outbox_module.HOLD_POLL, "it read: back to every 1 ms"
    poll.reset()
    assert poll.next_delay(400, now=12.0) == 0.0


def read_slowly(source: int, interval: float, lines: list[bytes]) -> None:
    """An editor's reader: a buffered line reader that pulls from the pipe only when it needs the
    next line (like Rust's ``BufReader::read_line``), taking ``interval`` per line."""
    with os.fdopen(source, "rb", buffering=8192) as pipe:
        for line in iter(pipe.readline, b""):
            lines.append(line)
            if b'"completed"' in line:
                return
            time.sleep(interval)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the probe measures on Linux only")
async def test_a_slow_reader_of_a_real_pipe_gets_fresh_values_then_the_last_value_and_the_terminal():
    out_read, out_write = os.pipe()  # the agent's stdout, as serve opens it
    in_read, in_write = os.pipe()
    reader, writer = await open_protocol_streams(ProtocolFds(in_read, out_write))
    conn = AgentSideConnection(_NullAgent(), JsonRpcStream(reader, writer, StreamLimits()), listening=False)
    outbox = UpdateOutbox(conn, asyncio.get_running_loop(), backlog=peer_backlog_probe(writer.transport))
    stream = SessionStream("s", outbox)
    stream.begin_turn()
    stream.tool_start("c", "Scanning", "search")
    lines: list[bytes] = []
    client = threading.Thread(target=read_slowly, args=(out_read, 0.002, lines))
    client.start()
    reports = 3000
    read_when_done: list[int] = []

    def tool() -> None:
        for i in range(reports):
            stream.tool_progress("c", value=i, total=reports)
            if i % 100 == 99:
                time.sleep(0.001)  # a tool that also works between reports
        read_when_done.append(len(lines))
        stream.tool_finish("c", result_text="done")

    await asyncio.to_thread(tool)
    await outbox.flush()
    await asyncio.to_thread(client.join, 10)
    assert not client.is_alive()
    updates = [json.loads(line)["params"]["update"] for line in lines]
    progress = [(u.get("_meta") or {}).get("acpProgress", {}).get("progress") for u in updates]
    values = [p["value"] for p in progress if p is not None]
    assert values[-1] == reports - 1 and updates[-1]["status"] == "completed", "last value, then terminal"
    assert values == sorted(set(values)), "only ever newer values"
    assert len(values) < reports and outbox.replaced == reports - len(values), "superseded ones dropped"
    # what was still on its way when the tool ended: at most a line in the reader's buffer, one in
    # the pipe, the held newest value and the terminal (without holding: hundreds of old values)
    assert len(lines) - read_when_done[0] <= 4, (len(lines), read_when_done)
    writer.close()
    os.close(in_write)
    await outbox.aclose()
    await conn.close()


class _NullAgent:
    def on_connect(self, conn: Any) -> None:
        pass


def _task_status(message: str) -> str:
    """The status line an MCP task's card gets (what the MCP tools pass as a message-only report)."""
    import mcp_types as types

    from acp_adapter.mcp.tasks import status_line

    now = "2026-01-01T00:00:00Z"
    task = types.Task(
        task_id="t1", status="working", status_message=message, created_at=now, last_updated_at=now, ttl=None
    )
    return status_line(task)


PHASE = _task_status("phase 2 of 3")


@pytest.mark.parametrize(
    ("reports", "shown"),
    [
        # an MCP task: a progress notification, then a status change before it went out
        ([(3, 10, None), (None, None, PHASE)], (3, 10, PHASE)),
        ([(3, 10, "reading a.txt"), (None, None, PHASE)], (3, 10, PHASE)),
        # the status first, then numbers without a message of their own: the status line stays
        ([(None, None, PHASE), (4, 10, None)], (4, 10, PHASE)),
        ([(2, 10, None), (None, None, PHASE), (4, 10, None)], (4, 10, PHASE)),
        # newer text of either kind replaces the older text
        ([(None, None, PHASE), (5, 10, "reading b.txt")], (5, 10, "reading b.txt")),
        ([(None, None, "task working"), (None, None, PHASE)], (None, None, PHASE)),
        # numbers alone after numbers: the newest numbers, no stale message
        ([(1, 10, "reading a.txt"), (2, 10, None)], (2, 10, None)),
    ],
)
async def test_a_held_status_line_and_held_numbers_of_one_card_each_keep_their_latest(
    reports: list[tuple[Any, Any, Any]], shown: tuple[Any, Any, Any]
) -> None:
    """A card shows its numbers (the bar) and a status line side by side; the one queued progress
    update of the card stands for every report held meanwhile, and keeps the latest of each kind."""
    from acp_adapter.protocol.cards import CardAccumulator

    probe = FakeBacklog()
    client, outbox, stream = open_card(probe, "a")
    await until(lambda: len(client.got) == 1, "the start")
    for value, total, message in reports:
        stream.tool_progress("a", value=value, total=total, message=message)
    await held_for_a_while(probe)
    assert len(client.got) == 1 and outbox.replaced == len(reports) - 1
    probe.unread = 0
    await until(lambda: len(client.got) == 2, "the card's one progress update")
    value, total, message = shown
    progress = client.got[1].field_meta["acpProgress"]["progress"]
    assert (progress.get("value"), progress.get("total"), progress.get("message")) == shown
    cards = CardAccumulator()
    for update in client.got:
        cards.apply(update, 0.0)
    card = cards.cards["a"]
    assert card.progress == ((float(value), float(total)) if value is not None else None)
    assert card.detail == (message if message is not None else f"Progress: {value}/{total}")
    await outbox.aclose()
