"""The Telegram platform, on ``python-telegram-bot`` (the optional extra ``telegram``).

Long-polls updates. Only chats on the instance's allowlist drive the agent; any other chat gets
a polite refusal and nothing runs. Each text message becomes a prompt in that chat's ACP
session; progress, typing, reactions and the answer come back through the shared delivery
layer. Permission requests become a message with Allow / Deny buttons (callback queries),
denied when nobody answers in time.

Platform rules handled here, so delivery stays platform-neutral:

* 429 ``retry_after``: the call waits and is retried; the route worker is blocked meanwhile, so
  nothing is lost and order is kept.
* "message is not modified" is success (the chat already shows that text).
* the 4096 limit counts UTF-16 code units (:func:`~..sink.utf16_len`).
* typing lasts 5 s on Telegram and cannot be switched off: "off" just stops re-sending it.
* Telegram accepts only a fixed set of reaction emoji; ✅ and ❌ are not among them, so
  success is 👍 and failure is 👎 (working stays 👀).

The token comes from ``TELEGRAM_BOT_TOKEN`` and is never logged, stored or shown: the HTTP
client's request log (which prints URLs containing ``/bot<token>/``) is kept at WARNING, and
every message we log or send passes the canonical redactor.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import secrets
import signal
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

from ...client import PermissionRequest
from ...redact import redact_text
from ..config import BridgeInstance
from ..events import ReactionKind
from ..runner import BridgeRunner
from ..sink import BaseSink, MessageId, utf16_len

try:
    from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReactionTypeEmoji, Update
    from telegram.constants import ChatAction
    from telegram.error import BadRequest, RetryAfter, TelegramError
    from telegram.ext import Application, CallbackQueryHandler, ContextTypes, MessageHandler, filters
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Telegram bridge needs python-telegram-bot: pip install 'acp-progress[telegram]'"
    ) from exc

__all__ = [
    "API_URL_ENV",
    "DEFAULT_API_URL",
    "TELEGRAM_LIMIT",
    "TELEGRAM_REACTIONS",
    "TOKEN_ENV",
    "TelegramBridge",
    "TelegramSetupError",
    "TelegramSink",
    "run_telegram",
]

log = logging.getLogger("acp_progress.bridges.telegram")

TOKEN_ENV: Final = "TELEGRAM_BOT_TOKEN"
API_URL_ENV: Final = "ACP_PROGRESS_TELEGRAM_API_URL"
DEFAULT_API_URL: Final = "https://api.telegram.org"
TELEGRAM_LIMIT: Final = 4096
TYPING_TTL: Final = 5.0
MAX_RETRIES: Final = 8

TELEGRAM_REACTIONS: Final[Mapping[str, str]] = {"working": "👀", "success": "👍", "failure": "👎"}
"""Seed reaction -> an emoji Telegram accepts (it rejects ✅ and ❌ with REACTION_INVALID)."""

REFUSAL: Final = "Sorry, this bot only works for chats it has been set up for."

T = TypeVar("T")


class TelegramSetupError(Exception):
    """The Telegram bridge cannot start (no token, no allowlist); the message says what to do."""


def _retry_seconds(exc: RetryAfter) -> float:
    """``retry_after`` in seconds, whichever type this python-telegram-bot version returns."""
    with warnings.catch_warnings():  # v22 warns that the int will become a timedelta
        warnings.simplefilter("ignore")
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)


async def call_api(
    what: str, make: Callable[[], Awaitable[T]], *, max_retries: int = MAX_RETRIES
) -> T | None:
    """One Bot API call with Telegram's flood rule: on 429 wait ``retry_after`` and retry.

    "message is not modified" means the chat already shows that text: success, ``None``.
    Other errors propagate (the delivery layer logs them, redacted, and carries on).
    """
    for _ in range(max_retries):
        try:
            return await make()
        except RetryAfter as exc:
            wait = _retry_seconds(exc)
            log.info("%s: Telegram asked to retry after %.1fs", what, wait)
            await asyncio.sleep(wait)
        except BadRequest as exc:
            if "message is not modified" in exc.message.lower():
                return None
            raise
    raise TelegramError(f"{what}: still rate limited after {max_retries} attempts")


class TelegramSink(BaseSink):
    """One Telegram chat as a delivery sink."""

    limit: int = TELEGRAM_LIMIT
    typing_ttl: float | None = TYPING_TTL

    def __init__(self, bot: Bot, chat_id: int) -> None:
        self.bot = bot
        self.chat_id = chat_id

    def measure(self, text: str) -> int:
        return utf16_len(text)

    async def post(self, text: str) -> MessageId:
        message = await call_api("sendMessage", lambda: self.bot.send_message(self.chat_id, text))
        return None if message is None else message.message_id

    async def edit(self, message_id: MessageId, text: str) -> None:
        await call_api(
            "editMessageText",
            lambda: self.bot.edit_message_text(text, chat_id=self.chat_id, message_id=message_id),
        )

    async def delete(self, message_id: MessageId) -> None:
        await call_api("deleteMessage", lambda: self.bot.delete_message(self.chat_id, message_id))

    async def typing(self, on: bool) -> None:
        if on:  # Telegram has no "stop typing": it lapses after 5 s or at our next message
            await call_api(
                "sendChatAction", lambda: self.bot.send_chat_action(self.chat_id, ChatAction.TYPING)
            )

    async def react(self, target: MessageId, kind: ReactionKind) -> None:
        emoji = TELEGRAM_REACTIONS[kind]
        await call_api(
            "setMessageReaction",
            lambda: self.bot.set_message_reaction(self.chat_id, target, [ReactionTypeEmoji(emoji)]),
        )


class TelegramBridge:
    """Wires a :class:`BridgeRunner` to a python-telegram-bot :class:`Application`."""

    def __init__(
        self,
        instance: BridgeInstance,
        runner: BridgeRunner,
        application: Application[Any, Any, Any, Any, Any, Any],
    ) -> None:
        self.instance = instance
        self.runner = runner
        self.app = application
        self.allowed = frozenset(instance.routing.chat_ids)
        self._sinks: dict[int, TelegramSink] = {}
        self._pending: dict[str, tuple[int, asyncio.Future[bool]]] = {}
        runner.ask_permission = self.ask_permission
        application.add_handler(MessageHandler(filters.TEXT, self.on_message, block=False))
        application.add_handler(CallbackQueryHandler(self.on_callback, pattern=r"^perm:", block=False))
        application.add_error_handler(self.on_error)

    def sink(self, chat_id: int) -> TelegramSink:
        if chat_id not in self._sinks:
            self._sinks[chat_id] = TelegramSink(self.app.bot, chat_id)
        return self._sinks[chat_id]

    async def on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        chat = update.effective_chat
        if message is None or chat is None or not message.text:
            return
        if chat.id not in self.allowed:
            log.warning("refused a message from chat %s (not on the allowlist)", chat.id)
            await call_api("sendMessage", lambda: self.app.bot.send_message(chat.id, REFUSAL))
            return
        text = message.text.strip()
        if text == "/cancel":
            cancelled = await self.runner.cancel(chat.id)
            if not cancelled:
                await self.sink(chat.id).post("Nothing is running.")
            return
        if text == "/start":
            await self.sink(chat.id).post("Hi! Send a message and I will pass it to the agent.")
            return
        await self.runner.handle_message(chat.id, text, self.sink(chat.id), message.message_id)

    async def ask_permission(self, chat_id: Any, request: PermissionRequest, patience: float) -> bool:
        """Allow / Deny buttons under a question; denied when nobody presses one within ``patience``."""
        key = secrets.token_hex(8)
        question = redact_text(f"🔐 Allow {request.title}?")
        keyboard = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Allow", callback_data=f"perm:{key}:allow"),
                    InlineKeyboardButton("Deny", callback_data=f"perm:{key}:deny"),
                ]
            ]
        )
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending[key] = (int(chat_id), future)
        try:
            sent = await call_api(
                "sendMessage", lambda: self.app.bot.send_message(chat_id, question, reply_markup=keyboard)
            )
            try:
                allowed = await asyncio.wait_for(future, patience)
                verdict = "allowed" if allowed else "denied"
            except TimeoutError:
                allowed, verdict = False, "denied (no answer in time)"
            if sent is not None:
                with contextlib.suppress(TelegramError):
                    await call_api(
                        "editMessageText",
                        lambda: self.app.bot.edit_message_text(
                            f"{question} — {verdict}", chat_id=chat_id, message_id=sent.message_id
                        ),
                    )
            return allowed
        finally:
            self._pending.pop(key, None)

    async def on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None or not query.data:
            return
        _, key, choice = [*query.data.split(":"), "", ""][:3]
        chat = update.effective_chat
        entry = self._pending.get(key)
        if entry is None or chat is None or chat.id != entry[0] or chat.id not in self.allowed:
            await call_api("answerCallbackQuery", lambda: query.answer("This question has expired."))
            return
        future = entry[1]
        if not future.done():
            future.set_result(choice == "allow")
        await call_api(
            "answerCallbackQuery", lambda: query.answer("Allowed" if choice == "allow" else "Denied")
        )

    def deny_pending(self) -> None:
        """Shutting down: nobody can press a button any more, so every open question is denied."""
        for _, future in list(self._pending.values()):
            if not future.done():
                future.set_result(False)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.warning("telegram handler failed: %s", redact_text(str(context.error)))


def build_application(token: str, api_url: str) -> Application[Any, Any, Any, Any, Any, Any]:
    """A python-telegram-bot application talking to ``api_url`` (``/bot<token>/METHOD`` appended)."""
    return (
        Application.builder()
        .token(token)
        .base_url(f"{api_url.rstrip('/')}/bot")
        .base_file_url(f"{api_url.rstrip('/')}/file/bot")
        .build()
    )


def _quiet_http_logs() -> None:
    """httpx logs each request URL at INFO, and Bot API URLs contain the token: keep it at WARNING."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))


async def run_telegram(
    instance: BridgeInstance,
    *,
    runner: BridgeRunner,
    token: str | None = None,
    api_url: str | None = None,
    stop: asyncio.Event | None = None,
    poll_timeout: float = 10.0,
) -> None:
    """Run the Telegram bridge until ``stop`` is set (or SIGINT/SIGTERM), then shut down cleanly."""
    token = token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise TelegramSetupError(f"set {TOKEN_ENV} to the bot token BotFather gave you")
    if not instance.routing.chat_ids:
        raise TelegramSetupError(
            f"bridge {instance.name} has no allowed chats: "
            f"acp-progress bridge update {instance.name} --chat-id ID"
        )
    api = api_url or os.environ.get(API_URL_ENV) or DEFAULT_API_URL
    _quiet_http_logs()
    app = build_application(token, api)
    bridge = TelegramBridge(instance, runner, app)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    try:
        async with app:
            me = await app.bot.get_me()
            log.info("bridge %s: polling as @%s", instance.name, me.username)
            assert app.updater is not None
            await app.updater.start_polling(
                poll_interval=0.0, timeout=int(poll_timeout), allowed_updates=["message", "callback_query"]
            )
            await app.start()
            await stop.wait()
            await app.updater.stop()
            bridge.deny_pending()
            await app.stop()
    except TelegramError as exc:
        raise TelegramSetupError(f"Telegram: {redact_text(str(exc))}") from None
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
        await runner.close()
