import sys

from acp_adapter.cli import main

sys.exit(main())
