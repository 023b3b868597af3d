"""The Telegram platform, on ``python-telegram-bot`` (the optional extra ``telegram``).

Long-polls ``message`` and ``callback_query`` updates (``edited_message`` and ``channel_post`` are
never prompts: an edit does not re-run anything and a channel has no person to answer). Only chats
on the instance's allowlist drive the agent, and with ``--user-id`` only those people in them;
anyone else gets a polite refusal — at most one per chat per ``refusal_interval`` and
``refusals_per_hour`` overall, with a bounded memory — and nothing runs. Each text message becomes
a prompt in that chat's ACP session; progress, typing, reactions and the answer come back through
the shared delivery layer.

Permission questions: a message with **Allow once** / **Deny** buttons (never "always": a chat
decides one call at a time). Only the person who sent the prompt, or an ``--approver``, may answer;
anyone else pressing a button is told "only <name> can answer this" and nothing changes. Each
question carries its own random nonce in the buttons' callback data, so an answer is bound to its
request: a stale, replayed or forged callback does nothing. Once decided (or denied for want of an
answer, or left unanswered because the bridge stopped) the question is edited to say so and its
buttons are removed.

Platform rules, handled in :mod:`.telegram_api` so delivery stays platform-neutral
(:class:`~..retry.RetryPolicy`):

* 429 ``retry_after``: waited up to the cap, in order; beyond it that delivery is dropped and
  counted; waits end at once when the bridge stops;
* 5xx, an HTML error page, malformed JSON, a timeout: answers, errors and questions are retried
  with bounded backoff; progress edits, typing and reactions are not;
* "message is not modified" is success (the chat already shows that text);
* the 4096 limit counts UTF-16 code units (:func:`~..sink.utf16_len`);
* typing lasts 5 s on Telegram and cannot be switched off: "off" just stops re-sending it;
* Telegram accepts only a fixed set of reaction emoji; ✅ and ❌ are not among them, so
  success is 👍 and failure is 👎 (working stays 👀).

Stopping (Ctrl-C, SIGTERM): polling stops, open questions are edited ("the bridge stopped;
nobody answered"), running turns are cancelled and their open lines end with ❌ — all before the
HTTP client is shut down, within ``stop_grace`` seconds.

The token comes from ``TELEGRAM_BOT_TOKEN`` and is never logged, stored or shown, whole or in part:
the HTTP client's request log (which prints URLs containing ``/bot<token>/``) is kept at WARNING, a
:class:`TokenScrubber` removes the live token from every log record (python-telegram-bot's and
httpx's included, exception text too) on top of the canonical redactor, and a rejected token is
reported without quoting it.

This module polls, admits and stops; its parts have modules of their own: the Bot API calls and the
chat sink (:mod:`.telegram_api`), the permission questions (:mod:`.telegram_questions`), names and
refusals (:mod:`.telegram_people`) and the token's scrubbing (:mod:`.telegram_token`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any, Final

from acp_adapter.config import TelegramSettings
from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.bridges.answers import flush_outbox
from acp_adapter.frontends.bridges.config import BridgeInstance
from acp_adapter.frontends.bridges.platforms import stop_on_signals
from acp_adapter.frontends.bridges.retry import DeliveryDropped, RetryPolicy
from acp_adapter.frontends.bridges.routes import Person
from acp_adapter.frontends.bridges.runner import STOPPED, BridgeRunner
from acp_adapter.frontends.bridges.state import INTERRUPTED
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import flatten

try:
    from telegram import Update
    from telegram.error import InvalidToken, RetryAfter, TelegramError
    from telegram.ext import Application, CallbackQueryHandler, ContextTypes, MessageHandler, filters
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Telegram bridge needs python-telegram-bot: pip install 'acp-progress[telegram]'"
    ) from exc

# the bridge's parts (each needs python-telegram-bot too: imported once the check above passed)
from acp_adapter.frontends.bridges.platforms.telegram_api import (
    TELEGRAM_LIMIT,
    TELEGRAM_REACTIONS,
    TYPING_TTL,
    TelegramSink,
    call_api,
    retry_after,
)
from acp_adapter.frontends.bridges.platforms.telegram_people import NAME_LIMIT, RefusalLimiter, display_name
from acp_adapter.frontends.bridges.platforms.telegram_questions import (
    EXPIRED,
    QUESTION_ROOM,
    STOPPED_VERDICT,
    TelegramQuestions,
)
from acp_adapter.frontends.bridges.platforms.telegram_token import TokenScrubber, quiet_http_logs, scrubbing

#: the names other modules import from here (those of the bridge's parts included)
__all__ = [
    "EXPIRED",
    "NAME_LIMIT",
    "QUESTION_ROOM",
    "REFUSAL",
    "REFUSAL_USER",
    "STOPPED_VERDICT",
    "TELEGRAM_LIMIT",
    "TELEGRAM_REACTIONS",
    "TOKEN_ENV",
    "TYPING_TTL",
    "RefusalLimiter",
    "TelegramBridge",
    "TelegramSetupError",
    "TelegramSink",
    "TokenScrubber",
    "build_application",
    "call_api",
    "display_name",
    "run_telegram",
]

log = logging.getLogger("acp_progress.bridges.telegram")

TOKEN_ENV: Final = "TELEGRAM_BOT_TOKEN"
ALLOWED_UPDATES: Final = ("message", "callback_query")

REFUSAL: Final = "Sorry, this bot only works for chats it has been set up for."
REFUSAL_USER: Final = "Sorry, this bot only takes prompts from the people it has been set up for."


class TelegramSetupError(AcpProgressError):
    """The Telegram bridge cannot start (no token, no allowlist); the message says what to do."""


# ------------------------------------------------------------------------------- the bridge


class TelegramBridge:
    """Wires a :class:`BridgeRunner` to a python-telegram-bot :class:`Application`."""

    def __init__(
        self,
        instance: BridgeInstance,
        runner: BridgeRunner,
        application: Application[Any, Any, Any, Any, Any, Any],
        settings: TelegramSettings | None = None,
        *,
        policy: RetryPolicy | None = None,
    ) -> None:
        settings = settings or TelegramSettings()
        self.instance = instance
        self.runner = runner
        self.app = application
        self.allowed = frozenset(instance.routing.chat_ids)
        self.users = frozenset(instance.routing.user_ids)
        self.policy = policy or RetryPolicy(
            retry_after_cap=settings.retry_after_cap,
            answer_retries=settings.answer_retries,
            backoff=settings.retry_backoff,
        )
        self.refusals = RefusalLimiter(
            settings.refusal_interval, settings.refusals_per_hour, settings.refusal_memory
        )
        #: the permission questions asked in this bridge's chats (Allow once / Deny buttons)
        self.questions = TelegramQuestions(application, self.policy, frozenset(instance.routing.approvers))
        self._sinks: dict[int, TelegramSink] = {}
        self._inbox: dict[int, str] = {}  # update_id -> durable inbox key, until on_message takes it
        self._recovered: list[asyncio.Task[None]] = []
        runner.questions.ask_permission = self.questions.ask_permission
        #: per chat, the agent's question waiting for a line (and who may answer it)
        self._lines: dict[int, tuple[asyncio.Future[str | None], Any]] = {}
        runner.questions.ask_line = self.ask_line
        # Only "message" updates are prompts: not edited_message, channel_post or edited_channel_post.
        application.add_handler(
            MessageHandler(filters.UpdateType.MESSAGE & filters.TEXT, self.on_message, block=False)
        )
        application.add_handler(CallbackQueryHandler(self.questions.on_callback, block=False))
        application.add_error_handler(self.on_error)

    def sink(self, chat_id: int) -> TelegramSink:
        if chat_id not in self._sinks:
            self._sinks[chat_id] = TelegramSink(self.app.bot, chat_id, self.policy)
        return self._sinks[chat_id]

    # ------------------------------------------------------------------ durable intake

    def _prompt_of(self, update: Update) -> dict[str, Any] | None:
        """The prompt an update will run (what :meth:`on_message` would pass on), or None."""
        message = update.message
        if message is None or not message.text:
            return None
        user = message.from_user
        if message.chat.id not in self.allowed or (
            self.users and (user is None or user.id not in self.users)
        ):
            return None
        text = message.text.strip()
        if not text or text in ("/cancel", "/start"):
            return None
        return {
            "chat": message.chat.id,
            "message_id": message.message_id,
            "text": text,
            "sender": [user.id, display_name(user)] if user is not None else None,
        }

    def accept(self, update: Update) -> None:
        """The poller took ``update``: its prompt is stored (inbox) and the offset moves past it,
        both before it is handled, so a crash from here on neither loses nor repeats it."""
        state = self.runner.state
        if state is None:
            return
        key = state.accept(update.update_id, self._prompt_of(update))
        if key is not None:
            self._inbox[update.update_id] = key

    async def recover(self) -> None:
        """After a restart, before polling: unsent answer chunks go out, turns that were running
        when the bridge died are reported interrupted (never re-sent), accepted prompts that never
        reached the agent run now, in order."""
        state = self.runner.state
        if state is None:
            return
        for chat in dict.fromkeys(e.chat for e in state.outbox()):
            if isinstance(chat, int) and chat in self.allowed:
                await flush_outbox(self.sink(chat), state, chat)
            else:
                for stale in state.outbox(chat):
                    state.outbox_sent(stale.key)
        for entry in state.inbox():
            chat = entry.chat
            if not isinstance(chat, int) or chat not in self.allowed:
                state.done(entry.key)
                continue
            if entry.state == "running":
                quoted = flatten(entry.text, 80)
                try:
                    await self.sink(chat).post(redact_text(f"{INTERRUPTED}\n↳ {quoted}"))
                except Exception as exc:
                    log.warning("could not report an interrupted turn: %s", redact_text(str(exc))[:200])
                state.done(entry.key)
                continue
            sender = Person(*entry.sender) if entry.sender is not None else None
            log.info("bridge %s: running a prompt accepted before the restart", self.instance.name)
            self._recovered.append(
                asyncio.create_task(
                    self.runner.handle_message(
                        chat, entry.text, self.sink(chat), entry.message_id, sender, entry.key
                    )
                )
            )
            await asyncio.sleep(0)  # its route (and its place in the chat's FIFO) exists before the next

    async def poll(self, poll_timeout: float) -> None:
        """Long-poll ``getUpdates`` from the stored offset; each update accepted, then handled.

        Driven here rather than by python-telegram-bot's Updater, whose offset lives in memory and
        moves on before a handler has seen the update."""
        state = self.runner.state
        offset = state.offset() if state is not None else None
        failures = 0
        bot = self.app.bot
        with contextlib.suppress(TelegramError):
            await bot.delete_webhook()  # getUpdates is refused while a webhook is set
        while True:
            try:
                updates = await bot.get_updates(
                    offset=offset, timeout=int(poll_timeout), allowed_updates=list(ALLOWED_UPDATES)
                )
            except InvalidToken:
                raise
            except RetryAfter as exc:
                await self.policy.sleep(self.policy.poll_wait(retry_after(exc)))
                continue
            except TelegramError as exc:
                failures += 1
                if failures == 1:
                    log.warning("getUpdates failed (%s); retrying", redact_text(exc.message)[:200])
                await asyncio.sleep(min(0.25 * 2**failures, 8.0))
                continue
            failures = 0
            for update in updates:
                if offset is not None and update.update_id < offset:
                    continue  # accepted before (a crash before Telegram heard of it): never twice
                self.accept(update)
                offset = update.update_id + 1
                await self.app.update_queue.put(update)

    async def on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.message  # None for edited_message / channel_post: never a prompt
        inbox = self._inbox.pop(update.update_id, None)
        if message is None or not message.text or self.policy.stopping.is_set():
            return
        chat = message.chat
        user = message.from_user
        if chat.id not in self.allowed:
            await self._refuse(chat.id, REFUSAL, "chat not on the allowlist")
            return
        if self.users and (user is None or user.id not in self.users):
            await self._refuse(chat.id, REFUSAL_USER, "sender not among --user-id")
            return
        text = message.text.strip()
        waiting = self._lines.get(chat.id)
        if waiting is not None and text != "/cancel":
            future, who = waiting
            if who is not None and (user is None or user.id != who):
                await self.sink(chat.id).post(
                    "Only the person who started this turn can answer its question."
                )
                return
            if not future.done():
                future.set_result(message.text)
            return
        if text == "/cancel":
            if waiting is not None and not waiting[0].done():
                waiting[0].set_result(None)  # the question goes with the turn
            cancelled = await self.runner.cancel(chat.id)
            if not cancelled:
                await self.sink(chat.id).post("Nothing is running.")
            return
        if text == "/start":
            await self.sink(chat.id).post("Hi! Send a message and I will pass it to the agent.")
            return
        sender = Person(user.id, display_name(user)) if user is not None else None
        await self.runner.handle_message(chat.id, text, self.sink(chat.id), message.message_id, sender, inbox)

    async def ask_line(self, chat_id: Any, prompt: str, patience: float, requester: Any) -> str | None:
        """The agent's question, one field at a time, in the chat; the next line of the person who
        started the turn answers (``/cancel`` or no answer within ``patience`` cancels)."""
        if chat_id in self._lines or self.policy.stopping.is_set():
            return None
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._lines[chat_id] = (future, getattr(requester, "id", None))
        try:
            await self.sink(chat_id).post(prompt)
            return await asyncio.wait_for(future, patience)
        except TimeoutError:
            await self.sink(chat_id).post("❓ no answer: the question was cancelled")
            return None
        finally:
            self._lines.pop(chat_id, None)

    async def _refuse(self, chat_id: int, text: str, why: str) -> None:
        if not self.refusals.allow(chat_id):
            log.debug("ignored a message from chat %s (%s; refusal already sent)", chat_id, why)
            return
        log.warning("refused a message from chat %s (%s)", chat_id, why)
        try:
            await call_api("sendMessage", lambda: self.app.bot.send_message(chat_id, text), self.policy)
        except (TelegramError, DeliveryDropped) as exc:
            log.info("refusal to chat %s not sent: %s", chat_id, redact_text(str(exc))[:200])

    async def stop(self, grace: float) -> None:
        """Ctrl-C/SIGTERM: no more waits, close the questions, cancel the turns, deliver their last lines."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        self.policy.stopping.set()
        self.runner.interrupt(STOPPED)  # first: no answer to a closed question reaches the chat
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.questions.stop_questions(), max(0.1, deadline - loop.time()))
        await self.runner.shutdown(STOPPED, grace=max(0.1, deadline - loop.time()))

    async def serve(self, stop: asyncio.Event, poll_timeout: float, grace: float) -> None:
        """Inside ``async with app``: poll until ``stop`` is set (or polling fails), then stop the
        bridge there, so every last edit happens before the HTTP client shuts down."""
        app, name = self.app, self.instance.name
        me = await app.bot.get_me()
        log.info("bridge %s: polling as @%s", name, me.username)
        await app.start()
        self.runner.ready(f"bridge {name}: ready — polling Telegram as @{me.username} (Ctrl-C stops)")
        await self.recover()
        polling = asyncio.create_task(self.poll(poll_timeout), name="telegram-poll")
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([polling, stopping], return_when=asyncio.FIRST_COMPLETED)
        log.info("bridge %s: stopping", name)
        polling.cancel()
        stopping.cancel()
        await self.stop(grace)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(app.stop(), 1.0)
        if polling.done() and not polling.cancelled() and polling.exception() is not None:
            raise polling.exception()  # type: ignore[misc]

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.warning("telegram handler failed: %s", redact_text(str(context.error)))


def build_application(
    token: str, api_url: str, settings: TelegramSettings | None = None, poll_timeout: float = 10.0
) -> Application[Any, Any, Any, Any, Any, Any]:
    """A python-telegram-bot application talking to ``api_url`` (``/bot<token>/METHOD`` appended)."""
    timeout = (settings or TelegramSettings()).http_timeout
    return (
        Application.builder()
        .token(token)
        .base_url(f"{api_url.rstrip('/')}/bot")
        .base_file_url(f"{api_url.rstrip('/')}/file/bot")
        .connect_timeout(timeout)
        .read_timeout(timeout)
        .write_timeout(timeout)
        .pool_timeout(timeout)
        .get_updates_read_timeout(poll_timeout + timeout)
        .updater(None)  # the bridge polls itself (TelegramBridge.poll): the offset is stored
        .build()
    )


def _bot_token(instance: BridgeInstance, token: str | None) -> str:
    """The bot token (given, else from the environment); a bridge without one, or without an
    allowed chat, cannot serve anybody and says how to fix it."""
    token = token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise TelegramSetupError(f"set {TOKEN_ENV} to the bot token BotFather gave you")
    if not instance.routing.chat_ids:
        raise TelegramSetupError(
            f"bridge {instance.name} has no allowed chats: "
            f"acp-progress bridge update {instance.name} --chat-id ID"
        )
    return token


async def run_telegram(
    instance: BridgeInstance,
    *,
    runner: BridgeRunner,
    token: str | None = None,
    api_url: str | None = None,
    stop: asyncio.Event | None = None,
    poll_timeout: float = 10.0,
    settings: TelegramSettings | None = None,
    policy: RetryPolicy | None = None,
) -> None:
    """Run the Telegram bridge until ``stop`` is set (or SIGINT/SIGTERM), then shut down cleanly.

    ``policy``: the platform calls' retry policy (default: from ``settings``; tests pass one on a
    manual clock)."""
    settings = settings or TelegramSettings()
    token = _bot_token(instance, token)
    api = api_url or settings.api_url  # ACP_PROGRESS_TELEGRAM_API_URL or [telegram] api_url
    quiet_http_logs()
    stop = stop or asyncio.Event()
    with scrubbing(token) as scrubber:
        try:
            with stop_on_signals(stop, runner):
                app = build_application(token, api, settings, poll_timeout)
                bridge = TelegramBridge(instance, runner, app, settings, policy=policy)
                async with app:
                    await bridge.serve(stop, poll_timeout, settings.stop_grace)
        except InvalidToken:
            raise TelegramSetupError(
                f"Telegram rejected the bot token in {TOKEN_ENV}: check it (or get a new one) with @BotFather"
            ) from None
        except TelegramError as exc:
            raise TelegramSetupError(f"Telegram: {scrubber.scrub(redact_text(str(exc)))}") from None
        finally:
            await runner.close()
