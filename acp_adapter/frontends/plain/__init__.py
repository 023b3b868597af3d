"""The plain terminal, the last channel of the routing order: what ``acp-progress run`` (and
``python run_agent.py``, the same command) prints when no ACP client is attached — ``run`` (the
one-prompt front-end), ``printer`` (spinner lines, answer, usage), ``tools`` (tool cards) and
``permission`` (the terminal question)."""

__all__: list[str] = []
