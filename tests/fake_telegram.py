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
* ``answerCallbackQuery``: only ids of queries it delivered, once each;
* any method can be told to answer 429 with ``retry_after`` (:meth:`FakeTelegram.rate_limit`).

Tests push updates (:meth:`FakeTelegram.user_says`, :meth:`FakeTelegram.press`) and inspect
what the bot did (:attr:`FakeTelegram.calls`, :meth:`FakeTelegram.chat_view`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.parse
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
BOT = {"id": 999000, "is_bot": True, "first_name": "Bridge", "username": "bridge_test_bot"}


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


@dataclass
class StoredMessage:
    message_id: int
    chat_id: int
    text: str
    from_bot: bool
    reply_markup: Any = None
    reactions: list[str] = field(default_factory=list)


class FakeTelegram:
    """State and rules of the fake Bot API (thread-safe; the HTTP handler calls :meth:`dispatch`)."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.calls: list[Call] = []
        self.messages: dict[tuple[int, int], StoredMessage] = {}
        self.chats: set[int] = set()
        self._message_ids = itertools.count(1)
        self._update_ids = itertools.count(1)
        self._updates: list[dict[str, Any]] = []
        self._queries: dict[str, bool] = {}  # callback query id -> answered
        self._limits: dict[str, list[int]] = {}
        self._cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ server lifecycle

    @property
    def api_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeTelegram:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                status, payload = fake.handle_http(self.path, self.headers.get("Content-Type", ""), body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on a long poll while shutting down

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ test controls

    def user_says(self, chat_id: int, text: str, user_id: int | None = None) -> int:
        """A person writes ``text`` in ``chat_id``; returns the new message id."""
        with self._cond:
            self.chats.add(chat_id)
            mid = next(self._message_ids)
            self.messages[(chat_id, mid)] = StoredMessage(mid, chat_id, text, from_bot=False)
            message = self._message_json(self.messages[(chat_id, mid)], user_id or chat_id)
            self._updates.append({"update_id": next(self._update_ids), "message": message})
            self._cond.notify_all()
            return mid

    def press(self, chat_id: int, message_id: int, data: str, user_id: int | None = None) -> str:
        """A person presses an inline button with callback ``data`` under a bot message."""
        with self._cond:
            stored = self.messages[(chat_id, message_id)]
            qid = f"cq{next(self._update_ids)}"
            self._queries[qid] = False
            query = {
                "id": qid,
                "from": self._user(user_id or chat_id),
                "chat_instance": f"ci{chat_id}",
                "data": data,
                "message": self._message_json(stored, BOT["id"]),
            }
            self._updates.append({"update_id": next(self._update_ids), "callback_query": query})
            self._cond.notify_all()
            return qid

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

    @staticmethod
    def _user(user_id: int) -> dict[str, Any]:
        return {"id": user_id, "is_bot": False, "first_name": "Person"}

    @staticmethod
    def _message_json(m: StoredMessage, from_id: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "message_id": m.message_id,
            "date": int(time.time()),
            "chat": {"id": m.chat_id, "type": "private", "first_name": "Person"},
            "from": BOT if m.from_bot else FakeTelegram._user(from_id),
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
        timeout = min(float(p.get("timeout") or 0), 5.0)
        deadline = time.monotonic() + timeout
        with self._cond:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            while not self._updates and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            return list(self._updates)

    def _m_sendMessage(self, p: dict[str, Any]) -> Any:
        with self._cond:
            chat_id = self._chat(p)
            text = self._text(p)
            markup = p.get("reply_markup")
            if markup is not None and not isinstance(markup, dict):
                raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
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
            markup = p.get("reply_markup")
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
            self._queries[qid] = True
            return True
