"""What the embedded model answers a prompt that needs no tools: arithmetic done exactly, words
counted, text reversed, a greeting, a few topics it knows (ACP, the thinking card, tool cards,
JSON-RPC, stdio, asyncio), attached images acknowledged, and otherwise a plan built on the prompt's
own keywords.

Why a module of its own: a deterministic, relevant reply is what makes the offline model worth
watching, and its knowledge, its word lists and its safe arithmetic evaluator are a job apart
from requesting tool calls (:mod:`~acp_adapter.models.embedded_calls`) or streaming
(:mod:`~acp_adapter.models.embedded`). It stays linear in the prompt and honours a cancel.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from typing import Any

from acp_adapter.cancel import CancelToken
from acp_adapter.text import ellipsize

#: What the prompt's text says of an attached image (``acp_adapter.text.prompt_to_text``).
IMAGE_NOTE = re.compile(r"\[image attachment: (?P<mime>[^,\]]{1,100}), (?P<size>[\d,]{1,20}) bytes\]")


def acknowledge_images(found: Sequence[tuple[str, str]]) -> str:
    """The embedded model's answer to attached images: what it received (it cannot see them)."""
    listed = "; ".join(f"{mime} ({size} bytes)" for mime, size in found)
    what = "an image" if len(found) == 1 else f"{len(found)} images"
    return (
        f"I received {what}: {listed}. I'm the offline embedded model, so I can't look at the "
        "picture itself; with the OpenAI back-end the model sees it."
    )


_KNOWLEDGE: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("acp", "agent client protocol"),
        "The Agent Client Protocol (ACP) is JSON-RPC 2.0 between an editor and a coding agent, usually "
        "over the agent's stdin and stdout. The client opens a session with `session/new`, sends the "
        "user's turn with `session/prompt`, and the agent streams `session/update` notifications — "
        "message chunks, thoughts, plans and tool calls — until it answers the prompt with a stop reason.",
    ),
    (
        ("spinner", "thinking card", "think card", "heartbeat", "stuck"),
        "While the model works, this agent opens a virtual tool card of kind `think` titled "
        "\u201cThinking...\u201d. A heartbeat updates it with the elapsed time so you can tell a slow model "
        "from a dead one, and the card is always closed — completed or failed — before the turn ends, "
        "so nothing spins forever.",
    ),
    (
        ("tool call", "tool card", "tools"),
        "Each tool call is shown as its own card keyed by the model's tool-call id: it starts in progress "
        "with a readable title such as \u201cSearching for TODO\u201d, reports progress while it runs, and "
        "ends completed with its result or failed with a short reason.",
    ),
    (
        ("json-rpc", "jsonrpc"),
        "JSON-RPC 2.0 is a tiny protocol: requests carry an id, a method and params and get exactly one "
        "response with a result or an error; notifications have no id and get no response. Over stdio "
        "each message is one line of JSON.",
    ),
    (
        ("stdout", "stdio"),
        "When a protocol runs over stdio, stdout belongs to the protocol. A stray `print` or a child "
        "process inheriting file descriptor 1 corrupts the stream, so this agent keeps a private copy of "
        "fd 1 for JSON-RPC and points fd 1 and `sys.stdout` at stderr.",
    ),
    (
        ("asyncio", "anyio", "event loop"),
        "An event loop runs many coroutines on one thread; blocking work belongs in a worker thread. "
        "Here the agent loop is synchronous and runs in a worker, and every update crosses to the event "
        "loop through one ordered path so the client sees them in the order they happened.",
    ),
    (
        ("python",),
        "Python is a general-purpose language with a large standard library; for concurrent I/O it "
        "offers threads, asyncio and libraries such as anyio that run on top of it.",
    ),
)

_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening)|howdy|yo)\b", re.I)
_ARITH = re.compile(
    r"(?:what\s+is|what's|compute|calculate|=)?\s*(?P<expr>[-+*/().%\d\s^]{3,120})\??\s*$", re.I
)
_COUNT_WORDS = re.compile(r"\bcount\s+(?:the\s+)?words\s+(?:in|of)\s*:?\s*(?P<t>.+)$", re.I | re.S)
_REVERSE = re.compile(r"\breverse\s*:?\s*(?P<t>.+)$", re.I | re.S)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_STOP = frozenset(
    [
        "about",
        "after",
        "again",
        "also",
        "because",
        "been",
        "before",
        "being",
        "between",
        "could",
        "does",
        "doing",
        "from",
        "have",
        "having",
        "here",
        "into",
        "just",
        "like",
        "more",
        "most",
        "much",
        "need",
        "only",
        "other",
        "over",
        "please",
        "should",
        "some",
        "such",
        "than",
        "that",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "very",
        "want",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "with",
        "would",
        "your",
        "yours",
        "tell",
        "explain",
        "show",
        "give",
        "make",
        "know",
    ]
)

_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _safe_eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _safe_eval(node.body)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _safe_eval(node.left), _safe_eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_safe_eval(node.operand))
    raise ValueError("unsupported expression")


#: The expression is at most 120 characters at the very end of the prompt: only the tail is searched.
_ARITH_TAIL = 400


def _arithmetic(prompt: str) -> str | None:
    m = _ARITH.search(prompt.strip()[-_ARITH_TAIL:])
    if m is None or not re.search(r"\d\s*[-+*/%^]\s*[\d(]", m.group("expr")):
        return None
    expr = m.group("expr").replace("^", "**").strip()
    try:
        value = _safe_eval(ast.parse(expr, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return None
    shown = int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(shown, float):
        shown = round(shown, 10)
    return f"{expr.replace('**', '^')} = {shown}"


def compose_reply(prompt: str, cancel: CancelToken | None = None) -> str:
    """A deterministic, relevant reply to a prompt that needs no tools.

    Linear in the prompt, and ``cancel`` is checked inside the one loop over its words, so a
    40,000-word prompt neither takes seconds nor delays a cancel.
    """
    text = " ".join(prompt.split())
    if not text:
        return "I didn't receive any text. Ask me something, or ask me to search, read or list files."
    if (result := _arithmetic(text)) is not None:
        return (
            f"{result}.\n\nI evaluated the expression exactly as written, with the usual operator precedence."
        )
    if m := _COUNT_WORDS.search(text):
        words = m.group("t").split()
        return f"That text has {len(words)} word{'s' if len(words) != 1 else ''}."
    if m := _REVERSE.search(text):
        return f"Reversed: {m.group('t')[::-1]}"
    lowered = text.lower()
    if _GREETING.search(text) and len(text.split()) <= 6:
        return (
            "Hello! I'm the acp-progress embedded model, running offline inside this agent. While I think, "
            "your client shows a live \u201cThinking...\u201d card. Ask me a question, or ask me to search "
            "the workspace, read a file, list files or run a command."
        )
    hits = [answer for keys, answer in _KNOWLEDGE if any(k in lowered for k in keys)]
    if hits:
        return "\n\n".join(hits[:2])
    keywords: list[str] = []
    seen: set[str] = set()
    for index, match in enumerate(_WORD.finditer(text)):
        if cancel is not None and index % 1024 == 0:
            cancel.raise_if_cancelled()
        w = match.group(0).lower().strip("'-")
        if w not in _STOP and w not in seen:
            seen.add(w)
            keywords.append(w)
            if len(keywords) == 4:  # only the first four make the topic
                break
    topic = ", ".join(keywords[:4]) if keywords else "your request"
    quoted = ellipsize(text, 120)
    return (
        f"You asked: \u201c{quoted}\u201d\n\n"
        f"I'm an offline model, so I can't look this up, but here is how I would work through it:\n"
        f"1. Pin down what matters most about {topic}.\n"
        f"2. Gather the facts from the workspace — I can search it, read files, list the tree or run a "
        f"command if you ask.\n"
        f"3. Check the result against what you expected and report back with the evidence.\n\n"
        f"Tell me which files or commands to start with and I'll do it."
    )
