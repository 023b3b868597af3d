"""The disguised command the AG-UI everything agent proposes, as every place the endpoint's events
are shown must show it: its terminal control sequence removed, its bidirectional, zero-width and
tag characters shown as ``<U+…>``."""

from __future__ import annotations

from tests.agents.agui_everything_agent import DISGUISED_COMMAND

SHOWN_COMMAND = DISGUISED_COMMAND.replace("\u202e", "<U+202E>").replace("\x1b]0;owned\x07", "")
SHOWN_COMMAND = SHOWN_COMMAND.replace("\u200b", "<U+200B>").replace("\U000e0041", "<U+E0041>")
