"""The client side: the one driver that talks to any ACP agent as an editor does, the
supervisor that restarts it, process groups, and the client-side card accumulator.

Depends on ``protocol`` and ``safety``; every front-end drives agents through it and nothing else.
"""

__all__: list[str] = []
