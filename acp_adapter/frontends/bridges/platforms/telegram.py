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

Platform rules handled here, so delivery stays platform-neutral (:class:`~..retry.RetryPolicy`):

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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import secrets
import time
import unicodedata
import warnings
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from acp_adapter.client.driver import PermissionRequest
from acp_adapter.config import TelegramSettings
from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.bridges.config import BridgeInstance
from acp_adapter.frontends.bridges.delivery import flush_outbox
from acp_adapter.frontends.bridges.events import CHAT_REACTIONS, ReactionKind
from acp_adapter.frontends.bridges.platforms import stop_on_signals
from acp_adapter.frontends.bridges.retry import (
    DROPPED_STOPPING,
    DeliveryDropped,
    RetryPolicy,
    retry_after_seconds,
)
from acp_adapter.frontends.bridges.runner import STOPPED, BridgeRunner, Person, Verdict
from acp_adapter.frontends.bridges.sink import (
    BaseSink,
    MessageId,
    SendOutcomeUnknown,
    split_to_fit,
    utf16_len,
)
from acp_adapter.frontends.bridges.state import INTERRUPTED
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import chat_safe
from acp_adapter.text import flatten

try:
    from telegram import (
        Bot,
        CallbackQuery,
        InlineKeyboardButton,
        InlineKeyboardMarkup,
        ReactionTypeEmoji,
        Update,
        User,
    )
    from telegram.constants import ChatAction
    from telegram.error import BadRequest, InvalidToken, NetworkError, RetryAfter, TelegramError, TimedOut
    from telegram.ext import Application, CallbackQueryHandler, ContextTypes, MessageHandler, filters
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the Telegram bridge needs python-telegram-bot: pip install 'acp-progress[telegram]'"
    ) from exc


log = logging.getLogger("acp_progress.bridges.telegram")

TOKEN_ENV: Final = "TELEGRAM_BOT_TOKEN"
TELEGRAM_LIMIT: Final = 4096
#: a permission question's text, with room left for the verdict its closing edit appends
QUESTION_ROOM: Final = 3800
TYPING_TTL: Final = 5.0
NAME_LIMIT: Final = 64
"""Characters of a person's name shown in a question's verdict or a refusal."""
ALLOWED_UPDATES: Final = ("message", "callback_query")

TELEGRAM_REACTIONS: Final[Mapping[str, str]] = CHAT_REACTIONS
"""Seed reaction -> an emoji Telegram accepts (it rejects ✅ and ❌ with REACTION_INVALID)."""

REFUSAL: Final = "Sorry, this bot only works for chats it has been set up for."
REFUSAL_USER: Final = "Sorry, this bot only takes prompts from the people it has been set up for."
EXPIRED: Final = "This question is no longer open."
STOPPED_VERDICT: Final = "⏹ the bridge stopped; nobody answered"

_CALLBACK: Final = re.compile(r"perm:([A-Za-z0-9_-]{16}):(once|deny)")
_WORDISH: Final = re.compile(r"[A-Za-z0-9_-]{8,}")

T = TypeVar("T")


class TelegramSetupError(AcpProgressError):
    """The Telegram bridge cannot start (no token, no allowlist); the message says what to do."""


# ------------------------------------------------------------------------------------ secrets


class TokenScrubber(logging.Filter):
    """Removes the live bot token, whole or in part, from log records (message and exception text).

    Attached to the root logger's handlers while the bridge runs, so records of python-telegram-bot,
    httpx and httpcore (which log request URLs containing ``/bot<token>/``) are covered as they pass.
    """

    def __init__(self, token: str) -> None:
        super().__init__("acp_progress.token")
        self.token = token
        bot_id, _, secret = token.partition(":")
        parts = [token]
        if len(secret) >= 8:
            parts.append(secret)
        self._parts = re.compile("|".join(re.escape(x) for x in sorted(parts, key=len, reverse=True)))
        self._secret = secret
        self._id = re.compile(rf"(?<![0-9]){re.escape(bot_id)}:\S*") if bot_id.isdigit() else None

    def scrub(self, text: str) -> str:
        text = self._parts.sub("[REDACTED]", text)
        if self._id is not None:
            text = self._id.sub("[REDACTED]", text)
        if len(self._secret) >= 8:  # a piece of the secret (a truncated quote, a line split): 8+ chars
            text = _WORDISH.sub(lambda m: "[REDACTED]" if m.group(0) in self._secret else m.group(0), text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the record, lose nothing else
            message = str(record.msg)
        record.msg = self.scrub(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
            # the scrubbed text is the traceback now: a formatter that formats exc_info afresh
            # (the package's does, never trusting a cached text) would bring the token back
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


def _quiet_http_logs() -> None:
    """httpx logs each request URL at INFO, and Bot API URLs contain the token: keep it at WARNING."""
    for name in ("httpx", "httpcore"):
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))


@contextlib.contextmanager
def _scrubbing(token: str) -> Any:
    """The token scrubber on every root handler (and the last-resort handler) while the bridge runs."""
    scrubber = TokenScrubber(token)
    handlers = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        handler.addFilter(scrubber)
    try:
        yield scrubber
    finally:
        for handler in handlers:
            handler.removeFilter(scrubber)


def display_name(user: User | None) -> str:
    """A short, printable name for a person: @username, else their first (and last) name, else the id."""
    if user is None:
        return "someone"
    if user.username:
        raw = f"@{user.username}"
    else:
        raw = " ".join(x for x in (user.first_name, user.last_name) if x) or f"user {user.id}"
    clean = "".join(ch for ch in raw if unicodedata.category(ch)[0] != "C")
    clean = " ".join(clean.split())[:NAME_LIMIT] or f"user {user.id}"
    return redact_text(clean)


# ------------------------------------------------------------------------------- API calls


def _retry_after(exc: RetryAfter) -> float:
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
            wait = policy.flood_wait(what, _retry_after(exc), floods)
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
        return utf16_len(text)

    async def post(self, text: str, *, silent: bool = False, exactly_once: bool = False) -> MessageId:
        # A post is an answer, an error notice or the first line of a bubble: worth retrying.
        # Progress lines and the placeholder are silent; the answer notifies.
        message = await call_api(
            "sendMessage",
            lambda: self.bot.send_message(self.chat_id, chat_safe(text), disable_notification=silent),
            self.policy,
            important=True,
            exactly_once=exactly_once,
        )
        return None if message is None else message.message_id

    async def edit(self, message_id: MessageId, text: str) -> None:
        await call_api(
            "editMessageText",
            lambda: self.bot.edit_message_text(chat_safe(text), chat_id=self.chat_id, message_id=message_id),
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


# ------------------------------------------------------------------------------- strangers


class RefusalLimiter:
    """One refusal per key (chat) per ``interval`` and ``per_hour`` in all; remembers ``memory`` keys.

    A crowd of strangers costs at most ``per_hour`` messages an hour and ``memory`` entries of
    memory, however many of them there are and however often they write.
    """

    def __init__(
        self,
        interval: float = 3600.0,
        per_hour: int = 60,
        memory: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.per_hour = per_hour
        self.memory = memory
        self.clock = clock
        self.sent = 0
        self.suppressed = 0
        self._last: collections.OrderedDict[Hashable, float] = collections.OrderedDict()
        self._recent: collections.deque[float] = collections.deque()

    def __len__(self) -> int:
        return len(self._last)

    def allow(self, key: Hashable) -> bool:
        """True when ``key`` may get a refusal now (and it is counted as sent)."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self.suppressed += 1
            return False
        while self._recent and now - self._recent[0] >= 3600.0:
            self._recent.popleft()
        if len(self._recent) >= self.per_hour:
            self.suppressed += 1
            return False
        self._last[key] = now
        self._last.move_to_end(key)
        while len(self._last) > self.memory:
            self._last.popitem(last=False)
        self._recent.append(now)
        self.sent += 1
        return True


# ------------------------------------------------------------------------------- the bridge


@dataclass
class _Question:
    """One open permission question: where it is, who may answer it, and its answer."""

    nonce: str
    chat_id: int
    text: str
    deciders: frozenset[Any]
    who: str
    future: asyncio.Future[tuple[bool, str]]
    #: who answered, for the agent's audit (``telegram:<user id>``)
    decided_by: str = ""
    message_id: int | None = None
    closed: bool = False
    presses: int = field(default=0)


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
        self.approvers = frozenset(instance.routing.approvers)
        self.policy = policy or RetryPolicy(
            retry_after_cap=settings.retry_after_cap,
            answer_retries=settings.answer_retries,
            backoff=settings.retry_backoff,
        )
        self.refusals = RefusalLimiter(
            settings.refusal_interval, settings.refusals_per_hour, settings.refusal_memory
        )
        self._sinks: dict[int, TelegramSink] = {}
        self._questions: dict[str, _Question] = {}
        self._inbox: dict[int, str] = {}  # update_id -> durable inbox key, until on_message takes it
        self._recovered: list[asyncio.Task[None]] = []
        runner.ask_permission = self.ask_permission
        # Only "message" updates are prompts: not edited_message, channel_post or edited_channel_post.
        application.add_handler(
            MessageHandler(filters.UpdateType.MESSAGE & filters.TEXT, self.on_message, block=False)
        )
        application.add_handler(CallbackQueryHandler(self.on_callback, block=False))
        application.add_error_handler(self.on_error)

    def sink(self, chat_id: int) -> TelegramSink:
        if chat_id not in self._sinks:
            self._sinks[chat_id] = TelegramSink(self.app.bot, chat_id, self.policy)
        return self._sinks[chat_id]

    async def _send(self, chat_id: int, text: str, **kw: Any) -> Any:
        return await call_api(
            "sendMessage", lambda: self.app.bot.send_message(chat_id, text, **kw), self.policy, important=True
        )

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
                await self.policy.sleep(self.policy.poll_wait(_retry_after(exc)))
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
        if text == "/cancel":
            cancelled = await self.runner.cancel(chat.id)
            if not cancelled:
                await self.sink(chat.id).post("Nothing is running.")
            return
        if text == "/start":
            await self.sink(chat.id).post("Hi! Send a message and I will pass it to the agent.")
            return
        sender = Person(user.id, display_name(user)) if user is not None else None
        await self.runner.handle_message(chat.id, text, self.sink(chat.id), message.message_id, sender, inbox)

    async def _refuse(self, chat_id: int, text: str, why: str) -> None:
        if not self.refusals.allow(chat_id):
            log.debug("ignored a message from chat %s (%s; refusal already sent)", chat_id, why)
            return
        log.warning("refused a message from chat %s (%s)", chat_id, why)
        try:
            await call_api("sendMessage", lambda: self.app.bot.send_message(chat_id, text), self.policy)
        except (TelegramError, DeliveryDropped) as exc:
            log.info("refusal to chat %s not sent: %s", chat_id, redact_text(str(exc))[:200])

    # ------------------------------------------------------------------ permission questions

    async def ask_permission(
        self, chat_id: Any, request: PermissionRequest, patience: float, requester: Person | None
    ) -> Verdict | bool | None:
        """Allow once / Deny under a question; only the requester (or an approver) may answer.

        Denied when nobody answers within ``patience``; ``None`` when the bridge stops first.
        """
        if self.policy.stopping.is_set():
            return None
        deciders = set(self.approvers)
        if requester is not None:
            deciders.add(requester.id)
        who = requester.name if requester is not None else "an approver"
        if requester is not None and self.approvers - {requester.id}:
            who += " or an approver"
        q = _Question(
            nonce=secrets.token_urlsafe(12),
            chat_id=int(chat_id),
            text=await self._question_text(int(chat_id), request),
            deciders=frozenset(deciders),
            who=who,
            future=asyncio.get_running_loop().create_future(),
        )
        keyboard = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Allow once", callback_data=f"perm:{q.nonce}:once"),
                    InlineKeyboardButton("Deny", callback_data=f"perm:{q.nonce}:deny"),
                ]
            ]
        )
        self._questions[q.nonce] = q
        try:
            sent = await self._send(q.chat_id, q.text, reply_markup=keyboard)
            if sent is None:
                return False
            q.message_id = sent.message_id
            if q.closed:  # the bridge stopped while the question was on its way
                q.closed = False
                await self._close(q, STOPPED_VERDICT)
                return None
            try:
                allowed, by = await asyncio.wait_for(asyncio.shield(q.future), patience)
            except TimeoutError:
                if q.closed:  # the bridge stopped meanwhile
                    return None
                await self._close(q, f"⌛ denied: nobody answered within {patience:g}s")
                return False
            if by == "":  # resolved by stop_questions, which edits the question itself
                return None
            await self._close(q, f"✅ allowed once by {by}" if allowed else f"❌ denied by {by}")
            return Verdict(allowed, q.decided_by)
        finally:
            self._questions.pop(q.nonce, None)

    async def _question_text(self, chat_id: int, request: PermissionRequest) -> str:
        """``🔐 Allow <title>?`` and, when the title does not hold it, the whole command under it:
        nobody can approve what they cannot see. A command too long for one question is posted
        whole first (in as many messages as it takes), and the question says so."""
        question = chat_safe(redact_text(f"🔐 Allow {request.title}?"))
        command = request.command
        if command is None or " ".join(command.split()) in request.title:
            return question
        whole = chat_safe(redact_text(command.strip()))
        if utf16_len(question) + utf16_len(whole) + 2 <= QUESTION_ROOM:
            return f"{question}\n\n{whole}"
        for part in split_to_fit(whole, QUESTION_ROOM, utf16_len):
            await self._send(chat_id, part)
        return f"{question}\n\n(the whole command, {len(whole):,} characters, is in the messages above)"

    async def _close(self, q: _Question, verdict: str) -> None:
        """Edit the question to say how it ended; no reply_markup, so its buttons are gone."""
        if q.closed:
            return
        q.closed = True
        if q.message_id is None:
            return
        mid = q.message_id
        try:
            await call_api(
                "editMessageText",
                lambda: self.app.bot.edit_message_text(
                    f"{q.text} — {verdict}", chat_id=q.chat_id, message_id=mid
                ),
                self.policy,
                important=True,
            )
        except (TelegramError, DeliveryDropped) as exc:
            log.warning("could not close a permission question: %s", redact_text(str(exc))[:200])

    async def on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            return
        match = _CALLBACK.fullmatch(query.data or "")
        q = self._questions.get(match.group(1)) if match else None
        message = query.message
        if (
            q is None
            or match is None
            or q.closed
            or message is None
            or message.chat.id != q.chat_id
            or message.message_id != q.message_id
        ):
            await self._answer(query, EXPIRED)
            return
        user = query.from_user
        if user is None or user.id not in q.deciders:
            log.info(
                "chat %s: %s pressed a button of a question only %s can answer",
                q.chat_id,
                user and user.id,
                q.who,
            )
            await self._answer(query, f"Only {q.who} can answer this.")
            return
        if q.future.done():
            await self._answer(query, "This question has already been answered.")
            return
        allowed = match.group(2) == "once"
        q.decided_by = f"telegram:{user.id}"
        q.future.set_result((allowed, display_name(user)))
        await self._answer(query, "Allowed once" if allowed else "Denied")

    async def _answer(self, query: CallbackQuery, text: str) -> None:
        try:
            await call_api("answerCallbackQuery", lambda: query.answer(text[:200]), self.policy)
        except (TelegramError, DeliveryDropped) as exc:
            log.info("answerCallbackQuery failed: %s", redact_text(str(exc))[:200])

    async def stop_questions(self) -> None:
        """Stopping: every open question is edited to say nobody answered; its turn is told "cancelled"."""
        open_questions = [q for q in self._questions.values() if not q.closed]
        for q in open_questions:
            if not q.future.done():
                q.future.set_result((False, ""))
        await asyncio.gather(
            *(self._close(q, STOPPED_VERDICT) for q in open_questions),
            return_exceptions=True,
        )

    async def stop(self, grace: float) -> None:
        """Ctrl-C/SIGTERM: no more waits, close the questions, cancel the turns, deliver their last lines."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        self.policy.stopping.set()
        self.runner.interrupt(STOPPED)  # first: no answer to a closed question reaches the chat
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop_questions(), max(0.1, deadline - loop.time()))
        await self.runner.shutdown(STOPPED, grace=max(0.1, deadline - loop.time()))

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
    token = token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise TelegramSetupError(f"set {TOKEN_ENV} to the bot token BotFather gave you")
    if not instance.routing.chat_ids:
        raise TelegramSetupError(
            f"bridge {instance.name} has no allowed chats: "
            f"acp-progress bridge update {instance.name} --chat-id ID"
        )
    api = api_url or settings.api_url  # ACP_PROGRESS_TELEGRAM_API_URL or [telegram] api_url
    _quiet_http_logs()
    stop = stop or asyncio.Event()
    with _scrubbing(token) as scrubber:
        try:
            with stop_on_signals(stop, runner):
                app = build_application(token, api, settings, poll_timeout)
                bridge = TelegramBridge(instance, runner, app, settings, policy=policy)
                async with app:
                    me = await app.bot.get_me()
                    log.info("bridge %s: polling as @%s", instance.name, me.username)
                    await app.start()
                    runner.ready(
                        f"bridge {instance.name}: ready — polling Telegram as @{me.username} (Ctrl-C stops)"
                    )
                    await bridge.recover()
                    polling = asyncio.create_task(bridge.poll(poll_timeout), name="telegram-poll")
                    stopping = asyncio.create_task(stop.wait())
                    await asyncio.wait([polling, stopping], return_when=asyncio.FIRST_COMPLETED)
                    log.info("bridge %s: stopping", instance.name)
                    polling.cancel()
                    stopping.cancel()
                    # Every last edit happens here, inside `async with app`: before the HTTP client
                    # shuts down.
                    await bridge.stop(settings.stop_grace)
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(app.stop(), 1.0)
                    if polling.done() and not polling.cancelled() and polling.exception() is not None:
                        raise polling.exception()  # type: ignore[misc]
        except InvalidToken:
            raise TelegramSetupError(
                f"Telegram rejected the bot token in {TOKEN_ENV}: check it (or get a new one) with @BotFather"
            ) from None
        except TelegramError as exc:
            raise TelegramSetupError(f"Telegram: {scrubber.scrub(redact_text(str(exc)))}") from None
        finally:
            await runner.close()
