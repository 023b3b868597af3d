"""Which Telegram messages notify the phone, against the strict fake Bot API.

Progress lines, their edits and the ``📝`` placeholder go out with ``disable_notification``, so
the phone does not buzz for every line or for a short-lived summary; the answer notifies; the
last ``✅`` edit of the progress message is made before the answer is posted, so no progress edit
lands after the answer. The bridge's agent runs in this process (which messages notify is the
point, not the agent's process).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("telegram")

from acp_adapter.config import Settings
from acp_adapter.frontends.bridges.runner import BridgeRunner
from acp_adapter.summary import SummaryFactory
from tests.helpers.fake_telegram import Call, FakeTelegram, until
from tests.helpers.shared_servers import use_in_process_agents
from tests.helpers.telegram_chat import CHAT, bridge, tg

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def in_process_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    use_in_process_agents(monkeypatch)


#: the embedded model's answer to "wait 1 seconds" (the wait tool's result)
ANSWER = "finished after 1s"


def _silent(call: Call) -> bool:
    return call.params.get("disable_notification") in (True, "true", "True")


def _to_chat(calls: list[Call]) -> list[Call]:
    return [c for c in calls if str(c.params.get("chat_id")) == str(CHAT)]


async def test_progress_and_the_placeholder_are_silent_the_answer_notifies_after_the_last_edit(
    fake: FakeTelegram,
) -> None:
    summary = SummaryFactory.from_settings(Settings(summary="embedded", summary_interval=0))
    kw: dict[str, Any] = {"summary": summary, "placeholder_delay": 0}
    async with bridge(fake, tg(tool_progress="all"), **kw) as runner:
        assert isinstance(runner, BridgeRunner)
        runner.agent_env.update(ACP_PROGRESS_EMBEDDED_DELAY="0.3")  # the agent starts with the first message
        fake.user_says(CHAT, "wait 1 seconds")
        await until(lambda: any(ANSWER in t for t in fake.chat_view(CHAT)), what="answer")
    sends = _to_chat(fake.calls_of("sendMessage"))
    edits = _to_chat(fake.calls_of("editMessageText"))
    texts = [str(c.params["text"]) for c in sends]
    progress = next(c for c in sends if str(c.params["text"]).startswith("⏳ Working on"))
    placeholder = next((c for c in sends if str(c.params["text"]).startswith("📝 ")), None)
    answer = next(c for c in sends if ANSWER in str(c.params["text"]))
    assert placeholder is not None, texts  # the summary placeholder was posted while the tool ran
    assert _silent(progress) and _silent(placeholder), [
        (t, c.params.get("disable_notification")) for t, c in zip(texts, sends, strict=True)
    ]
    assert not _silent(answer), answer.params  # the answer is what the phone should ring for
    assert all(_silent(c) for c in sends if str(c.params["text"]).startswith(("⏳", "✅", "📝"))), texts
    # the progress message's last edit (its ✅) reached the server before the answer was posted
    progress_id = next(
        m.message_id for m in fake.bot_messages(CHAT) if m.text.startswith(("✅ Working on", "⏳ Working on"))
    )
    own_edits = [e for e in edits if int(e.params["message_id"]) == progress_id]
    assert own_edits and str(own_edits[-1].params["text"]).startswith("✅ Working on"), own_edits
    assert own_edits[-1].at < answer.at, "the answer was posted before the last progress edit"
