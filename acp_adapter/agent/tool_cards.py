"""The ACP projection of tool calls: one honest card per call, keyed by the model's tool-call id
(made unique in the session: servers that reuse ``call_1`` every turn must not reopen a closed card).

Implements the toolbox's observer: the title comes from the presentation registry (verb +
preview), the kind fits the tool, file paths become ``locations``, raw input is redacted, and
progress/terminal updates go through the session stream's lock so nothing lands after the tool's
terminal phase or after the turn ended. Dangerous tools ask the client with
``session/request_permission`` on the same tool-call id.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from acp import image_block, text_block, tool_content, tool_diff_content, tool_terminal_ref, update_tool_call
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from acp_adapter.agent.client_fs import EditorHost
from acp_adapter.agent.command_rules import pinned_command
from acp_adapter.agent.permissions import (
    ALLOWING,
    ALWAYS,
    Rule,
    SessionPolicy,
    Verdict,
    permission_options,
    rule_for,
)
from acp_adapter.agent.turn_state import SessionStream
from acp_adapter.cancel import CancelToken
from acp_adapter.protocol.meta import ProgressMeta, meta_of
from acp_adapter.safety.redact import redact_text, redact_value
from acp_adapter.tooling.calls import ToolCall
from acp_adapter.tooling.display import FileDiff, ImageShown, Shown, TerminalShown
from acp_adapter.tooling.presentation import (
    MCP_PREVIEW_KEY,
    MCP_VERB_KEY,
    DescriptorError,
    PresentationRegistry,
    parse_mcp_meta,
    render_label,
    render_title,
    select_preview,
)
from acp_adapter.tooling.toolbox import PermissionDecision, Tool, ToolOutcome

log = logging.getLogger("acp_progress.tool_cards")

RESULT_CAP = 8000


class AcpToolObserver:
    """Turns toolbox lifecycle events into ACP tool-call updates for one session turn."""

    def __init__(
        self,
        stream: SessionStream,
        *,
        conn: Any,
        loop: asyncio.AbstractEventLoop,
        cancel: CancelToken,
        registry: PresentationRegistry | None = None,
        workspace: str | None = None,
        workspace_id: str | None = None,
        audit: Callable[[str, str, PermissionAnswer], None] | None = None,
        client_capabilities: Any = None,
        policy: SessionPolicy | None = None,
    ) -> None:
        self._stream = stream
        #: the session's mode and "always" answers; None: every call is asked, once
        self._policy = policy
        #: ``audit(card_id, title, answer)``: called with every answer before the tool runs (the
        #: session store's permission audit)
        self._audit = audit
        self._conn = conn
        self._loop = loop
        self._cancel = cancel
        self._registry = registry or PresentationRegistry()
        self._workspace = workspace
        self._workspace_id = workspace_id
        self._titles: dict[str, str] = {}
        self._card_ids: dict[str, str] = {}
        self._questions = 0  # permission questions asked this turn (bounded: MAX_QUESTIONS_PER_TURN)
        self._kinds: dict[str, str] = {}  # card id -> its tool kind (what an "always" answer covers)
        self._previews: dict[str, list[Any]] = {}
        #: the client's files and terminals for the tools, when ``initialize`` offered any
        self.host: EditorHost | None = None
        if client_capabilities is not None:
            host = EditorHost(conn, loop, stream, cancel, client_capabilities, self._card)
            self.host = host if host.offers_anything else None

    def _card(self, call: ToolCall) -> str:
        """The card id of a model tool call: unique in the session (see ``claim_card_id``)."""
        return self._card_ids.get(call.id, call.id)

    def _present(self, call: ToolCall, tool: Tool | None) -> tuple[str, Any, tuple[str, ...], ProgressMeta]:
        event_meta: Mapping[str, Any] | None = tool.extension if tool is not None and tool.extension else None
        presentation = self._registry.lookup(call.name, self._workspace_id, event_meta)
        label, preview = render_label(call.name, call.arguments, presentation)
        title = render_title(label, preview)
        locations: tuple[str, ...] = ()
        if presentation.preview == "path":
            path = select_preview("path", call.arguments)
            if path:
                locations = (_absolute(self._workspace, path),)
        # build_tool_start redacts the whole _meta (and the title) at the single choke point
        meta = ProgressMeta(tool_id=call.name, label=label, preview=preview, emoji=presentation.emoji)
        # a tool may say which kind its card is (MCP tools: from their annotations)
        kind = getattr(tool, "card_kind", None) or presentation.kind
        return title, kind, locations, meta

    def tool_started(self, call: ToolCall, tool: Tool | None) -> None:
        title, kind, locations, meta = self._present(call, tool)
        card_id = self._card_ids[call.id] = self._stream.claim_card_id(call.id)
        self._titles[card_id] = title
        self._kinds[card_id] = str(kind or "other")
        self._stream.tool_start(
            card_id,
            title,
            kind,
            raw_input=dict(call.arguments),
            locations=locations,
            meta=meta,
            descriptor=_valid_descriptor(tool),
        )

    def tool_progress(
        self, call: ToolCall, value: float | None, total: float | None, message: str | None
    ) -> None:
        self._stream.tool_progress(self._card(call), value=value, total=total, message=message)

    def tool_finished(self, call: ToolCall, outcome: ToolOutcome) -> None:
        self._titles.pop(self._card(call), None)
        self._kinds.pop(self._card(call), None)
        text = (
            outcome.text if len(outcome.text) <= RESULT_CAP else outcome.text[:RESULT_CAP] + "\n… (truncated)"
        )
        shown = card_content(outcome.display)
        if outcome.ok:
            self._stream.tool_finish(
                self._card(call), result_text=text, raw_output=outcome.raw_output, shown=shown
            )
        else:  # a result that is a failure keeps its text (a command's output) on the failed card
            self._stream.tool_finish(
                self._card(call),
                error=outcome.error or "failed",
                result_text=text,
                raw_output=outcome.raw_output,
                shown=shown,
            )

    def tool_preview(self, call: ToolCall, shown: tuple[Shown, ...]) -> None:
        """What the call is about to change (an edit's diff): on the card now, and in the
        permission question that follows, so the person sees what they allow."""
        card_id = self._card(call)
        content = list(card_content(shown))
        if content:
            self._previews[card_id] = content
            self._stream.tool_update(card_id, update_tool_call(card_id, content=content))

    def request_permission(self, call: ToolCall, tool: Tool) -> PermissionDecision:
        """Ask the client (blocking this worker thread, never the loop); cancel means no.

        The answer is *automatic* when no person gave it: the client says so in
        ``_meta.acpProgress.automatic`` (read by :meth:`PermissionAnswer.of`), or the request
        could not be asked at all.
        """
        if not self._stream.tool_is_open(self._card(call)):
            return PermissionDecision(False)
        self._questions += 1
        if self._questions > MAX_QUESTIONS_PER_TURN:
            # a model that asks for thousands of commands in one answer asks nobody, fills no audit
            return PermissionDecision(False, automatic=True, reason=TOO_MANY_QUESTIONS)
        card_id = self._card(call)
        kind = self._kinds.get(card_id, "execute")
        title = _question_title(self._titles.get(card_id, call.name), call, tool)
        action = _audited_action(redact_text(title), call)
        rule = (
            Rule.same(call.concern.rule, call.concern.covers)
            if call.concern is not None
            else rule_for(kind, call, tool, self._workspace)
        )
        verdict = self._policy.before_asking(rule) if self._policy is not None else None
        if verdict is not None:  # the session's mode or an "always" answer: nobody is asked
            return self._decided_by_policy(card_id, action, call, verdict)
        options = permission_options(rule, with_always=self._policy is not None)
        asked = self._ask(card_id, call, title, kind, options)
        try:
            response = self._wait_for_answer(asked)
        except Exception as exc:
            log.warning("permission request failed: %s", redact_text(str(exc)), exc_info=True)
            return PermissionDecision(False, automatic=True)
        answer = self._answer_of(response, options, rule)
        refused = self._record(card_id, action, answer)
        if refused is not None:
            return refused
        if answer.allowed:
            self._stream.tool_update(card_id, update_tool_call(card_id, status="in_progress"))
        return PermissionDecision(
            answer.allowed,
            automatic=answer.automatic,
            cancelled=answer.cancelled,
            arguments=_pinned_by_answer(answer, rule, call),
        )

    def _decided_by_policy(
        self, card_id: str, action: str, call: ToolCall, verdict: Verdict
    ) -> PermissionDecision:
        """The answer the session's mode or an "always" rule gave, audited like a person's."""
        self._previews.pop(card_id, None)
        answer = PermissionAnswer(verdict.allowed, True, rule=verdict.rule)
        refused = self._record(card_id, action, answer)
        if refused is not None:
            return refused
        pinned = {**call.arguments, "command": verdict.pinned} if verdict.pinned else None
        return PermissionDecision(verdict.allowed, automatic=True, reason=verdict.reason, arguments=pinned)

    def _ask(
        self, card_id: str, call: ToolCall, title: str, kind: str, options: list[PermissionOption]
    ) -> concurrent.futures.Future[Any]:
        """Mark the card pending and send ``session/request_permission`` from the loop; the
        question shows the diff previewed on the card, so the person sees what they allow."""
        self._stream.tool_update(card_id, update_tool_call(card_id, status="pending"))
        request = ToolCallUpdate(
            tool_call_id=card_id,
            title=redact_text(title),
            kind=kind,  # type: ignore[arg-type]
            status="pending",
            content=self._previews.pop(card_id, None),
            raw_input=redact_value(dict(call.arguments)),
        )

        async def ask() -> Any:
            # the request must not overtake the card updates still queued in the outbox
            await self._stream.flush()
            return await self._conn.request_permission(
                session_id=self._stream.session_id, tool_call=request, options=options
            )

        return asyncio.run_coroutine_threadsafe(ask(), self._loop)

    def _wait_for_answer(self, asked: concurrent.futures.Future[Any]) -> Any:
        """The client's response, or None when the turn was cancelled while the question was
        open (the question is then abandoned); a failed request raises."""

        def abandon() -> None:
            asked.cancel()

        remove_hook = self._cancel.on_cancel(abandon)
        try:
            return asked.result()
        except concurrent.futures.CancelledError:
            return None
        finally:
            remove_hook()

    def _answer_of(self, response: Any, options: list[PermissionOption], rule: Rule) -> PermissionAnswer:
        """What the person answered, as the audit keeps it: only an offered option counts, and an
        "always" one becomes a session rule."""
        if response is None or isinstance(response.outcome, DeniedOutcome):
            # withdrawn, not denied: ACP answers ``cancelled`` to a question the turn's cancel ended
            return PermissionAnswer(False, False, cancelled=True)
        chosen = response.outcome.option_id if isinstance(response.outcome, AllowedOutcome) else ""
        offered = {o.option_id for o in options}
        allowed = chosen in ALLOWING and chosen in offered
        made = ""
        if chosen in ALWAYS and chosen in offered and self._policy is not None:
            made = self._policy.remember(rule, allowed) or ""
        return PermissionAnswer.of(response, allowed, made)

    def _record(self, card_id: str, action: str, answer: PermissionAnswer) -> PermissionDecision | None:
        """Audit ``answer``; a refusal to return instead when an allowed call's row could not be
        written (the audit fails closed)."""
        if self._audit is None:
            return None
        try:
            self._audit(card_id, action, answer)
        except Exception as exc:
            # the audit fails closed: an allowed call whose decision is not on disk never runs
            why = redact_text(str(exc)) or type(exc).__name__
            log.error("recording the permission decision failed: %s", why)
            if answer.allowed:
                return PermissionDecision(False, automatic=True, reason=audit_refusal(why))
        return None


#: The most text a diff on a card carries (old and new together); a bigger edit is described in
#: words instead (redacting and sending megabytes per edit would stall the stream).
DIFF_CAP = 256 * 1024
#: The most base64 an image on a card carries.
IMAGE_CAP = 4 * 1024 * 1024


def card_content(items: tuple[Shown, ...]) -> tuple[Any, ...]:
    """A tool's display items as SDK tool-call content, every string redacted (secrets never leave)."""
    out: list[Any] = []
    for item in items:
        if isinstance(item, FileDiff):
            size = len(item.new_text) + len(item.old_text or "")
            if size > DIFF_CAP:
                note = f"(the diff of {item.path} is too large to show: {size:,} characters)"
                out.append(tool_content(text_block(redact_text(note))))
                continue
            old = redact_text(item.old_text) if item.old_text is not None else None
            out.append(tool_diff_content(item.path, redact_text(item.new_text), old))
        elif isinstance(item, TerminalShown):
            out.append(tool_terminal_ref(item.terminal_id))
        elif isinstance(item, ImageShown) and len(item.data) <= IMAGE_CAP:
            out.append(tool_content(image_block(item.data, item.mime_type)))
    return tuple(out)


def audit_refusal(why: str) -> str:
    """What the tool card says when an allowed call is refused because its audit row could not
    be written (the model reads it too, and goes on with the turn)."""
    return f"Refused, nothing ran: the audit could not record this permission ({why})"


#: What the question adds for an MCP tool its (untrusted) server calls read-only: the person
#: decides knowing the claim was not checked.
_UNVERIFIED = "; server says read-only; not verified"

#: Permission questions one turn may ask (and audit rows it may write); beyond, calls are refused.
MAX_QUESTIONS_PER_TURN = 100
TOO_MANY_QUESTIONS = (
    f"Refused without asking: more than {MAX_QUESTIONS_PER_TURN} permission questions in one turn"
)

#: The longest action the audit keeps (a whole command, redacted; far beyond any real one).
AUDIT_ACTION_CAP = 16_384


def _question_title(title: str, call: ToolCall, tool: Tool) -> str:
    """The card's title as the question asks it: an MCP tool names its server and tool, and a
    tool that never asks says why it asks this once."""
    origin = getattr(tool, "server", "")
    if origin:
        title = f"{title} (MCP server {origin}, tool {getattr(tool, 'mcp_name', '') or call.name}"
        title += f"{_UNVERIFIED})" if getattr(tool, "claims_read_only", False) else ")"
    if call.concern is not None:
        title = f"{title} — {call.concern.reason}"
    return title


def _pinned_by_answer(answer: PermissionAnswer, rule: Rule, call: ToolCall) -> dict[str, Any] | None:
    """The call's arguments with the command an "always allow" answer's rule names, so what runs
    is what the rule covers (None: the call runs as asked)."""
    if answer.allowed and answer.rule.startswith("always allow") and rule.command and rule.allow_key:
        command = pinned_command(rule.command, rule.allow_key)
        return {**call.arguments, "command": command} if command else None
    return None


def _audited_action(title: str, call: ToolCall) -> str:
    """What the audit says was allowed or denied: the whole command (redacted) when the call runs
    one — a card's title is cut, and the audit must hold what was actually approved — else the
    card's title."""
    command = call.arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        return title
    whole = redact_text(command.strip())
    if len(whole) > AUDIT_ACTION_CAP:
        whole = whole[:AUDIT_ACTION_CAP] + f"… ({len(whole) - AUDIT_ACTION_CAP:,} more characters)"
    return f"{title} — {whole}" if " ".join(whole.split()) not in title else title


@dataclass(frozen=True)
class PermissionAnswer:
    """A client's answer to a permission request as the audit keeps it: allowed or not, whether a
    policy gave it with no person asked, and who and where, when the client says so in
    ``_meta.acpProgress`` (``decidedBy``, ``surface``)."""

    allowed: bool
    automatic: bool
    decided_by: str | None = None
    surface: str | None = None
    #: the question was withdrawn (cancelled), nobody decided it
    cancelled: bool = False
    #: the session rule that answered (or that this "always" answer made), for the audit
    rule: str = ""

    @classmethod
    def of(cls, response: Any, allowed: bool, rule: str = "") -> PermissionAnswer:
        meta = meta_of(response)
        if meta is None:
            return cls(allowed, False, rule=rule)
        return cls(allowed, meta.automatic is True, meta.decided_by, meta.surface, rule=rule)


def _valid_descriptor(tool: Tool | None) -> dict[str, str] | None:
    """A tool's own presentation descriptor keys (``agh/friendly_verb``, ``agh/preview``) when they
    are valid (an invalid one is dropped, as the registry drops it), so front-ends that present
    calls themselves see them too."""
    extension = tool.extension if tool is not None else None
    if not extension:
        return None
    try:
        presentation = parse_mcp_meta(extension)
    except DescriptorError:
        return None
    if presentation is None:
        return None
    out = {}
    if presentation.verb:
        out[MCP_VERB_KEY] = presentation.verb
    if presentation.preview:
        out[MCP_PREVIEW_KEY] = presentation.preview
    return out or None


def _absolute(workspace: str | None, path: str) -> str:
    if os.path.isabs(path) or workspace is None:
        return path
    return os.path.normpath(os.path.join(workspace, path))
