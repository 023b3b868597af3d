"""Front-ends: each takes a person's input on its own surface, drives an ACP agent through
:mod:`acp_adapter.client`, and projects the update stream back (``watch``/``chat`` on a terminal,
``plain`` for runs with no ACP client, ``relay`` for editors, ``agui`` over HTTP, ``bridges`` for
chats). Nothing below this layer imports it; :mod:`acp_adapter.cli` composes them.
"""

__all__: list[str] = []
