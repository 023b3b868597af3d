"""``acp-progress descriptor``: validate a tool presentation descriptor exactly as the agent would,
and print the line(s) it renders. Needs no settings: an unrelated bad environment variable must
not fail it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

#: Run without loading settings (see :func:`acp_adapter.cli.main`).
NEEDS_SETTINGS = False


def add_parser(sub: Any) -> None:
    describe = sub.add_parser(
        "descriptor", help="validate a tool presentation descriptor and show the line it renders"
    )
    describe.add_argument(
        "file",
        help="a TOML (or JSON) extension manifest with [resources.tools.ID] friendly_verb/preview, "
        "or a JSON MCP tool object whose _meta has agh/friendly_verb/agh/preview",
    )
    describe.add_argument(
        "--tool-id",
        help="the tool to render: one of a manifest's [resources.tools.ID] (default: each), "
        "or the id of an MCP tool (default: its name)",
    )
    describe.add_argument("--input", default="{}", help="sample tool input as JSON (default: {})")


def run(args: argparse.Namespace, settings: object = None) -> int:
    return check_descriptor(args.file, args.tool_id, args.input)


def check_descriptor(path: str, tool_id: str | None, sample_input: str) -> int:
    from acp_adapter.tooling.descriptor import InputError, check_file
    from acp_adapter.tooling.presentation import DescriptorError

    try:
        lines = check_file(path, tool_id, sample_input)
    except InputError as exc:
        print(f"acp-progress descriptor: {exc}", file=sys.stderr)
        return 2
    except DescriptorError as exc:
        print(f"invalid descriptor: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0
