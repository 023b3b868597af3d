"""Safety: the canonical redactor (``redact``: one-shot, token shapes, command-line credentials,
streamed text), the one terminal-text sanitizer (``terminal_text``), text made safe for the AG-UI
endpoint and its web page (``web_text``), the private-path rule for state files
(``private_path``), which environment variables a child may see (``secret_env``), and logging
that redacts and escapes every line (``logging``).

Depends only on the standard library and ``acp_adapter.errors``; every other layer calls it
before a string leaves the process (secrets never leave).
"""

__all__: list[str] = []
