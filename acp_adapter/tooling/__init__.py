"""Tools: the toolbox and its one execution path, the built-in tools, the presentation registry
that turns a call into a safe one-line label, and presentation descriptor files.

Depends on ``safety`` (every label and preview is redacted) and ``protocol``; knows nothing of
sessions, connections or front-ends. Internal: the embedding API is in :mod:`acp_adapter`.
"""

__all__: list[str] = []
