"""Leaving quietly when the reader of stdout went away (``acp-progress audit | head -1``).

Once ``head`` has its line it exits, and every later write to our stdout fails with
``BrokenPipeError`` — in the middle of a command's printing, or in the flush Python does at exit
(``Exception ignored … BrokenPipeError``). Neither is an error of the command: the reader had what
it wanted. The command line's ``main`` is the one place that handles it, for every command: a
``BrokenPipeError`` that reached it from our own stdout (:func:`stdout_reader_gone`; one from an
agent's stdin is an error and goes on up) is exit status 0, and :func:`silence_stdout` keeps the
exit flush quiet. No command needs an ``except BrokenPipeError`` of its own (the front-ends that
keep a turn running, watch and chat, notice the reader's absence on their own to cancel it).
"""

from __future__ import annotations

import contextlib
import os
import sys

from acp_adapter.frontends.reader_gone import can_lose_its_reader, reader_is_gone


def stdout_reader_gone() -> bool:
    """Whether our stdout is a pipe or socket whose reader closed it."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return can_lose_its_reader(fd) and reader_is_gone(fd)


def silence_stdout() -> None:
    """Point fd 1 at /dev/null when its reader is gone, so later writes and the exit flush are
    silent (what is still buffered goes nowhere, as it would have)."""
    if not stdout_reader_gone():
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
