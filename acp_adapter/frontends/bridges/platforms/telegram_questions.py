"""Permission questions in a Telegram chat: **Allow once** / **Deny** buttons, answered only by the
person who sent the prompt or an approver, each bound to its request by a random nonce.

Why a module of its own: a question has a life of its own — asked, pressed (by the right person or
not), answered, timed out or cut short when the bridge stops, and edited to say how it ended, its
buttons removed — and a forged, replayed or stale callback must do nothing. The bridge
(:mod:`~acp_adapter.frontends.bridges.platforms.telegram`) hands the runner
:meth:`TelegramQuestions.ask_permission` and the callback updates to
:meth:`TelegramQuestions.on_callback`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Final

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import TelegramError
from telegram.ext import Application, ContextTypes

from acp_adapter.client.driver import PermissionRequest
from acp_adapter.frontends.bridges.chat_questions import Verdict
from acp_adapter.frontends.bridges.platforms.telegram_api import call_api
from acp_adapter.frontends.bridges.platforms.telegram_people import display_name
from acp_adapter.frontends.bridges.retry import DeliveryDropped, RetryPolicy
from acp_adapter.frontends.bridges.routes import Person
from acp_adapter.frontends.bridges.sink import split_to_fit, utf16_len
from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import visible_text

log = logging.getLogger("acp_progress.bridges.telegram")

#: a permission question's text, with room left for the verdict its closing edit appends
QUESTION_ROOM: Final = 3800
EXPIRED: Final = "This question is no longer open."
STOPPED_VERDICT: Final = "⏹ the bridge stopped; nobody answered"

_CALLBACK: Final = re.compile(r"perm:([A-Za-z0-9_-]{16}):(once|deny)")


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


class TelegramQuestions:
    """The open permission questions of one Telegram bridge."""

    def __init__(
        self,
        application: Application[Any, Any, Any, Any, Any, Any],
        policy: RetryPolicy,
        approvers: frozenset[Any],
    ) -> None:
        self.app = application
        self.policy = policy
        self.approvers = approvers
        self._questions: dict[str, _Question] = {}

    async def _send(self, chat_id: int, text: str, **kw: Any) -> Any:
        return await call_api(
            "sendMessage",
            lambda: self.app.bot.send_message(chat_id, visible_text(text), **kw),
            self.policy,
            important=True,
        )

    async def ask_permission(
        self, chat_id: Any, request: PermissionRequest, patience: float, requester: Person | None
    ) -> Verdict | bool | None:
        """Allow once / Deny under a question; only the requester (or an approver) may answer.

        Denied when nobody answers within ``patience``; ``None`` when the bridge stops first.
        """
        if self.policy.stopping.is_set():
            return None
        q = await self._new_question(int(chat_id), request, requester)
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
            return await self._verdict(q, patience)
        finally:
            self._questions.pop(q.nonce, None)

    async def _new_question(
        self, chat_id: int, request: PermissionRequest, requester: Person | None
    ) -> _Question:
        """The question and who may decide it: the requester and the approvers (named in the text
        a stranger's tap is answered with)."""
        deciders = set(self.approvers)
        if requester is not None:
            deciders.add(requester.id)
        who = requester.name if requester is not None else "an approver"
        if requester is not None and self.approvers - {requester.id}:
            who += " or an approver"
        return _Question(
            nonce=secrets.token_urlsafe(12),
            chat_id=chat_id,
            text=await self._question_text(chat_id, request),
            deciders=frozenset(deciders),
            who=who,
            future=asyncio.get_running_loop().create_future(),
        )

    async def _verdict(self, q: _Question, patience: float) -> Verdict | bool | None:
        """Wait for a decider's tap; the question message then says how it was decided."""
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

    async def _question_text(self, chat_id: int, request: PermissionRequest) -> str:
        """``🔐 Allow <title>?`` and, when the title does not hold it, the whole command under it:
        nobody can approve what they cannot see. A command too long for one question is posted
        whole first (in as many messages as it takes), and the question says so."""
        question = visible_text(redact_text(f"🔐 Allow {request.title}?"))
        command = request.command_beside_title
        if command is None:
            return question
        whole = visible_text(redact_text(command))
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
                    visible_text(f"{q.text} — {verdict}"), chat_id=q.chat_id, message_id=mid
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
            await call_api("answerCallbackQuery", lambda: query.answer(visible_text(text)[:200]), self.policy)
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
