"""``AIAgent``: the synchronous agent loop with its three spinner hook sites.

The loop runs in a worker thread (or, as a plain program, in the main thread). Around every model
call it reports progress through exactly three ``self.agent_progress_callback(`` sites:

* hook A — ``("start", "llm_response", {})`` right before the model call;
* hook B — ``("complete", "llm_response", {...})`` on the first streamed event of any kind, or when
  the call ends without one (error, cancellation), so the card never spins forever;
* hook C — ``("heartbeat", "llm_response", {"elapsed": s, "status": ...})`` every interval while
  waiting, from the heartbeats passed in (under ACP the event loop's ``call_later``; otherwise the
  one shared scheduler thread — never a thread per call), cancelled before hook B.

Each site is wrapped so an exception in a callback cannot escape into the turn. Routing follows
the routing order: the progress callback (tool card) when an ACP client is attached, else the
thought-text callback, else the terminal printer. ``scripts/check_hook_sites.py`` verifies the three sites.

Run ``python run_agent.py "your prompt"`` (the same as ``acp-progress run "your prompt"``) for a
plain terminal session on the embedded model.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_adapter.agent.heartbeat import HeartbeatHandle, Heartbeats, default_scheduler
from acp_adapter.agent.turn_outcome import TurnResult
from acp_adapter.cancel import CancelToken, TurnCancelled
from acp_adapter.config import Settings
from acp_adapter.models import (
    ChatModel,
    ImagePart,
    Message,
    ModelError,
    PlanStep,
    PlanUpdate,
    ReasoningDelta,
    StatusNote,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    UsageReport,
    create_model,
)
from acp_adapter.models.plans import PLAN_TOOL, PlanTracker, parse_plan_arguments
from acp_adapter.safety.redact import redact_text
from acp_adapter.text import THINKING_TITLE, still_thinking
from acp_adapter.tooling.toolbox import PermissionPolicy, Toolbox, ToolObserver, ToolOutcome

if TYPE_CHECKING:  # a terminal front-end's printer: serve never needs it (cold start)
    from acp_adapter.frontends.plain.printer import TerminalPrinter

__all__ = ["AIAgent", "close_tool_pairs"]

log = logging.getLogger("acp_progress.agent")

LLM_RESPONSE = "llm_response"


@dataclass
class _LLMCall:
    """State of one model call shared by the worker thread and the heartbeat scheduler."""

    started: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False
    status: str | None = None
    heartbeat: HeartbeatHandle | None = None


class AIAgent:
    """The agent loop: model call → tools → model call … until an answer without tools."""

    def __init__(
        self,
        model: ChatModel | None = None,
        *,
        toolbox: Toolbox | None = None,
        agent_progress_callback: Callable[..., None] | None = None,
        thinking_callback: Callable[[str], Any] | None = None,
        message_callback: Callable[[str], Any] | None = None,
        usage_callback: Callable[[UsageReport], Any] | None = None,
        plan_callback: Callable[[Sequence[PlanStep]], Any] | None = None,
        tool_observer: ToolObserver | None = None,
        permission_callback: PermissionPolicy | None = None,
        heartbeat_interval: float | None = None,
        heartbeat_disabled: bool | None = None,
        scheduler: Heartbeats | None = None,
        cancel: CancelToken | None = None,
        max_turns: int | None = None,
        system_prompt: str | None = None,
        printer: TerminalPrinter | None = None,
        settings: Settings | None = None,
        error_note: bool = True,
    ) -> None:
        self.settings = settings or Settings.from_env()
        #: write "⚠️ The model request failed: …" into the answer; off under ACP, where the prompt's
        #: JSON-RPC error carries the reason instead (a client shows it once, as an error)
        self.error_note = error_note
        self.model = model or create_model(self.settings)
        self.toolbox = toolbox
        self.agent_progress_callback = agent_progress_callback
        self.thinking_callback = thinking_callback
        self.message_callback = message_callback
        self.usage_callback = usage_callback
        #: ``plan_callback(steps)``: the model's plan, whole, each time it changes (ACP ``plan``)
        self.plan_callback = plan_callback
        self._plan = PlanTracker()
        self.tool_observer = tool_observer
        self.permission_callback = permission_callback
        self.heartbeat_interval = (
            heartbeat_interval if heartbeat_interval is not None else self.settings.heartbeat_interval
        )
        self.heartbeat_disabled = (
            heartbeat_disabled if heartbeat_disabled is not None else self.settings.heartbeat_disabled
        )
        self.scheduler = scheduler or default_scheduler()
        self.cancel = cancel or CancelToken()
        self.max_turns = max_turns or self.settings.max_turns
        self.system_prompt = system_prompt
        self._printer = printer
        self._usage_total: UsageReport | None = None

    # ------------------------------------------------------------ routing helpers

    @property
    def printer(self) -> TerminalPrinter:
        if self._printer is None:
            from acp_adapter.frontends.plain.printer import TerminalPrinter

            self._printer = TerminalPrinter()
        return self._printer

    def _safe(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call a non-hook callback; a failing hook never breaks the turn."""
        try:
            fn(*args)
        except Exception as exc:
            log.warning(
                "callback %s failed: %s", getattr(fn, "__name__", fn), redact_text(str(exc)), exc_info=True
            )

    def _emit_answer(self, text: str) -> None:
        if self.message_callback is not None:
            self._safe(self.message_callback, text)
        elif self.agent_progress_callback is None and self.thinking_callback is None:
            self._safe(self.printer.answer, text)

    def _emit_plan(self) -> None:
        if self.plan_callback is not None:
            self._safe(self.plan_callback, self._plan.steps)
        elif self.agent_progress_callback is None and self.thinking_callback is None:
            self._safe(self.printer.plan, self._plan.steps)

    def _emit_reasoning(self, text: str) -> None:
        if self.thinking_callback is not None:
            self._safe(self.thinking_callback, text)
        elif self.agent_progress_callback is None:
            self._safe(self.printer.thought, text)

    # ------------------------------------------------------------ the three hook sites

    def _llm_start(self, call: _LLMCall) -> None:
        """Hook A: before the model call."""
        if self.agent_progress_callback:
            try:
                self.agent_progress_callback("start", LLM_RESPONSE, {})
            except Exception as exc:
                log.warning("agent_progress_callback(start) failed: %s", redact_text(str(exc)), exc_info=True)
        elif self.thinking_callback is not None:
            self._safe(self.thinking_callback, THINKING_TITLE)
        else:
            self._safe(self.printer.spinner_start, THINKING_TITLE)
        if not self.heartbeat_disabled:
            call.heartbeat = self.scheduler.every(self.heartbeat_interval, lambda: self._llm_heartbeat(call))

    def _llm_heartbeat(self, call: _LLMCall) -> None:
        """Hook C: every interval while nothing has arrived yet (runs on the heartbeats' clock thread:
        the event loop under ACP, the scheduler thread otherwise)."""
        with call.lock:
            if call.done:
                return
            elapsed = time.monotonic() - call.started
            status = call.status
        if self.agent_progress_callback:
            try:
                self.agent_progress_callback(
                    "heartbeat", LLM_RESPONSE, {"elapsed": elapsed, "status": status}
                )
            except Exception as exc:
                log.warning(
                    "agent_progress_callback(heartbeat) failed: %s", redact_text(str(exc)), exc_info=True
                )
        elif self.thinking_callback is not None:
            self._safe(self.thinking_callback, f"{still_thinking(elapsed, status)}\n")
        else:
            self._safe(self.printer.spinner_heartbeat, elapsed, status)

    def _on_first_delta(self, call: _LLMCall, error: str | None = None) -> None:
        """Hook B: the first streamed event arrived, or the call ended without one. Idempotent."""
        with call.lock:
            if call.done:
                return
            call.done = True
        if call.heartbeat is not None:
            call.heartbeat.cancel()  # returns once no heartbeat can run: none follows the complete
        if self.agent_progress_callback:
            try:
                self.agent_progress_callback("complete", LLM_RESPONSE, {"error": error} if error else {})
            except Exception as exc:
                log.warning(
                    "agent_progress_callback(complete) failed: %s", redact_text(str(exc)), exc_info=True
                )
        elif self.thinking_callback is None:
            self._safe(self.printer.spinner_stop, error)

    # ------------------------------------------------------------ one model call

    def _call_model(self, messages: Sequence[Message]) -> tuple[str, list[ToolCall]]:
        call = _LLMCall(started=time.monotonic())
        text_parts: list[str] = []
        tool_calls: list[ToolCall] = []
        specs = self.toolbox.specs() if self.toolbox is not None else []
        self._llm_start(call)
        try:
            for event in self.model.stream(messages, specs, self.cancel):
                if isinstance(event, StatusNote):
                    with call.lock:
                        call.status = event.text
                    continue
                if isinstance(event, UsageReport):
                    self._record_usage(event)
                    continue
                self._on_first_delta(call)
                if isinstance(event, TextDelta):
                    text_parts.append(event.text)
                    self._emit_answer(event.text)
                elif isinstance(event, ReasoningDelta):
                    self._emit_reasoning(event.text)
                elif isinstance(event, ToolCallRequest):
                    tool_calls.append(event.call)
                elif isinstance(event, PlanUpdate) and self._plan.replace(event):
                    self._emit_plan()
                self.cancel.raise_if_cancelled()
        except TurnCancelled:
            self._on_first_delta(call, error="Cancelled")
            raise
        except ModelError as exc:
            self._on_first_delta(call, error=exc.reason)
            raise
        except Exception as exc:
            # Unexpected (a bug in a back-end, not a model error): keep its traceback in the log.
            log.error("the model back-end %s crashed", getattr(self.model, "name", "?"), exc_info=True)
            self._on_first_delta(call, error=f"{type(exc).__name__}: {exc}")
            raise ModelError(f"The model back-end crashed ({type(exc).__name__}: {exc})") from exc
        finally:
            self._on_first_delta(call)  # a stream that ended without any content still closes
        return "".join(text_parts), tool_calls

    def _record_usage(self, usage: UsageReport) -> None:
        prev = self._usage_total
        if prev is None:
            self._usage_total = usage
        else:
            costs = [c for c in (prev.cost, usage.cost) if c is not None]
            self._usage_total = UsageReport(
                prev.input_tokens + usage.input_tokens,
                prev.output_tokens + usage.output_tokens,
                prev.total_tokens + usage.total_tokens,
                usage.context_window or prev.context_window,
                sum(costs) if costs else None,
            )
        if self.usage_callback is not None:
            self._safe(self.usage_callback, usage)

    # ------------------------------------------------------------ tools

    def _run_plan_tool(self, call: ToolCall) -> Message:
        """The model stated its plan (:data:`PLAN_TOOL`): a ``plan`` update, not a tool card."""
        try:
            update = parse_plan_arguments(call.arguments)
        except ValueError as exc:
            return Message("tool", f"error: {exc}", tool_call_id=call.id, name=call.name)
        if self._plan.replace(update):
            self._emit_plan()
        return Message("tool", "Plan updated.", tool_call_id=call.id, name=call.name)

    def _run_tool(self, call: ToolCall) -> Message:
        if call.name == PLAN_TOOL and (self.toolbox is None or PLAN_TOOL not in self.toolbox):
            return self._run_plan_tool(call)
        assert self.toolbox is not None
        if self._plan.call_started(call.id):
            self._emit_plan()
        try:
            outcome: ToolOutcome = self.toolbox.execute(
                call,
                cancel=self.cancel,
                observer=self.tool_observer,
                permission=self.permission_callback,
                output_wait=self.settings.command_output_wait,
            )
        except TurnCancelled:
            if self._plan.call_finished(call.id, "cancelled"):
                self._emit_plan()
            raise
        if self._plan.call_finished(call.id, None if outcome.ok else outcome.error or "failed"):
            self._emit_plan()
        # a failed result with text (a command's output and exit code) is what the model reads
        content = outcome.text if outcome.ok or outcome.text else f"error: {outcome.error}"
        if (
            self.tool_observer is None
            and self.message_callback is None
            and self.agent_progress_callback is None
        ):
            mark = "✔" if outcome.ok else "✖"
            detail = outcome.summary if outcome.ok else outcome.error or "failed"
            self._safe(self.printer.note, f"{mark} {call.name} {detail}")
        return Message("tool", content, tool_call_id=call.id, name=call.name)

    # ------------------------------------------------------------ the loop

    def run_conversation(
        self, user_text: str, history: Sequence[Message] = (), *, images: Sequence[ImagePart] = ()
    ) -> TurnResult:
        """Run one turn to its end; never raises for model errors or cancellation. ``images``
        attached to the prompt reach a back-end that sees images with the user's message."""
        self._usage_total = None
        messages: list[Message] = []
        if self.system_prompt and not any(m.role == "system" for m in history):
            messages.append(Message("system", self.system_prompt))
        messages.extend(history)
        new: list[Message] = [Message("user", user_text, images=tuple(images))]
        messages.append(new[0])
        answer = ""
        try:
            for _ in range(self.max_turns):
                self.cancel.raise_if_cancelled()
                text, tool_calls = self._call_model(messages)
                answer += text
                reply = Message("assistant", text, tool_calls=tuple(tool_calls))
                messages.append(reply)
                new.append(reply)
                if not tool_calls:
                    return TurnResult("end_turn", answer, new, usage=self._usage_total)
                if self.toolbox is None and any(c.name != PLAN_TOOL for c in tool_calls):
                    raise ModelError("The model asked for tools, but this agent has none configured.")
                for call in tool_calls:
                    self.cancel.raise_if_cancelled()
                    result = self._run_tool(call)
                    messages.append(result)
                    new.append(result)
            note = f"\n\n(Stopped after {self.max_turns} model calls without a final answer.)"
            self._emit_answer(note)
            return TurnResult("max_turn_requests", answer + note, new, usage=self._usage_total)
        except TurnCancelled:
            close_tool_pairs(new, "cancelled: the turn was cancelled before this tool call finished")
            return TurnResult("cancelled", answer, new, usage=self._usage_total)
        except ModelError as exc:
            reason = redact_text(exc.reason)
            if self.error_note:
                note = f"⚠️ The model request failed: {reason}"
                self._emit_answer(("\n\n" if answer else "") + note)
            close_tool_pairs(new, f"not run: {reason}")
            return TurnResult("end_turn", answer, new, error=reason, usage=self._usage_total)


def close_tool_pairs(messages: list[Message], reason: str) -> None:
    """Give every tool call of the last assistant message a result, in place.

    OpenAI-compatible servers answer HTTP 400 to a history holding an assistant ``tool_calls``
    message whose calls have no ``tool`` results, so a turn that stops between the two (cancel,
    a model error) must not leave the pair open: each unanswered call gets an error result.
    """
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            for call in message.tool_calls:
                if call.id not in answered:
                    messages.append(Message("tool", f"error: {reason}", tool_call_id=call.id, name=call.name))
            return


if __name__ == "__main__":  # ``python run_agent.py "your prompt"`` is ``acp-progress run "your prompt"``
    from acp_adapter.cli import main

    sys.exit(main(["run", *sys.argv[1:]]))
