"""The AG-UI redaction policy: which tool-reported values a host lets reach the browser.

A policy is a host function ``redact(kind, payload) -> payload`` called with kind ``tool_progress``
for every progress payload (``{value?, total?, message?}``) and with kind ``tool_result`` for every
tool result (``{"toolCallId", "status", "content"}``). It decides *what* may be published; the
canonical redactor (:func:`acp_adapter.safety.redact.redact_value`) then still runs on whatever the policy
returned, so a permissive policy can never publish a token shape.

* :func:`default_policy` replaces every reported progress value with ``"[redacted]"`` — numbers
  included, since a count can be as private as a message — and leaves tool results to the canonical
  redactor.
* :func:`counts_policy` (``--redact counts``) publishes the counts (value and total) and withholds
  the messages.
* :func:`none_policy` publishes host-approved data as it is (still canonically redacted).
* a custom policy is a callable, or named ``module:function`` on the command line (``--redact``).

A policy that raises, or returns something that is not a mapping, fails closed: :func:`apply_policy`
returns ``None`` (the value is withheld), logs the failure, and the run goes on.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from acp_adapter.errors import AcpProgressError
from acp_adapter.safety.redact import redact_text, redact_value

log = logging.getLogger("acp_progress.agui.policy")

RedactKind = Literal["tool_progress", "tool_result"]
RedactPolicy = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]

TOOL_PROGRESS: Final = "tool_progress"
TOOL_RESULT: Final = "tool_result"
#: What the default policy publishes in place of each reported progress value (the spelling
#: AG-UI clients of other hosts already show for a withheld value).
POLICY_REDACTED: Final = "[redacted]"


class PolicyError(AcpProgressError, ValueError):
    """A policy name on the command line that does not resolve to a callable."""


def default_policy(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Withhold every progress value (keys kept, so the client still sees *that* work advanced)."""
    if kind == TOOL_PROGRESS:
        return dict.fromkeys(payload, POLICY_REDACTED)
    return dict(payload)


def counts_policy(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Publish a tool's counts (``value``, ``total``: the page draws a bar with numbers) and withhold
    its messages, which may name files, people or data (``--redact counts``)."""
    if kind == TOOL_PROGRESS:
        return {
            key: value if key in ("value", "total") and isinstance(value, int | float) else POLICY_REDACTED
            for key, value in payload.items()
        }
    return dict(payload)


def none_policy(kind: str, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Publish host-approved data as it is; the canonical redactor still runs afterwards."""
    return dict(payload)


_NAMED: Final[dict[str, RedactPolicy]] = {
    "default": default_policy,
    "counts": counts_policy,
    "none": none_policy,
}


def load_policy(spec: str | RedactPolicy | None) -> RedactPolicy:
    """Resolve ``None``/``"default"``, ``"none"``, ``"module:function"`` or a callable to a policy."""
    if spec is None:
        return default_policy
    if callable(spec):
        return spec
    if spec in _NAMED:
        return _NAMED[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PolicyError(
            f"redaction policy {spec!r}: expected 'default', 'counts', 'none' or 'module:function'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PolicyError(f"redaction policy {spec!r}: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise PolicyError(f"redaction policy {spec!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(target):
        raise PolicyError(f"redaction policy {spec!r}: {attr!r} is not callable")
    policy: RedactPolicy = target
    return policy


def apply_policy(policy: RedactPolicy, kind: RedactKind, payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """Policy first, then the canonical redactor on everything; ``None`` when the value is withheld."""
    try:
        chosen = policy(kind, dict(payload))
    except Exception as exc:
        log.warning("redaction policy failed on %s; value withheld: %s", kind, redact_text(repr(exc)))
        return None
    if not isinstance(chosen, Mapping):
        log.warning(
            "redaction policy returned %s for %s, not a mapping; value withheld", type(chosen).__name__, kind
        )
        return None
    redacted: dict[str, Any] = redact_value(dict(chosen))
    return redacted
