"""Leaving quietly when the reader went away (``acp-progress … | head``).

Its own tiny module so commands that never load the watch machinery (``sessions`` reading the
store) can use it without importing the protocol schema.
"""

from __future__ import annotations

import os
import sys


def quiet_broken_stdout() -> None:
    """After ``| head`` closed our stdout, point it at /dev/null so the exit flush stays silent."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
