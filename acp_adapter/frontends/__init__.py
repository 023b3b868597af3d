"""Front-ends: each takes a person's input on its own surface, drives an ACP agent through
:mod:`acp_adapter.client`, and projects the update stream back (``watch``/``chat`` on a terminal,
``plain`` for runs with no ACP client, ``relay`` for editors, ``agui`` over HTTP, ``bridges`` for
chats). ``foreign_watch`` watches a foreign agent's updates for ``relay`` and for
:func:`~acp_adapter.with_progress` (``with_progress``, ``watched_client``, ``ordered_lane``).
Shared by the terminal front-ends: ``interrupt`` (Ctrl-C from the first instant), ``questions``
(an agent's questions asked a line at a time), ``reader_gone`` (nobody reading, nothing running)
and the private ``_render``, ``_updates`` and ``_person``. Nothing below this layer imports it;
:mod:`acp_adapter.cli` composes them.
"""

__all__: list[str] = []
