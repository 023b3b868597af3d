"""Safety: the canonical redactor (``redact``: one-shot, token shapes, command-line credentials,
streamed text) and logging that redacts and escapes every line.

Depends only on the standard library and ``acp_adapter.errors``; every other layer calls it
before a string leaves the process (secrets never leave).
"""

__all__: list[str] = []
