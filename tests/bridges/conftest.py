"""Fixtures of the bridge tests: the strict fake Telegram Bot API on loopback, for the test token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.fake_telegram import FakeTelegram
from tests.helpers.telegram_chat import TOKEN


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    server = FakeTelegram(TOKEN).start()
    yield server
    server.stop()
