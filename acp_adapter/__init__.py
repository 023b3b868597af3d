"""acp-progress: make an ACP agent visibly alive in every client that talks to it."""

__version__ = "0.1.0"
