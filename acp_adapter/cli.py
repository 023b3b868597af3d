"""The ``acp-progress`` command: ``serve`` (ACP over stdio), ``watch`` (a terminal ACP client),
``run`` (one prompt in a plain terminal, no ACP)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .config import MODEL_CHOICES, ConfigError, Settings

__all__ = ["main"]


def _settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings.from_env()
    changes: dict[str, object] = {}
    if getattr(args, "heartbeat_interval", None) is not None:
        changes["heartbeat_interval"] = args.heartbeat_interval
    if getattr(args, "no_heartbeat", False):
        changes["heartbeat_disabled"] = True
    if getattr(args, "model", None):
        changes["model"] = args.model
    if getattr(args, "embedded_delay", None) is not None:
        if args.embedded_delay < 0:
            raise ConfigError(f"--embedded-delay: must be >= 0, got {args.embedded_delay}")
        changes["embedded_delay"] = args.embedded_delay
    return settings.replace(**changes) if changes else settings


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--heartbeat-interval",
        type=float,
        metavar="SECONDS",
        help="seconds between spinner heartbeats (env ACP_PROGRESS_HEARTBEAT_INTERVAL, default 30)",
    )
    parser.add_argument(
        "--no-heartbeat",
        action="store_true",
        help="disable the heartbeat timer entirely (env ACP_PROGRESS_HEARTBEAT_DISABLED=1)",
    )
    parser.add_argument("--model", choices=MODEL_CHOICES, help="model back-end (env ACP_PROGRESS_MODEL)")
    parser.add_argument(
        "--embedded-delay",
        type=float,
        metavar="SECONDS",
        help="think delay of the embedded model (env ACP_PROGRESS_EMBEDDED_DELAY, default 2)",
    )


def _log_level() -> int:
    name = os.environ.get("ACP_PROGRESS_LOG_LEVEL", "WARNING").upper()
    return getattr(logging, name, logging.WARNING)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acp-progress", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve ACP over stdio (what an editor launches)")
    _add_model_flags(serve)

    watch = sub.add_parser("watch", help="spawn an ACP agent, send a prompt, render its cards live")
    watch.add_argument("prompt", nargs="+", help="the prompt text")
    watch.add_argument(
        "--agent",
        help="command line of the ACP agent to spawn (default: this project's agent, python -m acp_adapter)",
    )
    watch.add_argument("--cwd", default=os.getcwd(), help="session workspace (default: current directory)")
    watch.add_argument("--yes", action="store_true", help="allow permission requests without asking")
    watch.add_argument("--no-animation", action="store_true", help="plain line output even on a terminal")
    watch.add_argument(
        "--agent-log", metavar="FILE", help="write the agent's stderr to FILE (default: discarded)"
    )
    _add_model_flags(watch)

    run = sub.add_parser("run", help="run one prompt in a plain terminal, without ACP")
    run.add_argument("prompt", nargs="+", help="the prompt text")
    run.add_argument("--cwd", default=os.getcwd(), help="workspace for the agent's tools")
    _add_model_flags(run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=_log_level(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings = _settings_from(args)
    except ConfigError as exc:
        print(f"acp-progress: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        import anyio

        from .server import serve

        anyio.run(serve, settings, backend="asyncio")
        return 0
    if args.command == "watch":
        from .watch import run_watch

        return run_watch(args, settings)
    from run_agent import run_plain

    return run_plain(" ".join(args.prompt), args.cwd, settings)
