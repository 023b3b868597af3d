"""The embedded offline model: deterministic, no network, but a real reply worth watching.

It exists so the main job and the tests run on a fresh machine. It waits a configurable "think"
delay (honouring cancellation), then either requests real tool calls the prompt asks for
("search for TODO", "read README.md", "run ls -la", "list files") or streams a composed answer in
small chunks. After tool results arrive it answers from them.
"""

from __future__ import annotations

import ast
import json
import operator
import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.models.base import (
    Message,
    ModelEvent,
    PlanUpdate,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from acp_adapter.models.plans import steps_from
from acp_adapter.text import ellipsize

CONTEXT_WINDOW = 32_768


class EmbeddedModel:
    """Rule-based streaming model with realistic latency."""

    name = "embedded"

    def __init__(
        self, think_delay: float = 2.0, chunk_delay: float = 0.03, follow_up_factor: float = 0.5
    ) -> None:
        self.think_delay = think_delay
        self.chunk_delay = chunk_delay
        self.follow_up_factor = follow_up_factor

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], cancel: CancelToken
    ) -> Iterator[ModelEvent]:
        last = messages[-1] if messages else Message("user", "")
        follow_up = last.role == "tool"
        delay = self.think_delay * (self.follow_up_factor if follow_up else 1.0)
        if cancel.wait(delay):
            raise TurnCancelled(cancel.reason)
        prompt_tokens = sum(_estimate_tokens(m.content) for m in messages)
        if not follow_up:
            direct = explicit_call(last.content, [t.name for t in tools]) or write_call(
                last.content, {t.name for t in tools}
            )
            steps = [] if direct is not None else planned_steps(last.content, {t.name for t in tools})
            calls = [direct] if direct is not None else [call for _, step in steps for call in step]
            if len(steps) >= 2:  # several steps: the client sees them as a plan, moved along by the loop
                yield PlanUpdate(steps_from([(text, [c.id for c in step]) for text, step in steps]).steps)
            if calls:
                for call in calls:
                    cancel.raise_if_cancelled()
                    yield ToolCallRequest(call)
                out = sum(_estimate_tokens(str(c.arguments)) for c in calls)
                yield UsageReport(prompt_tokens, out, prompt_tokens + out, CONTEXT_WINDOW)
                return
            text = compose_reply(last.content, cancel)
            images = _IMAGE_NOTE.findall(last.content)
            if images:
                rest = _IMAGE_NOTE.sub("", last.content).strip()
                text = acknowledge_images(images) + ("\n\n" + compose_reply(rest, cancel) if rest else "")
        else:
            text = answer_from_tools(messages)
        for chunk in _chunks(text):
            if cancel.wait(self.chunk_delay) if self.chunk_delay > 0 else cancel.cancelled:
                raise TurnCancelled(cancel.reason)
            yield TextDelta(chunk)
        out = _estimate_tokens(text)
        yield UsageReport(prompt_tokens, out, prompt_tokens + out, CONTEXT_WINDOW)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _chunks(text: str, words_per_chunk: int = 3) -> Iterator[str]:
    """Split into chunks of a few words, keeping whitespace so the joined chunks equal ``text``."""
    parts = re.findall(r"\S+\s*|\s+", text)
    for i in range(0, len(parts), words_per_chunk):
        yield "".join(parts[i : i + words_per_chunk])


def _new_call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"call_{uuid.uuid4().hex[:16]}", name=name, arguments=arguments)


_QUOTED = r"[\"'`“‘](?P<q>[^\"'`”’]{1,200})[\"'`”’]"
_SEARCH = re.compile(
    r"\b(?:search|grep|look)\s+(?:the\s+(?:\w+\s+){1,3})?(?:for|through\s+\w+\s+for)\s+(?:"
    + _QUOTED
    + r"|(?P<w>\S+))",
    re.I,
)
_FIND = re.compile(r"\bfind\s+(?:all\s+)?(?:" + _QUOTED + r"|(?P<w>[A-Z][A-Z0-9_]+)\b)", re.I)
_READ = re.compile(
    r"\b(?:read|open|show|cat|display)\s+(?:me\s+)?(?:the\s+)?(?:file\s+)?(?:"
    + _QUOTED
    + r"|(?P<w>[\w./~-]+\.\w+|[\w./-]+/[\w./-]+))",
    re.I,
)
_RUN = re.compile(
    r"\b(?:run|execute|exec)\s+(?:the\s+command\s+)?(?:`(?P<q>[^`]{1,500})`|(?P<w>[^\n]{1,500}))", re.I
)
_LIST = re.compile(
    r"\b(?:list|ls|show)\s+(?:all\s+|the\s+)?(?:files|directory|dir|folder|tree|workspace)", re.I
)
_WAIT = re.compile(
    r"\b(?:wait|sleep|long[- ]running|long task|slow task)\b"
    r"(?:\D{0,20}(?P<n>\d+(?:\.\d+)?)\s*(?:s|sec|secs|second|seconds)\b)?",
    re.I,
)
_COMMON_COMMANDS = frozenset(
    [
        "ls",
        "cat",
        "echo",
        "pwd",
        "python",
        "python3",
        "pytest",
        "pip",
        "git",
        "make",
        "grep",
        "rg",
        "find",
        "wc",
        "head",
        "tail",
        "sort",
        "uniq",
        "du",
        "df",
        "date",
        "uname",
        "whoami",
        "env",
        "printenv",
        "node",
        "npm",
        "sh",
        "bash",
        "ruff",
        "tree",
        "stat",
        "file",
        "which",
        "id",
        "true",
        "false",
        "sleep",
        "seq",
    ]
)


def _looks_like_command(text: str) -> bool:
    """Unquoted "run X" only counts when X starts like a command (so "run the tests" does not)."""
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return first in _COMMON_COMMANDS or first.startswith(("./", "/"))


_CALL = re.compile(r"^\s*call\s+(?P<name>[^\s{]+)\s*(?P<args>\{.*\})?\s*$", re.S)


def explicit_call(prompt: str, available: Sequence[str]) -> ToolCall | None:
    """``call NAME {JSON arguments}``: a call of any offered tool, so tools (MCP ones too) work
    offline. NAME is the offered name, or the part after ``mcp__<server>__`` when only one
    offered tool ends that way. None when the prompt is not such a line or NAME matches nothing."""
    m = _CALL.match(prompt)
    if m is None:
        return None
    name = m.group("name")
    if name not in available:
        wanted = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")  # as MCP names are offered
        bare = [t for t in available if t.startswith("mcp__") and t.split("__", 2)[-1] == wanted]
        if len(bare) != 1:
            return None
        name = bare[0]
    arguments: Any = {}
    if m.group("args"):
        try:
            arguments = json.loads(m.group("args"))
        except (ValueError, RecursionError):
            arguments = {"_raw": m.group("args")[:2000]}  # the toolbox says the JSON is bad
    if not isinstance(arguments, dict):
        arguments = {"_raw": m.group("args")[:2000]}
    return _new_call(name, arguments)


#: ``write PATH: TEXT`` — the whole prompt (TEXT may hold anything, "then" included).
_WRITE = re.compile(r"^\s*write\s+(?:" + _QUOTED + r"|(?P<w>[\w./~-]+))\s*:\s?(?P<text>.*)\Z", re.S | re.I)
#: ``edit PATH: replace "OLD" with "NEW"`` — one step (the quotes keep "then" inside OLD and NEW).
_EDIT = re.compile(
    r"\bedit\s+(?P<path>[\w./~-]+)\s*:\s*replace\s+"
    r"(?P<oq>[\"'`\u201c])(?P<old>.+?)(?P=oq)\s+with\s+(?P<nq>[\"'`\u201c])(?P<new>.*?)(?P=nq)",
    re.I | re.S,
)


def write_call(prompt: str, available: set[str]) -> ToolCall | None:
    """``write PATH: TEXT``: a ``write_file`` call with the text as it was typed."""
    m = _WRITE.match(prompt)
    if m is None or "write_file" not in available:
        return None
    path = (m.group("q") or m.group("w") or "").strip()
    return _new_call("write_file", {"path": path, "content": m.group("text")})


_AND = re.compile(r"\s*(?:,|;|\band then\b|\bthen\b|\band\b)\s*", re.I)


#: Where one step of a prompt ends and the next begins ("…, then …", "… and afterwards …", ";").
_STEP = re.compile(
    r"\s*(?:;|,?\s*\b(?:and\s+then|and\s+afterwards|and\s+after\s+that|afterwards|after\s+that|"
    r"then|and\s+finally|finally)\b,?)\s*",
    re.I,
)


#: An item of a numbered list: ``1. …`` or ``2) …`` at the start of a line.
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+", re.M)


def _steps(prompt: str) -> list[str]:
    """The prompt cut into its steps: the items of a numbered list (two or more), each cut further
    at "… and then …", ";" and the like — never inside quotes or backticks (a command keeps its
    ``;``)."""
    items = _NUMBERED.split(prompt)
    if len(items) >= 3:  # text before the first number, then two or more items
        return [step for item in items[1:] for step in _inline_steps(item)]
    return _inline_steps(prompt)


def _inline_steps(prompt: str) -> list[str]:
    steps: list[str] = []
    start = 0
    quote = ""
    i = 0
    while i < len(prompt):
        ch = prompt[i]
        if quote:
            if ch == quote or (quote == "\u201c" and ch == "\u201d"):
                quote = ""
            i += 1
            continue
        if ch in '`"\u201c':
            quote = ch
            i += 1
            continue
        m = _STEP.match(prompt, i)
        if m is not None:  # _STEP always holds a separator, never whitespace alone
            steps.append(prompt[start:i])
            start = i = m.end()
            continue
        i += 1
    steps.append(prompt[start:])
    return [s for s in steps if s.strip()]


def plan_tool_calls(prompt: str, available: set[str]) -> list[ToolCall]:
    """The tool calls a prompt asks for, in the order it asks for them (only offered tools): every
    step it recognizes ("search for TODO and afterwards wait 4 seconds" is two calls)."""
    return [call for _, calls in planned_steps(prompt, available) for call in calls]


def planned_steps(prompt: str, available: set[str]) -> list[tuple[str, list[ToolCall]]]:
    """The steps of a prompt that ask for tool calls, each with its text and its calls."""
    out: list[tuple[str, list[ToolCall]]] = []
    for step in _steps(prompt):
        calls = _plan_step(step, available)
        if calls:
            out.append((step, calls))
    return out


def _plan_step(prompt: str, available: set[str]) -> list[ToolCall]:
    """The calls one step asks for (at most one of each kind), in the order it names them."""
    calls: list[tuple[int, ToolCall]] = []

    def add(match: re.Match[str] | None, name: str, arguments: dict[str, Any]) -> None:
        if match is not None and name in available:
            calls.append((match.start(), _new_call(name, arguments)))

    m = _EDIT.search(prompt)
    if m is not None:
        # an edit is the whole step: its quoted texts are not read as other requests
        add(m, "edit_file", {"path": m.group("path"), "old_text": m.group("old"), "new_text": m.group("new")})
        return [call for _, call in calls]

    m = _RUN.search(prompt)
    if m is not None:
        command = (m.group("q") or m.group("w") or "").strip()
        if m.group("w"):
            command = _AND.split(command, maxsplit=1)[0].rstrip(" .!?")
            if not _looks_like_command(command):
                command = ""
        if command:
            add(m, "run_command", {"command": command})
    for pattern in (_SEARCH, _FIND):
        m = pattern.search(prompt)
        if m is not None:
            query = (m.group("q") or m.group("w") or "").strip().rstrip(".,;!?")
            if query:
                add(m, "search", {"query": query})
                break
    m = _READ.search(prompt)
    if m is not None and not (_RUN.search(prompt) and _RUN.search(prompt).start() < m.start()):  # type: ignore[union-attr]
        path = (m.group("q") or m.group("w") or "").strip().rstrip(".,;!?")
        if path:
            add(m, "read_file", {"path": path})
    m = _LIST.search(prompt)
    if m is not None:
        add(m, "list_dir", {"path": "."})
    m = _WAIT.search(prompt)
    if m is not None:
        seconds = float(m.group("n")) if m.group("n") else 3.0
        add(m, "wait", {"seconds": min(seconds, 600.0), "label": "long task"})
    calls.sort(key=lambda item: item[0])
    return [call for _, call in calls]


# ---------------------------------------------------------------- answers without tools

#: What the prompt's text says of an attached image (``acp_adapter.text.prompt_to_text``).
_IMAGE_NOTE = re.compile(r"\[image attachment: (?P<mime>[^,\]]{1,100}), (?P<size>[\d,]{1,20}) bytes\]")


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


# ---------------------------------------------------------------- answers from tool results

_MATCH_LINE = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):\s?(?P<text>.*)$")
#: the search tool's first line: ``N matches in M files (scanned …)``
_FOUND_LINE = re.compile(r"^(?P<matches>\d+) match(?:es)? in (?P<files>\d+) files?\b")


def _tool_calls_of_last_round(messages: Sequence[Message]) -> list[tuple[ToolCall | None, Message]]:
    results: list[Message] = []
    i = len(messages) - 1
    while i >= 0 and messages[i].role == "tool":
        results.append(messages[i])
        i -= 1
    results.reverse()
    calls = {c.id: c for c in messages[i].tool_calls} if i >= 0 else {}
    return [(calls.get(r.tool_call_id or ""), r) for r in results]


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _describe_result(call: ToolCall | None, result: Message) -> str:
    name = call.name if call else (result.name or "tool")
    args = dict(call.arguments) if call else {}
    body = result.content.strip()
    if body.startswith("error:"):
        return f"The `{name}` call failed: {body[len('error:') :].strip()}"
    lines = body.splitlines()
    if name == "search":
        query = args.get("query", "")
        matches = [m for line in lines if (m := _MATCH_LINE.match(line))]
        if not matches:
            return f"I searched the workspace for \u201c{query}\u201d and found no matches."
        counted = _FOUND_LINE.match(lines[0]) if lines else None  # the tool's own count of everything
        files = sorted({m.group("path") for m in matches})
        n_matches = int(counted.group("matches")) if counted else len(matches)
        n_files = int(counted.group("files")) if counted else len(files)
        shown = "\n".join(
            f"- `{m.group('path')}:{m.group('line')}` — {m.group('text').strip()}" for m in matches[:12]
        )
        more = f"\n- … and {n_matches - 12} more" if n_matches > 12 else ""
        return (
            f"I searched the workspace for \u201c{query}\u201d and found "
            f"{_plural(n_matches, 'match', 'matches')} in {_plural(n_files, 'file', 'files')}:\n"
            f"{shown}{more}"
        )
    if name == "read_file":
        path = args.get("path", "the file")
        headings = [line.lstrip("# ").strip() for line in lines if line.startswith("#")][:5]
        first = next((line.strip() for line in lines if line.strip()), "")
        summary = f"`{path}` has {len(lines)} line{'s' if len(lines) != 1 else ''}."
        if headings:
            summary += " Its sections: " + "; ".join(headings) + "."
        if first:
            summary += f"\nIt begins: \u201c{first[:160]}\u201d"
        return summary
    if name == "list_dir":
        entries = [line for line in lines if line.strip()]
        shown = "\n".join(f"- {e.strip()}" for e in entries[:25])
        more = f"\n- … and {len(entries) - 25} more" if len(entries) > 25 else ""
        return f"The workspace listing has {_plural(len(entries), 'entry', 'entries')}:\n{shown}{more}"
    if name in ("edit_file", "write_file"):
        return body
    if name == "run_command":
        command = args.get("command", "")
        excerpt = "\n".join(lines[:30])
        more = f"\n… ({len(lines) - 30} more lines)" if len(lines) > 30 else ""
        return f"I ran `{command}`. Output:\n```\n{excerpt}{more}\n```"
    return f"`{name}` finished: {body[:400]}"


def answer_from_tools(messages: Sequence[Message]) -> str:
    """Compose the answer from the latest round of tool results."""
    parts = [_describe_result(call, result) for call, result in _tool_calls_of_last_round(messages)]
    return "\n\n".join(parts) if parts else "Done."
