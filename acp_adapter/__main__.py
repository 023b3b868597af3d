"""``python -m acp_adapter`` serves ACP over stdio (same as ``acp-progress serve``)."""

from __future__ import annotations

import sys

from acp_adapter.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]], own_process=True))
