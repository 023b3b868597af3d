"""Who answered a question at a terminal, as the agent's permission audit records it."""

from __future__ import annotations

import getpass


def terminal_user() -> str:
    """The login name of the person at this terminal (``watch``, ``chat``, the console bridge)."""
    try:
        return getpass.getuser()
    except Exception:  # no name for this uid (a container): still a person at a terminal
        return "terminal user"
