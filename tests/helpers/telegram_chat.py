"""The bot token and the chat of the Telegram bridge tests, and the bridge on them: a bridge
instance for that chat (:func:`tg`) run against the fake Bot API (:func:`bridge`)."""

from __future__ import annotations

import contextlib
from typing import Any

from acp_adapter.frontends.bridges.config import BridgeInstance, new_instance
from acp_adapter.frontends.bridges.retry import RetryPolicy
from acp_adapter.frontends.bridges.runner import BridgeRunner
from tests.helpers.acp_agent import ROOT
from tests.helpers.fake_telegram import FakeTelegram, telegram_bridge

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"
CHAT = 4242


def bridge(
    fake: FakeTelegram, instance: BridgeInstance, policy: RetryPolicy | None = None, **runner_kw: Any
) -> contextlib.AbstractAsyncContextManager[BridgeRunner]:
    """``instance`` bridged to ``fake`` with the test token and a short edit window."""
    return telegram_bridge(fake, instance, token=TOKEN, window=0.3, policy=policy, **runner_kw)


def tg(**progress: Any) -> BridgeInstance:
    """A Telegram bridge instance for the test chat, with the ``progress`` settings given."""
    return new_instance("tg", "telegram", chat_ids=[CHAT], cwd=str(ROOT), progress=progress or None)
