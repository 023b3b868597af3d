"""Refuse an ``mcpServers`` entry the agent cannot use before the SDK parses it away.

The SDK parses ``mcpServers`` leniently: an entry that is none of its server models (an unknown
``type`` such as ``"ws"``, a string, an ``http`` entry without its ``url``) is *dropped*, and an
entry whose ``type`` it does not know but which happens to carry stdio's fields is taken for a
stdio server. The session would then start without the server the editor asked for, and nobody
would be told. So the raw list of every method that takes MCP servers (``session/new``,
``session/load``, ``session/resume``, ``session/fork``) is checked first, entry by entry, with the
SDK's own models: the entry's ``type`` picks the model (no ``type`` or ``"stdio"``:
:class:`~acp.schema.McpServerStdio`; ``"http"``, ``"sse"``, ``"acp"``: theirs) and the entry must
validate as it. Any other entry fails the request with invalid params (``-32602``) naming the entry
(its index, its name and the type it gave, sanitised and bounded) and the types the agent
supports. An ``acp`` entry that parses goes on to the agent, which refuses it with its own reason.

Bounded work: the line's size is already bounded by the stream reader; each entry is validated
once, without echoing its input, and the check stops at the :data:`MAX_PROBLEMS`-th bad entry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from acp import RequestError
from acp.meta import AGENT_METHODS
from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import BaseModel, ValidationError

from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.terminal_text import visible_text

__all__ = [
    "MAX_PROBLEMS",
    "MCP_SERVER_METHODS",
    "SUPPORTED_TYPES",
    "McpServerTypeCheck",
    "entry_problem",
    "mcp_server_problems",
]

#: the methods whose params carry an ``mcpServers`` list
MCP_SERVER_METHODS = frozenset(
    AGENT_METHODS[key] for key in ("session_new", "session_load", "session_resume", "session_fork")
)
#: the transports the agent connects to, as the refusal names them
SUPPORTED_TYPES = ("stdio", "http", "sse")
_SUPPORTED = f"{', '.join(SUPPORTED_TYPES[:-1])} or {SUPPORTED_TYPES[-1]}"
#: how many bad entries one refusal describes (the check stops there)
MAX_PROBLEMS = 3
#: how many characters of a name or a type a refusal shows
MAX_SHOWN = 60
#: how many validation errors of one entry a refusal lists
MAX_FIELD_ERRORS = 3

#: the SDK model each ``type`` must validate as; a missing ``type`` is stdio's (it has no tag)
_MODELS: dict[str | None, type[BaseModel]] = {
    None: McpServerStdio,
    "stdio": McpServerStdio,
    "http": HttpMcpServer,
    "sse": SseMcpServer,
    "acp": AcpMcpServer,
}
_JSON_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def _shown(text: str) -> str:
    """``text`` as a refusal may quote it: bounded, secrets redacted, nothing that acts on a terminal."""
    short = text[: MAX_SHOWN * 4]  # the redactor sees a bounded slice; the cut comes after it
    safe = visible_text(redact_text(short))
    return repr(safe[:MAX_SHOWN] + ("…" if len(safe) > MAX_SHOWN or len(text) > len(short) else ""))


def _kind(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_KINDS.get(type(value), "a value")


def _label(index: int, entry: Mapping[str, Any]) -> str:
    name = entry.get("name")
    where = f"mcpServers[{index}]"
    return f"MCP server {_shown(name)} ({where})" if isinstance(name, str) else f"MCP server {where}"


def _unsupported(label: str, given: object) -> str:
    shown = _shown(given) if isinstance(given, str) else f"({_kind(given)})"
    return f"{label}: the type {shown} is not supported (use {_SUPPORTED})"


def _field_errors(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_context=False, include_input=False)
    said = []
    for error in errors[:MAX_FIELD_ERRORS]:
        where = ".".join(str(part) for part in error["loc"]) or "entry"
        said.append(f"{where}: {error['msg']}")
    more = len(errors) - MAX_FIELD_ERRORS
    return visible_text(redact_text("; ".join(said) + (f"; and {more} more" if more > 0 else "")))[:400]


def entry_problem(index: int, entry: object) -> str | None:
    """Why ``entry`` (the raw JSON of ``mcpServers[index]``) is not a server the agent can be
    given as the editor meant it; None when the SDK's model for its type accepts it."""
    if not isinstance(entry, dict):
        return f"mcpServers[{index}] is {_kind(entry)}, not an MCP server object"
    given = entry.get("type")
    label = _label(index, entry)
    model = _MODELS.get(given) if given is None or isinstance(given, str) else None
    if model is None:
        return _unsupported(label, given)
    try:
        model.model_validate(entry)
    except ValidationError as exc:
        if given == "acp":  # malformed or not, the answer is the same
            return _unsupported(label, given)
        kind = given or "stdio (an entry without a type)"
        return f"{label}: not a valid {kind} server: {_field_errors(exc)}"
    return None


def mcp_server_problems(params: object) -> list[str]:
    """The problems of the raw ``mcpServers`` in a request's ``params`` (the first
    :data:`MAX_PROBLEMS`); empty when every entry parses, or when there is no list to check (a
    missing or mistyped list is the SDK's to refuse, and it does)."""
    servers = params.get("mcpServers") if isinstance(params, dict) else None
    if not isinstance(servers, list):
        return []
    problems: list[str] = []
    for index, entry in enumerate(servers):
        problem = entry_problem(index, entry)
        if problem is not None:
            problems.append(problem)
            if len(problems) == MAX_PROBLEMS:
                problems.append(f"(checking stopped after {MAX_PROBLEMS} entries that cannot be used)")
                break
    return problems


class McpServerTypeCheck:
    """The agent's method handler, refusing a request whose ``mcpServers`` the SDK would parse
    into fewer (or other) servers than were given (see the module's docstring)."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def __call__(self, method: str, params: Any, is_notification: bool) -> Awaitable[Any]:
        """The inner handler's answer (awaited by the caller), or the refusal raised at once: no
        coroutine of its own, so the requests it lets through (every prompt) pay no extra hop."""
        if not is_notification and method in MCP_SERVER_METHODS:
            problems = mcp_server_problems(params)
            if problems:
                raise RequestError.invalid_params({"mcpServers": "; ".join(problems)})
        awaitable: Awaitable[Any] = self.handler(method, params, is_notification)
        return awaitable
