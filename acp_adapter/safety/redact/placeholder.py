"""The placeholder that replaces a removed secret (shared by every redaction module)."""

from __future__ import annotations

from typing import Final

REDACTED: Final[str] = "[REDACTED]"
"""Placeholder for a removed secret.

Brackets are deliberate: no value or token pattern below accepts ``[`` as a first
character, which is what makes a second redaction pass a no-op.
"""
