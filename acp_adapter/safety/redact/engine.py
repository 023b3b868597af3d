"""The redactor's passes and screen, compiled on first use (see :mod:`acp_adapter.safety.redact`).

A module of its own so that importing the package costs nothing: an agent answers ``initialize``
and ``session/new`` before any of these patterns is compiled (a cold start stays fast).
"""

from __future__ import annotations

import re
from typing import Any, Final

from acp_adapter.safety.redact.cmdline import _PGPASS_PORT, redact_command_lines
from acp_adapter.safety.redact.keyed import _NEEDLES, _redact_keyed
from acp_adapter.safety.redact.keys import is_sensitive_key, is_sensitive_name
from acp_adapter.safety.redact.oauth import _OAUTH_KEYS
from acp_adapter.safety.redact.passes import (
    _SHAPE_LITERALS,
    _SHAPE_PATTERNS,
    _aws_prose_spans,
    _redact_pem,
    _redact_shapes,
    _redact_urls,
    _trie_pattern,
    private_key_blocks,
    private_key_end,
)
from acp_adapter.safety.redact.placeholder import REDACTED
from acp_adapter.safety.redact.textops import _ascii_lower, _replace_spans
from acp_adapter.safety.redact.toolargs import TOOL_LITERALS, redact_tool_arguments

__all__ = [
    "REDACTED",
    "is_sensitive_key",
    "is_sensitive_name",
    "private_key_blocks",
    "private_key_end",
    "redact_text",
    "redact_value",
]

# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------


# Every detection needs at least one of these: the PEM header, ``://``, a shape trigger above, a
# command-line or AWS word of pass 5, or a key needle of pass 4. Short strings are screened with
# it in one regex step: most strings redact_value sees are names, paths and numbers, and the
# pass-by-pass pipeline has a fixed cost of a few dozen scans however short the input.
_SCREEN_LITERALS: Final = (
    "-----begin",
    "://",
    "aws",
    "-u",
    "mysql",
    "mariadb",
    "sshpass",
    "login",
    "redis-cli",
    "htpasswd",
    "sudo",
    *TOOL_LITERALS,
    *_SHAPE_LITERALS,
    *_NEEDLES,
)
# a ``.pgpass`` line's port with the two fields after it: exactly what the family's own scan looks for, so
# a log's ``12:34:56`` (a port-like field, but one field after it) is no trigger
_SCREEN_PATTERNS: Final = (*_SHAPE_PATTERNS, _PGPASS_PORT.pattern)


_ANY_TRIGGER: Final = re.compile("|".join((_trie_pattern(_SCREEN_LITERALS), *_SCREEN_PATTERNS)))
"""Matches where at least one trigger occurs (a screen: a false alarm costs time, never safety)."""
_SCREEN_BELOW: Final = 512


def redact_text(text: str) -> str:
    """Return ``text`` with every recognisable secret replaced by :data:`REDACTED`.

    Labels survive (``Authorization: Bearer [REDACTED]``, ``"api_key": "[REDACTED]"``,
    ``https://user:[REDACTED]@host``) so the reader still knows what was hidden.  The
    result is a fixed point: redacting it again changes nothing.  Runs in time linear in
    ``len(text)`` whatever the content.
    """
    if not text:
        return text
    if len(text) < _SCREEN_BELOW:
        # Short strings repeat endlessly (dict keys, phases, titles, a message redacted once by
        # its builder and again inside ``_meta``): answer them from a bounded cache.
        done = _SHORT_CACHE.get(text)
        if done is None:
            done = text if _ANY_TRIGGER.search(text.lower()) is None else _redact_passes(text)
            if len(_SHORT_CACHE) >= _SHORT_CACHE_MAX:
                _SHORT_CACHE.clear()
            _SHORT_CACHE[text] = done
        return done
    return _redact_passes(text)


_SHORT_CACHE: dict[str, str] = {}
_SHORT_CACHE_MAX: Final = 4096


def _redact_passes(text: str) -> str:
    """Every pass of :func:`redact_text`, in order."""
    text = _redact_pem(text)
    text = _redact_urls(text)
    text = _redact_shapes(text)
    text = _redact_cli(text)
    return _redact_keyed(text)


def _redact_cli(text: str) -> str:
    """Pass 5: credentials given as command-line arguments (see :mod:`acp_adapter.safety.redact.cmdline`),
    and AWS secret keys in prose, which need the same lower-case copy of the text."""
    low = _ascii_lower(text)
    spans = redact_command_lines(text, low, is_sensitive_key)
    spans.extend(redact_tool_arguments(text, low))
    spans.extend(_aws_prose_spans(text, low))
    return _replace_spans(text, spans) if spans else text


_MAX_DEPTH: Final = 200


def redact_value(value: Any) -> Any:
    """Return a redacted deep copy of a JSON-like value; the input is never mutated.

    Strings go through :func:`redact_text`; a dict entry whose key names a secret (see
    :func:`is_sensitive_key`) is replaced wholesale, whatever its type, because a number
    or a nested object under ``password`` is as secret as a string.  Keys are redacted
    too, since tools sometimes key maps by token.  Structures nested deeper than any sane
    payload are replaced rather than walked, so hostile input cannot exhaust the stack.
    """
    return _redact_value(value, 0)


def _redact_value(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        if depth >= _MAX_DEPTH:
            return REDACTED
        out: dict[Any, Any] = {}
        oauth_request = "code" in value and not _OAUTH_KEYS.isdisjoint(value)
        for key, item in value.items():
            if isinstance(key, str):
                new_key = redact_text(key)
                secret = is_sensitive_key(key) or (oauth_request and key == "code")
                out[new_key] = REDACTED if secret else _redact_value(item, depth + 1)
            else:
                out[key] = _redact_value(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        if depth >= _MAX_DEPTH:
            return REDACTED
        items = [_redact_value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
