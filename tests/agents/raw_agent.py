"""A hostile or broken "agent" for the relay's attack tests: it writes raw bytes, not SDK messages.

``python tests/agents/raw_agent.py [RECORD_FILE]``. Every line it receives is appended to
RECORD_FILE (to prove what the relay forwarded). What it does is chosen by the request's method:

* ``echo``          — answer ``{"echo": params}``.
* ``nan``           — answer with ``"result": NaN`` (not strict JSON).
* ``nested``        — write a 1,947-byte nested line, then answer ``echo``.
* ``hostile``       — write a nested line, a NaN notification, a UTF-16 line and an over-long line
                      (``RAW_AGENT_LONG`` bytes of spaces, then a notification naming ``TAIL``), then answer.
* ``flood``         — write ``params.count`` notifications of ``params.size`` bytes, then answer.
* ``die``           — exit with code 3 without answering.
* ``close_stdin``   — answer, close its stdin, then stay alive 30 s with stdout open.
* ``slow``          — answer after 0.5 s.
* ``session/prompt``— the first prompt is held; on a second prompt the first is answered
                      ``cancelled`` at once, then 0.6 s of silence, then the second is answered.
"""

from __future__ import annotations

import json
import os
import sys
import time

DEEP = b"[" * 973 + b"]" * 973


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def answer(message_id: object, result: object) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}).encode() + b"\n")


def main() -> None:
    record = sys.argv[1] if len(sys.argv) > 1 else None
    held_prompt: object = None
    for raw in sys.stdin.buffer:
        if record:
            with open(record, "ab") as out:
                out.write(raw)
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method, message_id = message.get("method"), message.get("id")
        if method == "echo":
            answer(message_id, {"echo": message.get("params")})
        elif method == "nan":
            write(b'{"jsonrpc":"2.0","id":' + json.dumps(message_id).encode() + b',"result":NaN}\n')
        elif method == "nested":
            write(DEEP + b"\n")
            answer(message_id, {"echo": "after nested"})
        elif method == "hostile":
            write(DEEP + b"\n")
            write(b'{"jsonrpc":"2.0","method":"session/update","params":{"x":Infinity}}\n')
            write('{"jsonrpc":"2.0","method":"utf16"}\n'.encode("utf-16"))
            long = int(os.environ.get("RAW_AGENT_LONG", "70000"))
            write(
                b" " * long + b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"TAIL"}}\n'
            )
            answer(message_id, {"echo": "after hostile"})
        elif method == "flood":
            params = message.get("params") or {}
            filler = "f" * int(params.get("size", 200))
            note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "x": filler}}
            line = json.dumps(note).encode() + b"\n"
            for _ in range(int(params.get("count", 1000))):
                write(line)
            answer(message_id, {"echo": "flooded"})
        elif method == "die":
            sys.exit(3)
        elif method == "close_stdin":
            answer(message_id, {"echo": "closing stdin"})
            os.close(0)
            time.sleep(30)
            return
        elif method == "slow":
            time.sleep(0.5)
            answer(message_id, {"echo": "slow"})
        elif method == "session/prompt":
            if held_prompt is None:
                held_prompt = message_id
                continue
            answer(held_prompt, {"stopReason": "cancelled"})
            time.sleep(0.6)
            session = message["params"]["sessionId"]
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}}
            write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {"sessionId": session, "update": update},
                    }
                ).encode()
                + b"\n"
            )
            answer(message_id, {"stopReason": "end_turn"})


if __name__ == "__main__":
    main()
