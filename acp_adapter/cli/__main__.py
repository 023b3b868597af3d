"""``python -m acp_adapter.cli COMMAND …``: the command line, as the ``acp-progress`` script runs it."""

from __future__ import annotations

import sys

from acp_adapter.cli import main

if __name__ == "__main__":
    sys.exit(main())
