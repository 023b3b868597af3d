"""Turning a generator's answer into the one line a surface shows.

Models wrap answers in quotes, add a label or break lines; surfaces have one line of room. The
text is redacted *before* it is cut, so a secret can never survive as a fragment the redactor no
longer recognises, and the cut result (ending with ``…``) is never longer than ``max_length``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from acp_adapter.safety.redact import redact_text
from acp_adapter.text import ellipsize

_QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»", "„": "“"}
_LABEL = re.compile(r"^(?:progress\s+)?(?:summary|status)\s*:\s*", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def summary_text(raw: Any) -> str | None:
    """The text of what a generator returned: a string, or a mapping with a ``summary`` string."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, Mapping):
        value = raw.get("summary")
        return value if isinstance(value, str) else None
    return None


def _strip_quotes(text: str) -> str:
    while len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text


def clean_summary(raw: Any, max_length: int) -> str:
    """One redacted line, quotes and a leading ``Summary:`` label removed, bounded; ``""`` if empty."""
    text = summary_text(raw)
    if not text:
        return ""
    text = " ".join(_CONTROL.sub(" ", text).split())
    text = _LABEL.sub("", _strip_quotes(text))
    text = _strip_quotes(text)
    text = redact_text(text)
    return ellipsize(text, max_length, words=True) if text else ""
