"""Bot API calls under the bridges' retry rules, and one Telegram chat as a delivery sink.

Why a module of its own: Telegram's own rules (429 ``retry_after``, 5xx and HTML error pages worth
another try, "message is not modified" meaning success, limits counted in UTF-16 code units, the
reaction emoji it accepts) are handled here, once, so the delivery layer stays platform-neutral and
the bridge (:mod:`~acp_adapter.frontends.bridges.platforms.telegram`) only decides what to send.
Needs python-telegram-bot (the ``telegram`` extra), as the bridge does.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Final, TypeVar

from telegram import Bot, ReactionTypeEmoji
from telegram.constants import ChatAction
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError, TimedOut

from acp_adapter.frontends.bridges.events import CHAT_REACTIONS, ReactionKind
from acp_adapter.frontends.bridges.retry import (
    DROPPED_STOPPING,
    DeliveryDropped,
    RetryPolicy,
    retry_after_seconds,
)
from acp_adapter.frontends.bridges.sink import BaseSink, MessageId, SendOutcomeUnknown, utf16_len
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import visible_text

log = logging.getLogger("acp_progress.bridges.telegram")

TELEGRAM_LIMIT: Final = 4096
TYPING_TTL: Final = 5.0

TELEGRAM_REACTIONS: Final[Mapping[str, str]] = CHAT_REACTIONS
"""Semantic reaction -> an emoji Telegram accepts (it rejects ✅ and ❌ with REACTION_INVALID)."""

T = TypeVar("T")


def retry_after(exc: RetryAfter) -> float:
    """The exception's ``retry_after`` (read without v22's warning that the int becomes a timedelta),
    converted by the bridges' one reader, :func:`~..retry.retry_after_seconds`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return retry_after_seconds(value)


def _bad_response(exc: TelegramError) -> bool:
    """A 5xx, an HTML page, malformed JSON, a dropped connection or a timeout: worth another try."""
    if isinstance(exc, BadRequest):
        return False  # BadRequest is a NetworkError in python-telegram-bot; the request itself is wrong
    if isinstance(exc, NetworkError):  # 5xx (JSON or not), connection errors, TimedOut
        return True
    return exc.message == "Invalid server response"  # a 200 whose body is not JSON


async def call_api(
    what: str,
    make: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    important: bool = False,
    exactly_once: bool = False,
) -> T | None:
    """One Bot API call under the bridge's one :class:`~..retry.RetryPolicy`.

    429: wait ``retry_after`` up to the cap (then :class:`~..retry.DeliveryDropped`); bad responses
    are retried with backoff when ``important`` (answers, errors, questions). "message is not
    modified" means the chat already shows that text: success, ``None``. Other errors propagate
    (the delivery layer logs them, redacted, and carries on). ``exactly_once``: a timeout (Telegram
    may have shown the message) raises :class:`~..sink.SendOutcomeUnknown` instead of a retry.
    """
    floods = 0
    retries = 0
    while True:
        try:
            return await make()
        except RetryAfter as exc:
            floods += 1
            wait = policy.flood_wait(what, retry_after(exc), floods)
            log.info("%s: Telegram asked to retry after %.1fs", what, wait)
            if not await policy.sleep(wait):
                raise DeliveryDropped(DROPPED_STOPPING, f"{what}: the bridge stopped during a wait") from None
        except BadRequest as exc:
            if "message is not modified" in exc.message.lower():
                return None
            raise
        except TimedOut as exc:
            if exactly_once:
                raise SendOutcomeUnknown(f"{what} timed out") from exc
            if not important or retries >= policy.answer_retries:
                raise
            retries += 1
            delay = policy.backoff_delay(retries)
            log.info("%s: timed out; retry %d in %.1fs", what, retries, delay)
            if not await policy.sleep(delay):
                raise
        except TelegramError as exc:
            if not important or not _bad_response(exc) or retries >= policy.answer_retries:
                raise
            retries += 1
            delay = policy.backoff_delay(retries)
            log.info("%s: %s; retry %d in %.1fs", what, redact_text(exc.message)[:200], retries, delay)
            if not await policy.sleep(delay):
                raise


class TelegramSink(BaseSink):
    """One Telegram chat as a delivery sink."""

    limit: int = TELEGRAM_LIMIT
    typing_ttl: float | None = TYPING_TTL

    def __init__(self, bot: Bot, chat_id: int, policy: RetryPolicy | None = None) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.policy = policy or RetryPolicy()

    def measure(self, text: str) -> int:
        """UTF-16 units of the text as sent: its hidden characters shown as escapes (``\\u202e``
        is six units where U+202E was one), so a message cut to fit still fits once escaped."""
        return utf16_len(visible_text(text))

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> MessageId:
        # A post is an answer, an error notice or the first line of a bubble: worth retrying.
        # Progress lines and the placeholder are silent; the answer notifies.
        message = await call_api(
            "sendMessage",
            lambda: self.bot.send_message(self.chat_id, visible_text(text), disable_notification=silent),
            self.policy,
            important=True,
            exactly_once=exactly_once,
        )
        return None if message is None else message.message_id

    async def edit(self, message_id: MessageId, text: str) -> None:
        await call_api(
            "editMessageText",
            lambda: self.bot.edit_message_text(
                visible_text(text), chat_id=self.chat_id, message_id=message_id
            ),
            self.policy,
        )

    async def delete(self, message_id: MessageId) -> None:
        # the summary placeholder: left behind it would show a stale "⏳ …" above the answer
        await call_api(
            "deleteMessage",
            lambda: self.bot.delete_message(self.chat_id, message_id),
            self.policy,
            important=True,
        )

    async def typing(self, on: bool) -> None:
        if on:  # Telegram has no "stop typing": it lapses after 5 s or at our next message
            await call_api(
                "sendChatAction",
                lambda: self.bot.send_chat_action(self.chat_id, ChatAction.TYPING),
                self.policy,
            )

    async def react(self, target: MessageId, kind: ReactionKind) -> None:
        emoji = TELEGRAM_REACTIONS[kind]
        await call_api(
            "setMessageReaction",
            lambda: self.bot.set_message_reaction(self.chat_id, target, [ReactionTypeEmoji(emoji)]),
            self.policy,
        )
