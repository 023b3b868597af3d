"""The one secret redactor of the project.

Everything that leaves the adapter for a client (tool cards, previews, logs, error
messages) may contain whatever the agent or a tool happened to print: tokens pasted on a
command line, ``Authorization`` headers in a curl call, a ``.env`` file that was read,
a stack trace with a connection URL.  Redaction is therefore done in one place, with one
vocabulary of what counts as a secret, so that every surface hides the same things.

Three promises shape the implementation:

* **Keep the label, drop the value.**  ``password=[REDACTED]`` still tells a user which
  setting was involved; only the secret itself goes.
* **Idempotent.**  Output is often redacted again on its way through another layer, so a
  second pass must not change anything (no ``[REDACTED]`` nested in a placeholder).
* **Linear time on any input.**  Tool output is attacker-controllable (a file, a web
  page), so no input may trigger regex backtracking.  Every repetition is bounded, every
  scan starts from a literal (which ``re`` finds with its fast prefix search), and a
  fixed-width look-behind after the literal rejects starts inside a longer run, so a run
  of token characters is examined once.  Values longer than a bound are walked in
  bounded chunks rather than cut short, so their tails do not leak.

The work is split into passes over the current text, in this order: PEM private-key
blocks; credentials carried by URLs (``user:pass@``, webhook paths, ``secret://``);
provider token shapes (GitHub, OpenAI, AWS, ...); and ``key=value`` / header / JSON /
query-parameter forms.  The last pass is driven by a dozen lower-case needles
(``token``, ``secret``, ``pass`` ...): only where one occurs is the key around it
measured, classified with :func:`is_sensitive_key` and its value located.  Short strings,
the bulk of what :func:`redact_value` sees, are first screened with one regex and returned
untouched when no pass could apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_adapter.safety.redact.placeholder import REDACTED

if TYPE_CHECKING:
    from types import ModuleType

    from acp_adapter.safety.redact.engine import (
        is_sensitive_key,
        is_sensitive_name,
        private_key_blocks,
        private_key_end,
    )

__all__ = [
    "REDACTED",
    "is_sensitive_key",
    "is_sensitive_name",
    "private_key_blocks",
    "private_key_end",
    "redact_text",
    "redact_value",
]

#: the engine module once loaded: its patterns are compiled on the first redaction, not at import
_engine: ModuleType | None = None
_LAZY = frozenset({"is_sensitive_key", "is_sensitive_name", "private_key_blocks", "private_key_end"})


def _load() -> ModuleType:
    global _engine
    if _engine is None:
        from acp_adapter.safety.redact import engine

        _engine = engine
    return _engine


def redact_text(text: str) -> str:
    """Return ``text`` with every recognisable secret replaced by :data:`REDACTED`.

    Labels survive (``Authorization: Bearer [REDACTED]``, ``"api_key": "[REDACTED]"``,
    ``https://user:[REDACTED]@host``) so the reader still knows what was hidden.  The
    result is a fixed point: redacting it again changes nothing.  Runs in time linear in
    ``len(text)`` whatever the content.
    """
    if not text:
        return text
    result: str = (_engine or _load()).redact_text(text)
    return result


def redact_value(value: Any) -> Any:
    """Return a redacted deep copy of a JSON-like value; the input is never mutated (see
    :func:`acp_adapter.safety.redact.engine.redact_value`)."""
    return (_engine or _load()).redact_value(value)


def __getattr__(name: str) -> Any:
    """The engine's other public names, loaded with it on first access."""
    if name in _LAZY:
        value = getattr(_load(), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
