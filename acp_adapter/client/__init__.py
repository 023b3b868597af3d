"""The client side: the one driver that talks to any ACP agent as an editor does (``driver``,
over ``transport``, one prompt's ``turn`` at a time, with ``session_state``), the ``supervisor``
that restarts it, the agent as an operating-system process (``agent_process``, ``procgroup``),
checked notifications (``agent_notifications``), the driver's errors (``agent_errors``), and the
agent's permission requests and questions as the client side sees them (``permissions``,
``questions``).

Depends on ``protocol`` and ``safety``; every front-end drives agents through it and nothing else.
"""

__all__: list[str] = []
