"""A strict fake Telegram Bot API server on loopback, for end-to-end bridge tests.

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, an ephemeral port) that parses
form-encoded and JSON bodies and enforces the rules the bridge must respect, answering with
Telegram's own error shapes and descriptions:

* ``/bot<token>/METHOD`` only; a wrong token is 401, an unknown method 404;
* ``sendMessage``/``editMessageText``: text must be non-empty and at most 4096 UTF-16 code
  units; only the bot's own messages can be edited; an edit that changes nothing is
  400 "message is not modified";
* ``setMessageReaction``: only the emoji Telegram accepts (✅ and ❌ are *not* among them);
* ``sendChatAction``: only the documented actions;
* ``answerCallbackQuery``: only ids of queries it delivered, once each, text at most 200 characters;
* inline buttons: callback data of 1-64 bytes (``BUTTON_DATA_INVALID`` otherwise);
* ``getUpdates`` delivers only the update types of the last ``allowed_updates`` it was given (as
  Telegram does), unless a test sets :attr:`FakeTelegram.ignore_allowed_updates` to play a server
  (or a proxy) that sends them anyway;
* any method can be told to answer 429 with ``retry_after`` (:meth:`FakeTelegram.rate_limit`) or
  to fail (:meth:`FakeTelegram.fault`): a JSON 500, an HTML 500 page, a 200 whose body is not JSON,
  or a reply that never comes (the client times out; nothing was done).

Tests push updates (:meth:`FakeTelegram.user_says` in private or group chats, by any user,
:meth:`FakeTelegram.press` by any user, :meth:`FakeTelegram.edit_by_user`,
:meth:`FakeTelegram.channel_post`) and inspect what the bot did (:attr:`FakeTelegram.calls`,
:meth:`FakeTelegram.chat_view`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_TEXT = 4096

# The reaction emoji the Bot API accepts (ReactionTypeEmoji, Bot API 7.x documentation).
VALID_REACTIONS = frozenset(
    [
        "👍",
        "👎",
        "❤",
        "🔥",
        "🥰",
        "👏",
        "😁",
        "🤔",
        "🤯",
        "😱",
        "🤬",
        "😢",
        "🎉",
        "🤩",
        "🤮",
        "💩",
        "🙏",
        "👌",
        "🕊",
        "🤡",
        "🥱",
        "🥴",
        "😍",
        "🐳",
        "❤\u200d🔥",
        "🌚",
        "🌭",
        "💯",
        "🤣",
        "⚡",
        "🍌",
        "🏆",
        "💔",
        "🤨",
        "😐",
        "🍓",
        "🍾",
        "💋",
        "🖕",
        "😈",
        "😴",
        "😭",
        "🤓",
        "👻",
        "👨\u200d💻",
        "👀",
        "🎃",
        "🙈",
        "😇",
        "😨",
        "🤝",
        "✍",
        "🤗",
        "🫡",
        "🎅",
        "🎄",
        "☃",
        "💅",
        "🤪",
        "🗿",
        "🆒",
        "💘",
        "🙉",
        "🦄",
        "😘",
        "💊",
        "🙊",
        "😎",
        "👾",
        "🤷",
        "🤷\u200d♂",
        "🤷\u200d♀",
        "😡",
    ]
)
CHAT_ACTIONS = frozenset(
    [
        "choose_sticker",
        "find_location",
        "record_video",
        "record_video_note",
        "record_voice",
        "typing",
        "upload_document",
        "upload_photo",
        "upload_video",
        "upload_video_note",
        "upload_voice",
    ]
)
JSON_FIELDS = frozenset({"reply_markup", "reaction", "allowed_updates", "entities", "link_preview_options"})
BOT: dict[str, Any] = {"id": 999000, "is_bot": True, "first_name": "Bridge", "username": "bridge_test_bot"}


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    body: bytes
    at: float
    status: int = 200
    fault: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the HTTP handler sends: a status, a content type and raw bytes (or nothing: ``hang``)."""

    status: int
    body: bytes
    content_type: str = "application/json"
    hang: float = 0.0


FAULTS = ("json500", "html500", "malformed", "timeout")


@dataclass
class StoredMessage:
    message_id: int
    chat_id: int
    text: str
    from_bot: bool
    reply_markup: Any = None
    reactions: list[str] = field(default_factory=list)


class _Server(ThreadingHTTPServer):
    """Telegram takes every connection a bridge opens at once; the standard library's listen
    backlog of 5 would leave a burst of sends (refusals to many strangers) waiting on a
    retransmitted connect, or failing, on the fake's side only."""

    request_queue_size = 128


class FakeTelegram:
    """State and rules of the fake Bot API (thread-safe; the HTTP handler calls :meth:`dispatch`)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.messages: dict[tuple[int, int], StoredMessage] = {}
        self.chats: set[int] = set()
        self._message_ids = itertools.count(1)
        self._update_ids = itertools.count(1)
        #: the id of the latest update a person (or a press) produced
        self.last_update_id = 0
        self._updates: list[dict[str, Any]] = []
        self._queries: dict[str, bool] = {}  # callback query id -> answered
        self._limits: dict[str, list[int]] = {}
        self._faults: dict[str, list[str]] = {}
        self.hang_seconds = 3.0
        #: longest an empty ``getUpdates`` long poll is held (Telegram holds it up to the client's
        #: ``timeout``; a test waiting for the poll after next sets this short)
        self.max_poll_seconds = 5.0
        self.chat_types: dict[int, str] = {}
        self.names: dict[int, str] = {}
        self.allowed_updates: list[str] | None = None
        self.ignore_allowed_updates = False
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ server lifecycle

    @property
    def api_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeTelegram:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                reply = fake.handle_raw(self.path, self.headers.get("Content-Type", ""), body)
                try:
                    if reply.hang:
                        time.sleep(reply.hang)  # the client has timed out by now
                        self.close_connection = True
                        return
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a long poll while shutting down

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: ``shutdown`` waits for the serving loop to look (0.5 s by default)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ test controls

    def group(self, chat_id: int, kind: str = "supergroup") -> int:
        """Make ``chat_id`` a group chat (Telegram's group ids are negative)."""
        assert chat_id < 0, "group chat ids are negative"
        with self._cond:
            self.chat_types[chat_id] = kind
            self.chats.add(chat_id)
        return chat_id

    def user_says(self, chat_id: int, text: str, user_id: int | None = None) -> int:
        """A person (``user_id``; default: the private chat's owner) writes ``text`` in ``chat_id``."""
        with self._cond:
            self.chats.add(chat_id)
            mid = next(self._message_ids)
            self.messages[(chat_id, mid)] = StoredMessage(mid, chat_id, text, from_bot=False)
            message = self._message_json(self.messages[(chat_id, mid)], user_id or chat_id)
            self._push("message", message)
            return mid

    def edit_by_user(self, chat_id: int, message_id: int, text: str, user_id: int | None = None) -> None:
        """The person edits their earlier message: an ``edited_message`` update."""
        with self._cond:
            stored = self.messages[(chat_id, message_id)]
            stored.text = text
            message = self._message_json(stored, user_id or chat_id)
            message["edit_date"] = int(time.time())
            self._push("edited_message", message)

    def channel_post(self, chat_id: int, text: str) -> int:
        """A post in a channel (no ``from`` user): a ``channel_post`` update."""
        with self._cond:
            self.chats.add(chat_id)
            self.chat_types[chat_id] = "channel"
            mid = next(self._message_ids)
            self.messages[(chat_id, mid)] = StoredMessage(mid, chat_id, text, from_bot=False)
            message = self._message_json(self.messages[(chat_id, mid)], 0)
            message.pop("from")
            message["sender_chat"] = message["chat"]
            self._push("channel_post", message)
            return mid

    def _push(self, kind: str, payload: dict[str, Any]) -> None:
        self.last_update_id = next(self._update_ids)
        self._updates.append({"update_id": self.last_update_id, kind: payload})
        self._cond.notify_all()

    def taken(self, update_id: int) -> bool:
        """Whether the bot has asked for the updates after ``update_id``: it has taken that one."""
        return any(int(c.params.get("offset") or 0) > update_id for c in self.calls_of("getUpdates"))

    def press(
        self, chat_id: int, message_id: int, data: str, user_id: int | None = None, *, on: int | None = None
    ) -> str:
        """``user_id`` presses an inline button with callback ``data`` under a bot message.

        ``data`` is whatever the client sends, so a test can forge it; ``on`` forges which message
        the press claims to come from (default: ``message_id``)."""
        with self._cond:
            stored = self.messages[(chat_id, on if on is not None else message_id)]
            qid = f"cq{next(self._update_ids)}"
            self._queries[qid] = False
            query = {
                "id": qid,
                "from": self._user(user_id or chat_id),
                "chat_instance": f"ci{chat_id}",
                "data": data,
                "message": self._message_json(stored, BOT["id"]),
            }
            self._push("callback_query", query)
            return qid

    def fault(self, method: str, kind: str, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` fail with ``kind`` (one of :data:`FAULTS`)."""
        assert kind in FAULTS, kind
        with self._cond:
            self._faults.setdefault(method, []).extend([kind] * times)

    def answers_to(self, query_id: str) -> list[str]:
        """The texts the bot answered callback query ``query_id`` with."""
        with self._cond:
            return [
                str(c.params.get("text", ""))
                for c in self.calls
                if c.method == "answerCallbackQuery" and c.params.get("callback_query_id") == query_id
            ]

    def rate_limit(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer 429 with ``retry_after``."""
        with self._cond:
            self._limits.setdefault(method, []).extend([retry_after] * times)

    def calls_of(self, method: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.method == method and c.status == 200]

    def chat_view(self, chat_id: int) -> list[str]:
        """What the chat shows now: every message's current text, oldest first (bot's and person's)."""
        with self._cond:
            return [m.text for (cid, _), m in sorted(self.messages.items()) if cid == chat_id]

    def bot_messages(self, chat_id: int) -> list[StoredMessage]:
        with self._cond:
            return [m for (cid, _), m in sorted(self.messages.items()) if cid == chat_id and m.from_bot]

    def wait_until(self, predicate: Any, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; calls so far: {[(c.method, c.params) for c in self.calls]}")
            time.sleep(0.02)

    # ------------------------------------------------------------------ HTTP → methods

    def handle_raw(self, path: str, content_type: str, body: bytes) -> Reply:
        """One HTTP request: fault injection first, then the method (as JSON)."""
        method = path.rsplit("/", 1)[-1].split("?")[0]
        with self._cond:
            pending = self._faults.get(method) if path.startswith(f"/bot{self.token}/") else None
            kind = pending.pop(0) if pending else None
            if kind is not None:
                call = Call(
                    method, self._parse_quietly(content_type, body), body, time.monotonic(), fault=kind
                )
                call.status = 500 if kind.endswith("500") else 0
                self.calls.append(call)
        if kind == "json500":
            data = {"ok": False, "error_code": 500, "description": "Internal Server Error"}
            return Reply(500, json.dumps(data).encode())
        if kind == "html500":
            page = b"<html><head><title>500 Internal Server Error</title></head><body>nginx</body></html>"
            return Reply(500, page, "text/html")
        if kind == "malformed":
            return Reply(200, b'{"ok": true, "result": {"message_id": ')
        if kind == "timeout":
            return Reply(0, b"", hang=self.hang_seconds)
        status, payload = self.handle_http(path, content_type, body)
        return Reply(status, json.dumps(payload).encode())

    def _parse_quietly(self, content_type: str, body: bytes) -> dict[str, Any]:
        try:
            return self._parse(content_type, body)
        except ValueError:
            return {}

    def handle_http(self, path: str, content_type: str, body: bytes) -> tuple[int, dict[str, Any]]:
        prefix = f"/bot{self.token}/"
        if not path.startswith(prefix):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        method = path[len(prefix) :].split("?")[0]
        try:
            params = self._parse(content_type, body)
        except ValueError as exc:
            return 400, {"ok": False, "error_code": 400, "description": f"Bad Request: {exc}"}
        call = Call(method, params, body, time.monotonic())
        with self._cond:
            self.calls.append(call)
            pending = self._limits.get(method)
            if pending:
                retry = pending.pop(0)
                call.status = 429
                return 429, {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {retry}",
                    "parameters": {"retry_after": retry},
                }
        try:
            result = self.dispatch(method, params)
        except ApiError as exc:
            call.status = exc.code
            out: dict[str, Any] = {"ok": False, "error_code": exc.code, "description": exc.description}
            if exc.parameters:
                out["parameters"] = exc.parameters
            return exc.code, out
        return 200, {"ok": True, "result": result}

    @staticmethod
    def _parse(content_type: str, body: bytes) -> dict[str, Any]:
        if not body:
            return {}
        if content_type.startswith("application/json"):
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError("JSON body must be an object")
            return data
        if content_type.startswith("application/x-www-form-urlencoded"):
            out: dict[str, Any] = {}
            pairs = urllib.parse.parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=True)
            for key, value in pairs:
                out[key] = json.loads(value) if key in JSON_FIELDS else value
            return out
        raise ValueError(f"unsupported content type {content_type!r}")

    def dispatch(self, method: str, p: dict[str, Any]) -> Any:
        handler = getattr(self, f"_m_{method}", None)
        if handler is None:
            raise ApiError(404, "Not Found")
        return handler(p)

    # ------------------------------------------------------------------ helpers

    def _user(self, user_id: int) -> dict[str, Any]:
        return {"id": user_id, "is_bot": False, "first_name": self.names.get(user_id, "Person")}

    def _message_json(self, m: StoredMessage, from_id: int) -> dict[str, Any]:
        kind = self.chat_types.get(m.chat_id, "private")
        chat: dict[str, Any] = {"id": m.chat_id, "type": kind}
        if kind == "private":
            chat["first_name"] = self.names.get(m.chat_id, "Person")
        else:
            chat["title"] = f"{kind} {m.chat_id}"
        out: dict[str, Any] = {
            "message_id": m.message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": BOT if m.from_bot else self._user(from_id),
            "text": m.text,
        }
        if m.reply_markup:
            out["reply_markup"] = m.reply_markup
        return out

    @staticmethod
    def _int(p: dict[str, Any], name: str) -> int:
        if name not in p:
            raise ApiError(400, f"Bad Request: {name} is empty")
        try:
            return int(p[name])
        except (TypeError, ValueError):
            raise ApiError(400, f"Bad Request: invalid {name} specified") from None

    def _chat(self, p: dict[str, Any]) -> int:
        chat_id = self._int(p, "chat_id")
        if chat_id not in self.chats:
            raise ApiError(400, "Bad Request: chat not found")
        return chat_id

    @staticmethod
    def _text(p: dict[str, Any]) -> str:
        text = p.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_units(text) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        return text

    @staticmethod
    def _markup(p: dict[str, Any]) -> Any:
        markup = p.get("reply_markup")
        if markup is None:
            return None  # editMessageText without reply_markup removes the inline keyboard
        if not isinstance(markup, dict):
            raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
        rows = markup.get("inline_keyboard")
        if rows is not None:
            for row in rows:
                for button in row:
                    data = button.get("callback_data")
                    if data is not None and not 1 <= len(str(data).encode()) <= 64:
                        raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
            if not rows:
                return None
        return markup

    def _message(self, chat_id: int, p: dict[str, Any]) -> StoredMessage:
        mid = self._int(p, "message_id")
        m = self.messages.get((chat_id, mid))
        if m is None:
            raise ApiError(400, "Bad Request: message to edit not found")
        return m

    # ------------------------------------------------------------------ methods

    def _m_getMe(self, p: dict[str, Any]) -> Any:
        return BOT

    def _m_deleteWebhook(self, p: dict[str, Any]) -> Any:
        return True

    def _m_getUpdates(self, p: dict[str, Any]) -> Any:
        offset = int(p.get("offset") or 0)
        timeout = min(float(p.get("timeout") or 0), self.max_poll_seconds)
        deadline = time.monotonic() + timeout
        with self._cond:
            if "allowed_updates" in p:  # Telegram remembers the last list it was given
                self.allowed_updates = list(p["allowed_updates"]) or None

            def wanted() -> list[dict[str, Any]]:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
                if self.ignore_allowed_updates or self.allowed_updates is None:
                    return list(self._updates)
                return [u for u in self._updates if any(k in u for k in self.allowed_updates)]

            while not wanted() and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            return wanted()

    def _m_sendMessage(self, p: dict[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(p)
            text = self._text(p)
            markup = self._markup(p)
            m = StoredMessage(next(self._message_ids), chat_id, text, from_bot=True, reply_markup=markup)
            self.messages[(chat_id, m.message_id)] = m
            return self._message_json(m, BOT["id"])

    def _m_editMessageText(self, p: dict[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(p)
            m = self._message(chat_id, p)
            text = self._text(p)
            if not m.from_bot:
                raise ApiError(400, "Bad Request: message can't be edited")
            markup = self._markup(p)
            if text == m.text and markup == m.reply_markup:
                raise ApiError(
                    400,
                    "Bad Request: message is not modified: specified new message content and reply "
                    "markup are exactly the same as a current content and reply markup of the message",
                )
            m.text = text
            m.reply_markup = markup
            return self._message_json(m, BOT["id"])

    def _m_deleteMessage(self, p: dict[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(p)
            mid = self._int(p, "message_id")
            if self.messages.pop((chat_id, mid), None) is None:
                raise ApiError(400, "Bad Request: message to delete not found")
            return True

    def _m_sendChatAction(self, p: dict[str, Any]) -> Any:
        with self._cond:
            self._chat(p)
            if p.get("action") not in CHAT_ACTIONS:
                raise ApiError(400, "Bad Request: wrong parameter action in request")
            return True

    def _m_setMessageReaction(self, p: dict[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(p)
            m = self._message(chat_id, p)
            reaction = p.get("reaction") or []
            if not isinstance(reaction, list) or len(reaction) > 1:
                raise ApiError(400, "Bad Request: REACTIONS_TOO_MANY")
            emojis: list[str] = []
            for r in reaction:
                valid = isinstance(r, dict) and r.get("type") == "emoji" and r.get("emoji") in VALID_REACTIONS
                if not valid:
                    raise ApiError(400, "Bad Request: REACTION_INVALID")
                emojis.append(r["emoji"])
            m.reactions = emojis
            return True

    def _m_answerCallbackQuery(self, p: dict[str, Any]) -> Any:
        with self._cond:
            qid = p.get("callback_query_id")
            if qid not in self._queries or self._queries[qid]:
                raise ApiError(
                    400, "Bad Request: query is too old and response timeout expired or query ID is invalid"
                )
            if len(str(p.get("text", ""))) > 200:
                raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
            self._queries[qid] = True
            return True


# ---------------------------------------------------------------------------- driving a bridge


async def until(predicate: Callable[[], bool], within: float = 30.0, what: str = "") -> None:
    """Wait (polling, bounded) until ``predicate()`` holds; fail naming ``what`` otherwise."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def telegram_bridge(
    fake: FakeTelegram,
    instance: Any,
    *,
    token: str,
    window: float,
    settings: Any = None,
    policy: Any = None,
    **runner_kw: Any,
) -> AsyncIterator[Any]:
    """``run_telegram`` for ``instance`` against ``fake`` until the block ends (then stopped, awaited)."""
    from acp_adapter.frontends.bridges.options import BridgeOptions
    from acp_adapter.frontends.bridges.platforms.telegram import run_telegram
    from acp_adapter.frontends.bridges.runner import BridgeRunner
    from tests.helpers.acp_agent import agent_env

    runner = BridgeRunner(instance, BridgeOptions(agent_env=agent_env(), window=window, **runner_kw))
    stop = asyncio.Event()
    extra = {"settings": settings} if settings is not None else {}
    task = asyncio.create_task(
        run_telegram(
            instance,
            runner=runner,
            token=token,
            api_url=fake.api_url,
            stop=stop,
            poll_timeout=1,
            policy=policy,
            **extra,
        )
    )
    await until(lambda: bool(fake.calls_of("getUpdates")), what="polling")
    try:
        yield runner
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
