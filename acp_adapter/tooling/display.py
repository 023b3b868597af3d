"""What a tool shows on its card beside its text: a file diff, the editor's terminal, an image.

Why plain data here: the tools say *what* to show, without knowing the protocol; the ACP projection
(:mod:`acp_adapter.agent.tool_cards`) turns each item into the SDK's tool-call content (``diff``,
``terminal``, an image block) and the plain terminal ignores what it cannot show.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileDiff:
    """A file edit: ``old_text`` None when the file is new (ACP ``diff`` content)."""

    path: str
    new_text: str
    old_text: str | None = None


@dataclass(frozen=True)
class TerminalShown:
    """The client's terminal the command ran in (ACP ``terminal`` content)."""

    terminal_id: str


@dataclass(frozen=True)
class ImageShown:
    """An image a tool returned (base64 ``data``), shown as image content on the card."""

    mime_type: str
    data: str


Shown = FileDiff | TerminalShown | ImageShown
