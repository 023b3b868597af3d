"""The tool calls a prompt asks the embedded model for, read from its words: "search for TODO",
"read README.md", "run `ls -la`", "list files", "wait 3 seconds", ``write PATH: TEXT``,
``edit PATH: replace "OLD" with "NEW"``, ``call NAME {JSON}`` — step by step, in the order asked.

Why a module of its own: reading a request out of free text (its patterns, where one step ends and
the next begins, never inside quotes) is the embedded model's largest job and has nothing to do with
streaming or with composing an answer; :class:`~acp_adapter.models.embedded.EmbeddedModel` only asks
it which calls a prompt wants.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from acp_adapter.tooling.calls import ToolCall


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
    i = 0
    while i < len(prompt):
        ch = prompt[i]
        if ch in '`"\u201c':
            i = _quote_end(prompt, ch, i + 1)  # a quote is skipped whole, not read
            continue
        m = _STEP.match(prompt, i)
        if m is not None:  # _STEP always holds a separator, never whitespace alone
            steps.append(prompt[start:i])
            start = i = m.end()
            continue
        i += 1
    steps.append(prompt[start:])
    return [s for s in steps if s.strip()]


def _quote_end(prompt: str, quote: str, i: int) -> int:
    """Where the quote opened by ``quote`` before ``i`` ends (just past its closing character, or
    the end of the prompt): found with ``str.find``, so a long quoted text costs no Python loop."""
    closers = ("\u201c", "\u201d") if quote == "\u201c" else (quote,)
    ends = [end for end in (prompt.find(closer, i) for closer in closers) if end >= 0]
    return min(ends) + 1 if ends else len(prompt)


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
