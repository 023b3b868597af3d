"""Prompt templates for the summarizer: a string rendered in Jinja2's sandbox, or a function.

Why a sandbox: a template string often comes from configuration, and plain Jinja lets a template
walk from any value to Python internals (``x.__class__.__mro__ …``). ``SandboxedEnvironment``
refuses such attribute access at render time (``jinja2.exceptions.SecurityError``); the capability
counts that as a failed generation (trace event, no summary), never as a crash. Undefined names are
errors too (``StrictUndefined``), so a typo shows up in the trace instead of as an empty prompt.

String templates see their values under ``data``: ``data.userText``, ``data.elapsed`` (text such as
``40s``), ``data.elapsedSeconds``, ``data.reasoningActive``, ``data.reasoningActiveText``,
``data.activeTools``, ``data.completedTools`` (lists that print as ``a, b``), ``data.previous`` and
every extra variable as ``data.<name>``. Function templates get a :class:`TemplateContext`: the
structured snapshot plus ``input``, ``messages``, ``elapsed_text``, ``active_tools_text``,
``completed_tools_text`` and the resolved variables. Whatever a template renders is redacted again
before it is sent.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from acp_adapter.safety.redact import redact_text, redact_value
from acp_adapter.summary.snapshot import ProgressSnapshot

RESERVED_KEYS = frozenset(
    {
        "userText",
        "elapsed",
        "elapsedSeconds",
        "reasoningActive",
        "reasoningActiveText",
        "activeTools",
        "completedTools",
        "previous",
    }
)


@dataclass(frozen=True)
class TemplateContext:
    """What a function template (and a variable callable) receives."""

    snapshot: ProgressSnapshot
    input: Any = None
    messages: Sequence[Any] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)

    @property
    def user_text(self) -> str:
        return self.snapshot.user_text

    @property
    def elapsed(self) -> float:
        return self.snapshot.elapsed

    @property
    def reasoning_active(self) -> bool:
        return self.snapshot.reasoning_active

    @property
    def active_tools(self) -> tuple[str, ...]:
        return self.snapshot.active_tools

    @property
    def completed_tools(self) -> tuple[str, ...]:
        return self.snapshot.completed_tools

    @property
    def previous(self) -> str | None:
        return self.snapshot.previous

    @property
    def elapsed_text(self) -> str:
        return self.snapshot.elapsed_text

    @property
    def active_tools_text(self) -> str:
        return self.snapshot.active_tools_text

    @property
    def completed_tools_text(self) -> str:
        return self.snapshot.completed_tools_text


PromptTemplate: TypeAlias = str | Callable[[TemplateContext], str]
"""A Jinja2 string (rendered sandboxed) or a function of the :class:`TemplateContext`."""


class _TextList(list[str]):
    """A list of names that prints as ``a, b`` (or ``none``) when a template shows it as is."""

    def __str__(self) -> str:
        return ", ".join(self) or "none"


def template_data(context: TemplateContext) -> dict[str, Any]:
    """The ``data`` namespace of a string template."""
    snap = context.snapshot
    data: dict[str, Any] = {
        "userText": snap.user_text,
        "elapsed": snap.elapsed_text,
        "elapsedSeconds": round(snap.elapsed, 1),
        "reasoningActive": snap.reasoning_active,
        "reasoningActiveText": "the agent is reasoning"
        if snap.reasoning_active
        else "the agent is not reasoning",
        "activeTools": _TextList(snap.active_tools),
        "completedTools": _TextList(snap.completed_tools),
        "previous": snap.previous or "",
    }
    for name, value in context.variables.items():
        data[name] = value
    return data


def check_variables(variables: Mapping[str, Any]) -> None:
    """Variable names must be identifiers that do not shadow a built-in ``data`` key."""
    for name in variables:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise ValueError(f"summary template variable {name!r}: expected an identifier")
        if name in RESERVED_KEYS:
            raise ValueError(f"summary template variable {name!r}: shadows the built-in data.{name}")


def resolve_variables(variables: Mapping[str, Any], context: TemplateContext) -> dict[str, Any]:
    """Call the callable variables with the context; every value is redacted."""
    out: dict[str, Any] = {}
    for name, value in variables.items():
        resolved = value(context) if callable(value) else value
        out[name] = redact_value(resolved)
    return out


class StringTemplate:
    """A Jinja2 template compiled once in a ``SandboxedEnvironment``; syntax errors raise at once."""

    def __init__(self, source: str) -> None:
        from jinja2 import StrictUndefined, TemplateError
        from jinja2.sandbox import SandboxedEnvironment

        self.source = source
        env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
        try:
            self._template = env.from_string(source)
        except TemplateError as exc:
            raise ValueError(f"summary template: {redact_text(str(exc))}") from None

    def __call__(self, context: TemplateContext) -> str:
        return self._template.render(data=template_data(context))


def compile_template(template: PromptTemplate) -> Callable[[TemplateContext], str]:
    """A renderer for ``template``: strings are compiled in the sandbox, functions used as given."""
    if isinstance(template, str):
        return StringTemplate(template)
    if callable(template):
        return template
    raise TypeError(f"summary template: expected a string or a function, got {type(template).__name__}")
