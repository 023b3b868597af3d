"""An ACP agent whose answers the client's line reader must refuse, or that fails with details.

``python tests/agents/refusing_agent.py MODE`` (stdlib only: it writes raw bytes, not SDK messages).
It answers ``initialize`` and ``session/new`` normally, except in the ``*-error`` modes, and answers
``session/prompt`` as MODE says:

* ``nan``        — ``{"jsonrpc":"2.0","id":N,"result":{"stopReason":NaN}}`` (not strict JSON).
* ``deep``       — the answer's result nested 300 levels deep (past the 256-level limit).
* ``long``       — the answer padded past ``ACP_PROGRESS_MAX_LINE_BYTES`` (set by the test).
* ``init-error`` — answer ``initialize`` with ``-32603`` and ``data.details``.
* ``new-error``  — answer ``session/new`` with ``-32603`` and ``data.details``.

After a refused prompt answer it stays alive and silent: a client that waits for another answer hangs.
"""

from __future__ import annotations

import json
import os
import sys
import time


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def head(message_id: object) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + json.dumps(message_id).encode() + b","


def answer(message_id: object, result: object) -> None:
    write(head(message_id) + b'"result":' + json.dumps(result).encode() + b"}\n")


def fail(message_id: object, details: str) -> None:
    error = {"code": -32603, "message": "Internal error", "data": {"details": details}}
    write(head(message_id) + b'"error":' + json.dumps(error).encode() + b"}\n")


def refused_answer(mode: str, message_id: object) -> bytes:
    if mode == "nan":
        return head(message_id) + b'"result":{"stopReason":NaN}}\n'
    if mode == "deep":
        return head(message_id) + b'"result":' + b"[" * 300 + b"]" * 300 + b"}\n"
    if mode == "long":
        size = int(os.environ["ACP_PROGRESS_MAX_LINE_BYTES"]) + 10
        return head(message_id) + b'"result":{"stopReason":"end_turn","pad":"' + b"x" * size + b'"}}\n'
    raise SystemExit(f"unknown mode {mode}")


def main() -> None:
    mode = sys.argv[1]
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, message_id = message.get("method"), message.get("id")
        if method == "initialize":
            if mode == "init-error":
                fail(message_id, "ANTHROPIC_API_KEY is not set; export it or pass --model")
            else:
                answer(message_id, {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []})
        elif method == "session/new":
            if mode == "new-error":
                fail(message_id, "the workspace /nowhere does not exist")
            else:
                answer(message_id, {"sessionId": "refusing-1"})
        elif method == "session/prompt":
            write(refused_answer(mode, message_id))
    time.sleep(0.1)


if __name__ == "__main__":
    main()
