"""Tools: the toolbox and its one execution path (``toolbox``), the built-in tools (``builtin``,
and the editing tools in ``edits``), the presentation registry that turns a call into a safe
one-line label (``presentation``) and presentation descriptor files (``descriptor``); what a tool
call is (``calls``), what a card shows beside its text (``display``), the editor's files and
terminals as the tools see them (``host``) and workspace containment for every path (``paths``).

Depends on ``safety`` (every label and preview is redacted) and ``protocol``; knows nothing of
sessions, connections or front-ends. Internal: the embedding API is in :mod:`acp_adapter`.
"""

__all__: list[str] = []
