"""Telegram under attack: the bridge against the strict fake Bot API, in process.

Group chats with several members, other people's button presses, forged callback data, updates
that are not prompts, strangers in bulk, and a Bot API that rate-limits, errors and times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import pytest

pytest.importorskip("telegram")

from acp_adapter.config import TelegramSettings
from acp_adapter.frontends.bridges.config import BridgeInstance, new_instance
from acp_adapter.frontends.bridges.options import BridgeOptions
from acp_adapter.frontends.bridges.platforms.telegram import (
    EXPIRED,
    REFUSAL,
    REFUSAL_USER,
    STOPPED_VERDICT,
    RefusalLimiter,
    TelegramSetupError,
    TokenScrubber,
    run_telegram,
)
from acp_adapter.frontends.bridges.retry import RetryPolicy
from acp_adapter.frontends.bridges.runner import BridgeRunner
from acp_adapter.safety.logging import RedactingFormatter
from acp_adapter.summary.clock import ManualClock
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.fake_telegram import FakeTelegram, StoredMessage, telegram_bridge, until
from tests.helpers.shared_servers import use_in_process_agents

pytestmark = pytest.mark.anyio

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
GROUP = -1001234
ALICE, BOB, CAROL = 1001, 1002, 1003
CHANNEL = -1009999
FAST = TelegramSettings(retry_backoff=0.05, http_timeout=1.0, stop_grace=2.0)
#: the logger the bridge says what it refused or ignored on
BRIDGE_LOG = "acp_progress.bridges.telegram"


@pytest.fixture(autouse=True)
def quick_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bridges' agents think 0.05 s a step, not the suite's default 0.3 s: nothing here is
    timed against the model (what is tested is the Bot API side), and every turn waits for it.
    And they run in this process: no test here is about the agent's process (its crash, its
    signals, its pipe) — tests/bridges/test_bridge_telegram_process.py and test_bridge_restart.py are."""
    from tests.helpers import acp_agent

    def quick(**overrides: str) -> dict[str, str]:
        return agent_env(**{"ACP_PROGRESS_EMBEDDED_DELAY": "0.05", **overrides})

    monkeypatch.setattr(acp_agent, "agent_env", quick)
    use_in_process_agents(monkeypatch)


@pytest.fixture
def fake() -> Any:
    server = FakeTelegram(TOKEN).start()
    server.group(GROUP)
    server.names.update({ALICE: "Alice", BOB: "Bob", CAROL: "Carol"})
    yield server
    server.stop()


def bridge(
    fake: FakeTelegram,
    instance: BridgeInstance,
    settings: TelegramSettings = FAST,
    policy: RetryPolicy | None = None,
    **runner_kw: Any,
) -> contextlib.AbstractAsyncContextManager[BridgeRunner]:
    return telegram_bridge(
        fake, instance, token=TOKEN, window=0.2, settings=settings, policy=policy, **runner_kw
    )


def group(**kw: Any) -> BridgeInstance:
    progress = kw.pop("progress", {"tool_progress": "all"})
    return new_instance("tg", "telegram", chat_ids=[GROUP], cwd=str(ROOT), progress=progress, **kw)


def question(fake: FakeTelegram, chat: int = GROUP) -> StoredMessage | None:
    return next((m for m in fake.bot_messages(chat) if m.reply_markup), None)


def buttons(q: StoredMessage) -> dict[str, str]:
    return {b["text"]: b["callback_data"] for b in q.reply_markup["inline_keyboard"][0]}


def shown(fake: FakeTelegram, prefix: str, chat: int = GROUP) -> bool:
    return any(t.startswith(prefix) for t in fake.chat_view(chat))


async def ask(fake: FakeTelegram, who: int = ALICE) -> StoredMessage:
    fake.user_says(GROUP, "run echo bridged", user_id=who)
    await until(lambda: question(fake) is not None, what="permission question")
    q = question(fake)
    assert q is not None
    return q


# ----------------------------------------------------------------------------- who answers


async def test_another_members_press_is_refused_and_nothing_runs(fake: FakeTelegram) -> None:
    """The callback checks the person, not only the chat: Bob's Allow never runs Alice's command."""
    async with bridge(fake, group()):
        q = await ask(fake)
        before = q.text
        qid = fake.press(GROUP, q.message_id, buttons(q)["Allow once"], user_id=BOB)
        await until(lambda: bool(fake.answers_to(qid)), what="Bob's answer")
        assert fake.answers_to(qid) == ["Only Alice can answer this."]
        await asyncio.sleep(0.5)
        assert fake.messages[(GROUP, q.message_id)].text == before  # still open, buttons and all
        assert fake.messages[(GROUP, q.message_id)].reply_markup is not None
        assert not shown(fake, "✅ Running echo bridged")
        fake.press(GROUP, q.message_id, buttons(q)["Deny"], user_id=ALICE)
        await until(lambda: shown(fake, "❌ Running echo bridged"), what="denied line")
    assert fake.messages[(GROUP, q.message_id)].text.endswith("❌ denied by Alice")
    assert fake.messages[(GROUP, q.message_id)].reply_markup is None
    assert not shown(fake, "✅ Running echo bridged")
    assert not any("bridged\n" in t or t.strip() == "bridged" for t in fake.chat_view(GROUP))


@pytest.mark.e2e
async def test_an_approver_can_answer_someone_elses_question(fake: FakeTelegram) -> None:
    async with bridge(fake, group(approvers=[CAROL])):
        q = await ask(fake)
        qid = fake.press(GROUP, q.message_id, buttons(q)["Allow once"], user_id=CAROL)
        await until(lambda: shown(fake, "✅ Running echo bridged"), what="allowed line")
        await until(lambda: bool(fake.answers_to(qid)), what="Carol's answer")
    assert fake.answers_to(qid) == ["Allowed once"]
    final = fake.messages[(GROUP, q.message_id)]
    assert final.text == "🔐 Allow Running echo bridged? — ✅ allowed once by Carol"
    assert final.reply_markup is None


async def test_bobs_refusal_names_the_approvers_too(fake: FakeTelegram) -> None:
    async with bridge(fake, group(approvers=[CAROL])):
        q = await ask(fake)
        qid = fake.press(GROUP, q.message_id, buttons(q)["Allow once"], user_id=BOB)
        await until(lambda: bool(fake.answers_to(qid)), what="Bob's answer")
        assert fake.answers_to(qid) == ["Only Alice or an approver can answer this."]
        fake.press(GROUP, q.message_id, buttons(q)["Deny"], user_id=ALICE)
        await until(lambda: shown(fake, "❌ Running echo bridged"), what="denied line")


async def test_stale_and_forged_callback_data_do_nothing(fake: FakeTelegram) -> None:
    async with bridge(fake, group()):
        q = await ask(fake)
        data = buttons(q)
        assert all(len(d.encode()) <= 64 for d in data.values())
        nonce = data["Allow once"].split(":")[1]
        await until(lambda: shown(fake, "💻 Running echo bridged"), what="the running line")
        progress = next(m for m in fake.bot_messages(GROUP) if m.text.startswith("💻"))
        forged = [
            (f"perm:{nonce}:always", q.message_id),  # a choice the bridge never offers
            ("perm:AAAAAAAAAAAAAAAA:once", q.message_id),  # a nonce nobody issued
            ("perm:x", q.message_id),
            ("once", q.message_id),
            (data["Allow once"], progress.message_id),  # the right nonce, pressed under another message
        ]
        ids = [fake.press(GROUP, mid, d, user_id=ALICE, on=mid) for d, mid in forged]
        await until(lambda: all(fake.answers_to(i) for i in ids), what="answers to forged presses")
        assert [fake.answers_to(i) for i in ids] == [[EXPIRED]] * len(forged)
        await asyncio.sleep(0.3)
        assert not shown(fake, "✅ Running echo bridged")
        assert fake.messages[(GROUP, q.message_id)].reply_markup is not None
        fake.press(GROUP, q.message_id, data["Deny"], user_id=ALICE)
        await until(lambda: shown(fake, "❌ Running echo bridged"), what="denied")
        stale = fake.press(GROUP, q.message_id, data["Allow once"], user_id=ALICE)  # after the answer
        await until(lambda: bool(fake.answers_to(stale)), what="answer to the stale press")
        assert fake.answers_to(stale) == [EXPIRED]
        await asyncio.sleep(0.3)
    assert not shown(fake, "✅ Running echo bridged")
    assert fake.messages[(GROUP, q.message_id)].text.endswith("❌ denied by Alice")


async def test_a_second_question_is_not_answered_by_the_first_ones_buttons(fake: FakeTelegram) -> None:
    """Each answer is bound to its own request: an old question's Allow is not a new one's."""
    async with bridge(fake, group(), permission_timeout=0.6):
        q1 = await ask(fake)
        old_allow = buttons(q1)["Allow once"]
        await until(lambda: fake.messages[(GROUP, q1.message_id)].reply_markup is None, what="timeout")
        assert fake.messages[(GROUP, q1.message_id)].text.endswith("⌛ denied: nobody answered within 0.6s")
        await until(lambda: shown(fake, "❌ Running echo bridged"), what="first turn denied")
        fake.user_says(GROUP, "run echo second", user_id=ALICE)

        def second() -> StoredMessage | None:
            return next((m for m in fake.bot_messages(GROUP) if m.reply_markup and "second" in m.text), None)

        await until(lambda: second() is not None, what="second question")
        q2 = second()
        assert q2 is not None
        old = fake.press(GROUP, q1.message_id, old_allow, user_id=ALICE)
        await until(lambda: bool(fake.answers_to(old)), what="old press answered")
        assert fake.answers_to(old) == [EXPIRED]
        # no need to wait out its time-out too (the first one's is the one asserted): Deny ends it,
        # or it has timed out already on a slow machine, and the line is ❌ either way
        fake.press(GROUP, q2.message_id, buttons(q2)["Deny"], user_id=ALICE)
        await until(lambda: shown(fake, "❌ Running echo second"), within=10, what="second denied")
    assert not shown(fake, "✅ Running echo")


# -------------------------------------------------------------------------- who may prompt


async def test_edited_messages_and_channel_posts_are_not_prompts(fake: FakeTelegram) -> None:
    fake.ignore_allowed_updates = True  # a server (or proxy) that sends them anyway
    instance = new_instance("tg", "telegram", chat_ids=[GROUP, CHANNEL], cwd=str(ROOT))
    async with bridge(fake, instance) as runner:
        mid = fake.user_says(GROUP, "/start", user_id=ALICE)
        await until(lambda: len(fake.bot_messages(GROUP)) == 1, what="greeting")
        fake.edit_by_user(GROUP, mid, "search for TODO", user_id=ALICE)
        fake.channel_post(CHANNEL, "search for TODO")
        last = fake.last_update_id
        # the bridge has taken both (it polls past them), and had the time to start a turn
        await until(lambda: fake.taken(last), what="both updates taken")
        await asyncio.sleep(0.5)
        assert runner.agent.current is None and runner.route(GROUP) is None and runner.route(CHANNEL) is None
    assert len(fake.calls_of("sendMessage")) == 1  # only the greeting
    assert fake.bot_messages(CHANNEL) == []
    polls = [c.params.get("allowed_updates") for c in fake.calls_of("getUpdates")]
    assert polls[0] == ["message", "callback_query"]


async def test_user_id_restricts_who_may_prompt_in_a_group(fake: FakeTelegram) -> None:
    async with bridge(fake, group(user_ids=[ALICE], progress=None)) as runner:
        fake.user_says(GROUP, "search for TODO", user_id=BOB)
        await until(lambda: shown(fake, REFUSAL_USER), what="refusal to Bob")
        await asyncio.sleep(0.3)
        assert runner.route(GROUP) is None
        fake.user_says(GROUP, "search for TODO", user_id=ALICE)
        await until(lambda: shown(fake, "I searched the workspace"), what="Alice's answer")


async def test_refusals_to_strangers_are_rate_limited(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    """Refusals to strangers are throttled: 300 strangers do not get 300 refusals."""
    caplog.set_level(logging.DEBUG, logger=BRIDGE_LOG)
    settings = TelegramSettings(refusals_per_hour=20, refusal_memory=100, http_timeout=2.0)
    instance = new_instance("tg", "telegram", chat_ids=[GROUP], cwd=str(ROOT))
    lone = 5000
    async with bridge(fake, instance, settings) as runner:
        for _ in range(30):
            fake.user_says(lone, "hello?")
        await until(lambda: len(fake.calls_of("sendMessage")) == 1, what="the lone stranger's refusal")
        for n in range(300):
            fake.user_says(10_000 + n, "let me in")
        # every one of the 330 messages was judged (refused, or ignored as already refused): no
        # refusal is decided after this, and the ones decided reach the fake
        await until(lambda: len(judged(caplog)) == 330, within=20, what="every stranger judged")
        decided = sum(r.getMessage().startswith("refused") for r in judged(caplog))
        assert 1 < decided <= 20
        await until(lambda: len(fake.calls_of("sendMessage")) == decided, what="the refusals sent")
        await asyncio.sleep(0.2)  # and nothing else follows them
        assert runner.agent.current is None
    refusals = fake.calls_of("sendMessage")
    assert 1 < len(refusals) <= 20
    assert all(c.params["text"] == REFUSAL for c in refusals)
    assert fake.chat_view(lone).count(REFUSAL) == 1


def judged(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The bridge's log lines about strangers' messages: one per message, refused or ignored."""
    return [
        r
        for r in caplog.records
        if r.name == BRIDGE_LOG and r.getMessage().startswith(("refused a message", "ignored a message"))
    ]


def test_the_refusal_limiter_is_bounded_in_memory_and_time() -> None:
    now = [0.0]
    limiter = RefusalLimiter(interval=3600, per_hour=50, memory=100, clock=lambda: now[0])
    sent = sum(limiter.allow(n) for n in range(10_000))
    assert sent == 50 and len(limiter) <= 100
    assert not limiter.allow(0)  # once per chat per interval
    now[0] += 3600
    assert limiter.allow(0)  # an hour later, one more
    for n in range(10_000):
        now[0] += 1.0
        limiter.allow(("chat", n))
    assert len(limiter) <= 100


# ------------------------------------------------------------------------ flood and faults


async def test_a_retry_after_over_the_cap_drops_that_delivery_and_does_not_block_the_chat(
    fake: FakeTelegram,
) -> None:
    """A retry_after of 3600 is not slept in full (up to 8 times) while the chat stands still."""
    fake.rate_limit("sendMessage", retry_after=3600, times=1)
    instance = new_instance("tg", "telegram", chat_ids=[GROUP], cwd=str(ROOT))
    t0 = time.monotonic()
    async with bridge(fake, instance) as runner:
        fake.user_says(GROUP, "search for TODO", user_id=ALICE)
        await until(lambda: shown(fake, "I searched the workspace"), within=15, what="answer")
        took = time.monotonic() - t0
        assert runner.metrics().delivery_dropped_by_reason == {"retry_after_over_cap": 1}
    assert took < 10
    assert next(c.status for c in fake.calls if c.method == "sendMessage") == 429
    assert shown(fake, "✅ Searching for TODO")  # the dropped progress post came back at the next flush


async def test_a_retry_after_under_the_cap_is_waited_and_nothing_is_lost(fake: FakeTelegram) -> None:
    """On a manual clock: the retry goes out when the clock passed ``retry_after``, never before."""
    fake.rate_limit("sendMessage", retry_after=1, times=1)
    settings = TelegramSettings(retry_after_cap=2.0, http_timeout=2.0)
    clock = ManualClock()
    policy = RetryPolicy(retry_after_cap=2.0, clock=clock)
    instance = new_instance("tg", "telegram", chat_ids=[GROUP], cwd=str(ROOT))
    sends = lambda: [c for c in fake.calls if c.method == "sendMessage"]  # noqa: E731
    async with bridge(fake, instance, settings, policy) as runner:
        fake.user_says(GROUP, "search for TODO", user_id=ALICE)
        await until(lambda: bool(sends()), what="the rate-limited post")
        await clock.advance(0.99)
        assert [c.status for c in sends()] == [429]  # still waiting
        await clock.advance(0.01)
        await until(lambda: shown(fake, "I searched the workspace"), what="answer")
        assert runner.metrics().delivery_dropped_by_reason == {}
    limited, retried = sends()[:2]
    assert limited.status == 429 and retried.status == 200
    assert retried.params["text"] == limited.params["text"]


async def test_a_retry_after_on_the_long_poll_waits_at_most_the_cap(fake: FakeTelegram) -> None:
    """A retry_after on getUpdates waits at most the cap, not min(retry_after, 30 s) deaf to the cap
    and to stopping."""
    clock = ManualClock()
    policy = RetryPolicy(retry_after_cap=5.0, clock=clock)

    def polls() -> list[int]:
        return [c.status for c in fake.calls if c.method == "getUpdates"]

    fake.max_poll_seconds = 0.05  # the 429 answers the poll after the one in flight: not 1 s later
    async with bridge(fake, group(), FAST, policy):
        fake.rate_limit("getUpdates", retry_after=3600, times=1)
        await until(lambda: 429 in polls(), what="the 429")
        # the bridge's wait must have begun before the clock moves (on a loaded machine it may
        # start after the 429 is seen; the cap is then counted from the moment it did)
        await until(lambda: clock.pending > 0, what="the capped wait to begin")
        await clock.advance(4.9)
        await asyncio.sleep(0.2)
        assert polls()[-1] == 429  # waiting the cap, not polling
        await clock.advance(0.1)
        await until(lambda: polls()[-1] == 200, what="polling again after the cap")


@pytest.mark.parametrize("fault", ["json500", "html500", "malformed", "timeout"])
async def test_the_answer_survives_one_bad_response(fake: FakeTelegram, fault: str) -> None:
    """A 5xx, an HTML 500 page, malformed JSON or a timeout on sendMessage does not lose the answer."""
    fake.hang_seconds = 1.5  # past the client's 1 s timeout
    fake.fault("sendMessage", fault, times=1)
    instance = group(progress={"tool_progress": "off", "reactions": False, "typing": False})
    async with bridge(fake, instance):
        fake.user_says(GROUP, "search for TODO", user_id=ALICE)
        await until(lambda: shown(fake, "I searched the workspace"), within=20, what="answer")
    sends = [c for c in fake.calls if c.method == "sendMessage"]
    assert sends[0].fault == fault and sends[1].status == 200
    assert sends[1].params["text"] == sends[0].params["text"]
    assert sum(t.startswith("I searched the workspace") for t in fake.chat_view(GROUP)) == 1


async def test_a_persistent_fault_is_bounded_and_the_bridge_keeps_serving(fake: FakeTelegram) -> None:
    fake.fault("sendMessage", "json500", times=3)  # the answer and every retry of it
    settings = TelegramSettings(answer_retries=2, retry_backoff=0.05, http_timeout=1.0)
    instance = group(progress={"tool_progress": "off", "reactions": False, "typing": False})
    async with bridge(fake, instance, settings) as runner:
        fake.user_says(GROUP, "search for TODO", user_id=ALICE)
        await until(lambda: len([c for c in fake.calls if c.fault]) == 3, what="three attempts")
        await until(lambda: runner.delivery_stats().failures >= 1, what="the failure counted")
        fake.user_says(GROUP, "read README.md", user_id=ALICE)
        await until(lambda: shown(fake, "`README.md` has"), what="the next answer")


# ------------------------------------------------------------------------------- stopping


async def test_stopping_with_a_question_pending(fake: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    """Nobody answered, so neither the question ("denied") nor the chat ("Permission denied by the
    user") says somebody did; the running line does not stay ``💻 Running …``; the last edits do not
    fail with ``RuntimeError('This HTTPXRequest is not initialized!')``."""
    caplog.set_level(logging.INFO)
    runner = BridgeRunner(
        group(), BridgeOptions(agent_env=agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.05"), window=0.2)
    )
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_telegram(
            group(),
            runner=runner,
            token=TOKEN,
            api_url=fake.api_url,
            stop=stop,
            poll_timeout=5,
            settings=FAST,
        )
    )
    await until(lambda: bool(fake.calls_of("getUpdates")), what="polling")
    q = await ask(fake)
    await until(lambda: shown(fake, "💻 Running echo bridged"), what="running line")
    t0 = time.monotonic()
    stop.set()
    await asyncio.wait_for(task, 10)
    assert time.monotonic() - t0 < 5
    final = fake.messages[(GROUP, q.message_id)]
    assert final.text == f"🔐 Allow Running echo bridged? — {STOPPED_VERDICT}"
    assert final.reply_markup is None
    view = fake.chat_view(GROUP)
    assert "❌ Running echo bridged — the bridge stopped" in view
    assert "⏹ Stopped: the bridge stopped." in view
    assert not any("Permission denied" in t or t.startswith("💻") for t in view)
    assert "not initialized" not in caplog.text


# --------------------------------------------------------------------------------- secrets


async def test_a_rejected_token_is_never_quoted(fake: FakeTelegram) -> None:
    """No part of the token in the message, unlike ``Telegram: The token `987654321:AAH…` was
    rejected by the server.``"""
    wrong = "987654321:AAHzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
    instance = new_instance("tg", "telegram", chat_ids=[GROUP], cwd=str(ROOT))
    with pytest.raises(TelegramSetupError) as info:
        await run_telegram(instance, runner=BridgeRunner(instance), token=wrong, api_url=fake.api_url)
    message = str(info.value)
    assert "rejected the bot token" in message
    assert wrong not in message and wrong.split(":")[1][:6] not in message and "987654321" not in message


def test_the_token_scrubber_covers_library_records_and_exception_text() -> None:
    scrubber = TokenScrubber(TOKEN)
    secret = TOKEN.split(":")[1]
    records = [
        logging.LogRecord(
            "httpx", logging.INFO, __file__, 1, "POST %s", (f"http://x/bot{TOKEN}/getMe",), None
        ),
        logging.LogRecord(
            "telegram.ext.Updater", logging.DEBUG, __file__, 1, f"secret {secret[:20]}…", (), None
        ),
    ]
    try:
        raise RuntimeError(f"boom at /bot{TOKEN}/sendMessage")
    except RuntimeError:
        import sys

        records.append(
            logging.LogRecord("telegram", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
        )
    formatter = RedactingFormatter("%(name)s: %(message)s")
    for record in records:
        assert scrubber.filter(record)
        line = formatter.format(record)
        assert TOKEN not in line and secret[:12] not in line and "123456789:" not in line, line
