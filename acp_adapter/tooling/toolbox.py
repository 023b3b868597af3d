"""The agent's toolbox: tool definitions, argument checks, and one execution path with observers.

Every tool call — whatever the model back-end — goes through :meth:`Toolbox.execute`, which tells
the observer (the ACP tool-card projection, or nobody in a plain terminal) when the tool starts,
what progress it reports, and how it ended. Progress reported after the tool's terminal phase is
dropped here, and the observer's own lock drops anything after the turn ended.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text
from acp_adapter.tooling.calls import Concern, ToolCall, ToolSpec
from acp_adapter.tooling.display import Shown

if TYPE_CHECKING:
    from acp_adapter.tooling.host import ToolHost

log = logging.getLogger("acp_progress.toolbox")


class ToolError(AcpProgressError):
    """A tool failed in a way the user should read (bad path, timeout …): the message is shown."""


@dataclass(frozen=True)
class ToolReturn:
    """What a tool function returns: text for the model, optional structured output for the card."""

    text: str
    summary: str = ""
    raw_output: Any = None
    #: the tool ran and its result is a failure (a command that exited non-zero): the card fails
    #: with ``summary`` as its reason, and the model still gets ``text`` to read
    failed: bool = False
    #: what the card shows beside the text: a diff, the client's terminal, an image
    display: tuple[Shown, ...] = ()


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    text: str = ""
    error: str | None = None
    summary: str = ""
    raw_output: Any = None
    duration: float = 0.0
    display: tuple[Shown, ...] = ()


DENIED_BY_USER = "Permission denied by the user"
DENIED_AUTOMATICALLY = "Permission denied automatically: nobody was there to answer"
PERMISSION_CANCELLED = "Cancelled"
#: seconds a finished command's output is still read while a background job it started holds the
#: pipe (the ``command_output_wait`` setting's default)
COMMAND_OUTPUT_WAIT = 2.0


@dataclass(frozen=True)
class PermissionDecision:
    """The answer to a permission request. ``automatic`` says no person answered it (no terminal
    to ask, a client policy that denies on its own, a failed request), so the card can say so
    instead of blaming the user. Truthy when allowed, so plain ``bool`` answers still work."""

    allowed: bool
    automatic: bool = False
    #: nobody decided: the question was withdrawn (the turn is being cancelled, or the client
    #: answered ``cancelled``); the card says "Cancelled", never that the user denied it
    cancelled: bool = False
    #: why the call was refused when nobody denied it (e.g. its audit row could not be written):
    #: shown on the tool card instead of the usual "denied" text
    reason: str | None = None
    #: the arguments the allowed call runs with instead of the model's, meaning the same but
    #: pinned to what was approved (a remembered rule's program by its absolute path)
    arguments: Mapping[str, Any] | None = None

    def __bool__(self) -> bool:
        return self.allowed


PermissionPolicy = Callable[["ToolCall", "Tool"], "PermissionDecision | bool"]


class ToolObserver(Protocol):
    """Receives the lifecycle of every tool call (the ACP projection implements it)."""

    def tool_started(self, call: ToolCall, tool: Tool | None) -> None: ...

    def tool_progress(
        self, call: ToolCall, value: float | None, total: float | None, message: str | None
    ) -> None: ...

    def tool_finished(self, call: ToolCall, outcome: ToolOutcome) -> None: ...

    def request_permission(self, call: ToolCall, tool: Tool) -> PermissionDecision | bool: ...


class ToolContext:
    """Handed to a running tool: its workspace, the turn's cancel token and ``progress``."""

    def __init__(
        self,
        call: ToolCall,
        cwd: Path,
        cancel: CancelToken,
        report: Callable[[float | None, float | None, str | None], None] | None,
        host: ToolHost | None = None,
        extra_roots: tuple[Path, ...] = (),
        ask: Callable[[Concern], PermissionDecision | bool] | None = None,
        output_wait: float = COMMAND_OUTPUT_WAIT,
    ) -> None:
        self.call = call
        #: how long a finished command's output is still read while a job it left running holds
        #: the pipe (the job may never close it; the command's answer must not wait for the job)
        self.output_wait = output_wait
        self._ask = ask
        #: the session's additional directories (absolute, resolved): tools may read there too
        self.extra_roots = extra_roots
        #: the client's files and terminals when it offers them (None: local only)
        self.host = host
        self.cwd = cwd
        self.cancel = cancel
        self._report = report
        self._lock = threading.Lock()
        self._closed = False

    def progress(
        self, value: float | None = None, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress. Only what the tool reports is published; empty updates are ignored."""
        if value is None and total is None and not message:
            return
        with self._lock:
            if self._closed or self._report is None:
                return
            try:
                self._report(value, total, message)
            except Exception as exc:
                log.warning("tool progress observer failed: %s", redact_text(str(exc)), exc_info=True)

    def confirm(self, concern: Concern) -> None:
        """Ask the person before going on (a tool that never asks, about to do something it
        should not do unasked); raise :class:`ToolError` saying why unless they allowed it.
        With nobody to ask, the answer is no."""
        decision = self._ask(concern) if self._ask is not None else PermissionDecision(False, automatic=True)
        refusal = refusal_text(decision)
        if refusal == PERMISSION_CANCELLED:
            raise ToolError(refusal)
        if refusal is not None:
            raise ToolError(f"{refusal} ({concern.reason})")

    def close(self) -> None:
        with self._lock:
            self._closed = True


ToolFunction = Callable[[Mapping[str, Any], ToolContext], ToolReturn]
#: What a call is about to change, shown before the permission question (an edit's diff); a
#: ToolError here fails the call without asking (an edit whose text is absent).
ToolPreview = Callable[[Mapping[str, Any], ToolContext], tuple[Shown, ...]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    function: ToolFunction
    dangerous: bool = False
    extension: Mapping[str, Any] = field(default_factory=dict)
    preview: ToolPreview | None = None

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_arguments(tool: Tool, args: Mapping[str, Any]) -> dict[str, Any]:
    """Validate arguments against the tool's (flat) JSON schema; clear errors, no coercion surprises."""
    if not isinstance(args, Mapping):
        raise ToolError(f"{tool.name}: arguments must be a JSON object, got {type(args).__name__}")
    raw = args.get("_raw") if len(args) == 1 else None  # models.openai_compat.RAW_ARGUMENTS_KEY
    if isinstance(raw, str):
        raise ToolError(f"{tool.name}: the model's arguments are not valid JSON: {raw[:120]!r}")
    props: Mapping[str, Any] = tool.parameters.get("properties", {})
    for name in tool.parameters.get("required", []):
        if name not in args:
            raise ToolError(f"{tool.name}: missing required argument '{name}'")
    clean: dict[str, Any] = {}
    for name, value in args.items():
        schema = props.get(name)
        checkable = isinstance(schema, Mapping) and isinstance(schema.get("type", ""), str)
        if schema is not None and not checkable:
            clean[name] = value  # a schema this check cannot read (a union type …): the tool checks
            continue
        if schema is None:
            if tool.parameters.get("additionalProperties", True) is False:
                raise ToolError(f"{tool.name}: unknown argument '{name}'")
            continue
        expected = _JSON_TYPES.get(schema.get("type", ""), (object,))
        bad_bool = isinstance(value, bool) and bool not in expected
        if not isinstance(value, expected) or bad_bool:
            raise ToolError(
                f"{tool.name}: argument '{name}' must be {schema.get('type')}, got {type(value).__name__}"
            )
        clean[name] = value
    return clean


class Toolbox:
    """The tools of one session, bound to its workspace."""

    def __init__(
        self, tools: Iterable[Tool], cwd: str | Path, extra_roots: Iterable[str | Path] = ()
    ) -> None:
        self.cwd = Path(cwd).resolve()
        #: the session's additional directories: read, listed and searched, never written
        self.extra_roots = tuple(Path(root).resolve() for root in extra_roots)
        self._tools = {tool.name: tool for tool in tools}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> list[ToolSpec]:
        return [tool.spec() for tool in self._tools.values()]

    def execute(
        self,
        call: ToolCall,
        *,
        cancel: CancelToken,
        observer: ToolObserver | None = None,
        permission: PermissionPolicy | None = None,
        output_wait: float = COMMAND_OUTPUT_WAIT,
    ) -> ToolOutcome:
        """Run one call. Raises only :class:`TurnCancelled` (after the card is closed).

        A dangerous tool runs only once someone allowed it: the observer (the ACP client) is asked
        first, else ``permission`` (the plain terminal's policy); with neither, nobody can answer
        and the call is denied automatically — never run unasked.
        """
        tool = self._tools.get(call.name)
        started = time.monotonic()
        _notify(observer, "tool_started", call, tool)
        ctx = self._context(call, tool, cancel, observer, permission, output_wait)
        cancelled = False
        try:
            outcome = _run_call(call, tool, ctx, observer, permission)
        except TurnCancelled:
            cancelled = True
            outcome = ToolOutcome(False, error="Cancelled")
        except ToolError as exc:
            outcome = ToolOutcome(False, error=str(exc))
        except Exception as exc:
            log.warning("tool %s raised %s", call.name, type(exc).__name__, exc_info=True)
            outcome = ToolOutcome(False, error=f"{type(exc).__name__}: {exc}")
        finally:
            ctx.close()
        outcome = dataclasses.replace(outcome, duration=time.monotonic() - started)
        _notify(observer, "tool_finished", call, outcome)
        if cancelled:
            raise TurnCancelled(cancel.reason)
        return outcome

    def _context(
        self,
        call: ToolCall,
        tool: Tool | None,
        cancel: CancelToken,
        observer: ToolObserver | None,
        permission: PermissionPolicy | None,
        output_wait: float,
    ) -> ToolContext:
        """What the running tool is handed: its progress goes to the observer, and a question it
        asks mid-run (a concern) is answered like the call's own permission question."""

        def report(value: float | None, total: float | None, message: str | None) -> None:
            if observer is not None:
                observer.tool_progress(call, value, total, message)

        def ask(concern: Concern) -> PermissionDecision | bool:
            assert tool is not None  # only a tool that runs asks
            return _decide(dataclasses.replace(call, concern=concern), tool, observer, permission)

        host = getattr(observer, "host", None)
        return ToolContext(call, self.cwd, cancel, report, host, self.extra_roots, ask, output_wait)


def _run_call(
    call: ToolCall,
    tool: Tool | None,
    ctx: ToolContext,
    observer: ToolObserver | None,
    permission: PermissionPolicy | None,
) -> ToolOutcome:
    """Check the arguments, have a dangerous call allowed, then run the tool (unless the turn was
    cancelled meanwhile); what goes wrong is raised, for :meth:`Toolbox.execute` to report."""
    if tool is None:
        raise ToolError(f"unknown tool '{call.name}'")
    args = check_arguments(tool, call.arguments)
    if tool.dangerous:
        args = _allowed_arguments(call, tool, args, ctx, observer, permission)
    ctx.cancel.raise_if_cancelled()
    result = tool.function(args, ctx)
    error = (result.summary or "failed") if result.failed else None
    return ToolOutcome(
        not result.failed, result.text, error, result.summary, result.raw_output, 0.0, result.display
    )


def _allowed_arguments(
    call: ToolCall,
    tool: Tool,
    args: dict[str, Any],
    ctx: ToolContext,
    observer: ToolObserver | None,
    permission: PermissionPolicy | None,
) -> dict[str, Any]:
    """The arguments a dangerous call runs with once allowed: what it would change is previewed
    on its card first, and an "always" rule may pin the command it runs."""
    if tool.preview is not None:
        shown = tool.preview(args, ctx)
        if shown and observer is not None and hasattr(observer, "tool_preview"):
            _notify(observer, "tool_preview", call, shown)
    pinned = _check_permission(call, tool, observer, permission)
    return check_arguments(tool, pinned) if pinned is not None else args


def _decide(
    call: ToolCall, tool: Tool, observer: ToolObserver | None, permission: PermissionPolicy | None
) -> PermissionDecision | bool:
    """Ask whoever can answer (see :meth:`Toolbox.execute`); with nobody, the answer is no."""
    if observer is not None:
        return observer.request_permission(call, tool)
    if permission is not None:
        return permission(call, tool)
    return PermissionDecision(False, automatic=True)


def refusal_text(decision: PermissionDecision | bool) -> str | None:
    """What the card says about a refused call (None: it was allowed)."""
    if decision:
        return None
    if isinstance(decision, PermissionDecision) and decision.cancelled:
        return PERMISSION_CANCELLED
    if isinstance(decision, PermissionDecision) and decision.reason:
        return decision.reason
    automatic = isinstance(decision, PermissionDecision) and decision.automatic
    return DENIED_AUTOMATICALLY if automatic else DENIED_BY_USER


def _check_permission(
    call: ToolCall, tool: Tool, observer: ToolObserver | None, permission: PermissionPolicy | None
) -> Mapping[str, Any] | None:
    """Raise :class:`ToolError` unless someone allowed this call (see :meth:`Toolbox.execute`);
    the arguments to run it with instead, when the answer pinned them."""
    decision = _decide(call, tool, observer, permission)
    refusal = refusal_text(decision)
    if refusal is not None:
        raise ToolError(refusal)
    return decision.arguments if isinstance(decision, PermissionDecision) else None


def _notify(observer: ToolObserver | None, method: str, *args: Any) -> None:
    if observer is None:
        return
    try:
        getattr(observer, method)(*args)
    except Exception as exc:
        log.warning("tool observer %s failed: %s", method, redact_text(str(exc)), exc_info=True)
