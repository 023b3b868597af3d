"""The garbage collector paused while a command's own process imports what it needs.

Start-up allocates several hundred thousand objects that live as long as the process (the SDK's
~300 pydantic schema models, the settings models, the agent's modules) and almost no garbage
cycles. With the collector on, full collections run in the middle of those imports, each walking
everything allocated so far: about 30 ms of an agent's start, on the path an editor waits on
before its first answer. So a process started as a command pauses the collector first; once the
command's imports are done, :func:`resume` moves what exists into the permanent generation
(``gc.freeze``: never walked again, so collections while the command serves stay short too) and
turns collection back on. Only a process of our own pauses it: a caller that runs
:func:`acp_adapter.cli.main` inside its own process (a test, an embedder) keeps its collector as
it is.
"""

from __future__ import annotations

import gc
from types import ModuleType

#: whether :func:`pause` stopped the collector (and :func:`resume` has not restarted it yet)
_paused = False


def pause() -> None:
    """Stop automatic collection for the imports of start-up (reference counting still frees)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume(command: ModuleType | None = None) -> None:
    """Import what ``command`` runs with (its optional ``prepare()``), then freeze what start-up
    built and restart collection. Does nothing unless :func:`pause` stopped the collector."""
    global _paused
    if not _paused:
        return
    prepare = getattr(command, "prepare", None)
    try:
        if callable(prepare):
            prepare()
    finally:
        _paused = False
        gc.freeze()
        gc.enable()
