"""The agent side: how this package's ACP agent turns a running turn into cards.

``outbox`` is the one ordered delivery path from any thread to the connection; ``turn_state`` the
per-session state machine that keeps "no orphan card" and "nothing after the end", behind one lock
in front of ``turn_cards`` (the open cards), ``turn_think`` (think cards), ``turn_tools`` (real tool
cards) and ``turn_output`` (the hand-off of updates and redacted text to the outbox);
``turn`` the embedding API's :class:`~acp_adapter.agent.turn.ProgressTurn`; ``tool_cards`` the ACP
projection of real tool calls; ``session`` per-session state; ``heartbeat`` repeating
heartbeats on a clock (the event loop's, or one shared thread without a loop).

Around them, the objects the agent answers ACP methods with, each handed the parts it uses
(``session_parts``): ``session_opening`` (new, load, resume, fork, a freed session brought back),
``session_roster`` (list, close, delete, the store flush), ``session_options`` (modes, models, config
options, commands; ``session_config`` the values), ``prompt_turns`` (the prompts' turns),
``model_backends``, ``sign_in`` and ``permission_audit``; ``session_mcp`` and ``session_tasks`` for
a session's MCP servers and tasks; how a turn ended (``turn_outcome``) and awaiting its
work through cancellation (``cancel_wait``); permissions (``permissions``, ``command_rules``);
the editor's files and terminals (``client_fs``, ``card_terminal``); the agent's own slash
commands (``commands``), plans (``plans``), prompt images (``attachments``) and the routes the
SDK's router leaves out (``routes``).

Depends on ``protocol``, ``safety``, ``tooling`` and :mod:`acp_adapter.clock`, never on the client
side or the front-ends.
The public names are re-exported by :mod:`acp_adapter`; the modules here are internal.
"""

__all__: list[str] = []
