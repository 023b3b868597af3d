"""The plain terminal, the last channel of the routing order: what ``acp-progress run`` and
``run_agent.py`` print when no ACP client is attached (spinner lines, tool cards, permission)."""

__all__: list[str] = []
