"""``acp-progress bridge …``: create, update, list, show, delete and run bridge instances.

The top-level CLI only registers this group and delegates here, so the bridge commands stay in
one module next to the code they drive.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, get_args

from acp_adapter.cli._flags import SUMMARY_FLAGS, add_mcp_config_flag, add_model_flags, mcp_servers_of
from acp_adapter.frontends.bridges.config import (
    SUMMARY_CHOICES,
    BridgeConfigError,
    BridgeInstance,
    BridgeStore,
    Grouping,
    ToolProgressMode,
    atomic_write_text,
    config_dir,
    merge_update,
    new_instance,
    resolve_progress,
    resolve_summary_mode,
)
from acp_adapter.frontends.bridges.state import BridgeState
from acp_adapter.safety.redact import redact_text, redact_value

if TYPE_CHECKING:
    from acp_adapter.config import Settings

_TRUE: Final = {"1", "true", "yes", "on"}
_FALSE: Final = {"0", "false", "no", "off"}


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {raw!r}")


def _progress_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--delivery-progress",
        dest="tool_progress",
        choices=get_args(ToolProgressMode),
        help="which tool progress lines reach the chat (Telegram default: new)",
    )
    parser.add_argument(
        "--delivery-progress-grouping",
        dest="grouping",
        choices=get_args(Grouping),
        help="accumulate: edit one message; separate: one message per line",
    )
    for flag, dest, help_text in (
        ("--delivery-progress-typing", "typing", "show typing while tools run (=false to turn it off)"),
        (
            "--delivery-progress-reactions",
            "reactions",
            "react to the person's message with working/success/failure (=false to turn it off)",
        ),
        (
            "--delivery-thoughts",
            "thoughts",
            "post the agent's thoughts to the chat (default: not posted; =false to turn it off)",
        ),
    ):
        # a bare flag turns it on, FLAG=false off
        parser.add_argument(
            flag, dest=dest, nargs="?", const=True, type=_bool, metavar="BOOL", help=help_text
        )


def _summary_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--summary",
        dest="instance_summary",
        choices=SUMMARY_CHOICES,
        metavar="MODE",
        help="progress-summary placeholder of this instance: off, embedded or openai; auto clears it "
        "(then ACP_PROGRESS_SUMMARY decides, default embedded)",
    )


def _routing_flags(parser: argparse.ArgumentParser, *, create: bool) -> None:
    parser.add_argument(
        "--chat-id",
        dest="chat_ids",
        type=int,
        action="append",
        metavar="ID",
        help="a chat allowed to drive the agent (repeat for several; Telegram allowlist)"
        + ("" if create else "; replaces the list"),
    )
    replaces = "" if create else "; replaces the list"
    parser.add_argument(
        "--user-id",
        dest="user_ids",
        type=int,
        action="append",
        metavar="USER_ID",
        help="only this person may prompt (repeat for several; default: anyone in an allowed chat)"
        + replaces,
    )
    parser.add_argument(
        "--approver",
        dest="approvers",
        type=int,
        action="append",
        metavar="USER_ID",
        help="this person may also answer others' permission questions (repeat for several; "
        "default: only the person who sent the prompt)" + replaces,
    )
    parser.add_argument(
        "--agent",
        help="ACP agent command line (default: this project's agent)" if create else "new agent command",
    )
    default = " (default: current directory)" if create else ""
    parser.add_argument("--cwd", help=f"workspace of the agent's sessions{default}")


def add_parser(sub: Any) -> None:
    """Register the ``bridge`` command group on the top-level subparsers."""
    bridge = sub.add_parser("bridge", help="chat bridges: drive an ACP agent from a chat (Telegram, console)")
    actions = bridge.add_subparsers(dest="bridge_command", metavar="ACTION", required=True)

    create = actions.add_parser("create", help="create a bridge instance")
    create.add_argument("name")
    create.add_argument("--platform", required=True, choices=("telegram", "console"))
    _routing_flags(create, create=True)
    _progress_flags(create)
    _summary_flag(create)

    update = actions.add_parser("update", help="change an instance (flags merge; routing is kept)")
    update.add_argument("name")
    _routing_flags(update, create=False)
    _progress_flags(update)
    _summary_flag(update)

    actions.add_parser("list", help="list bridge instances")
    show = actions.add_parser("show", help="show an instance, its effective progress and last run's metrics")
    show.add_argument("name")
    delete = actions.add_parser("delete", help="delete an instance")
    delete.add_argument("name")

    run_action = actions.add_parser(
        "run", help="run an instance until interrupted (console: until end of input)"
    )
    run_action.add_argument("name")
    run_action.add_argument("--agent-log", metavar="FILE", help="append the agent's stderr to FILE")
    add_mcp_config_flag(run_action)
    # --summary, --summary-interval, --summary-max-length: the flags (and validation) of watch and
    # serve; --summary here overrides the instance's delivery_defaults.summary for this run.
    add_model_flags(run_action, only=SUMMARY_FLAGS)


def _progress_changes(args: argparse.Namespace) -> dict[str, Any]:
    fields = ("tool_progress", "grouping", "typing", "reactions", "thoughts")
    return {f: getattr(args, f) for f in fields if getattr(args, f, None) is not None}


def last_run_path(name: str) -> Path:
    """Where ``bridge run`` leaves the delivery metrics of its last run (``bridge show`` reads it)."""
    return config_dir() / "runs" / f"{name}.json"


def _describe(instance: BridgeInstance, settings: Settings) -> dict[str, Any]:
    """What create/update/show print: redacted (an instance file written before ``--agent`` secrets
    were refused may still hold one, and a path may carry a credential)."""
    out: dict[str, Any] = redact_value(instance.model_dump(mode="json"))
    out["effective_progress"] = resolve_progress(instance).model_dump(mode="json")
    out["effective_summary"] = resolve_summary_mode(instance, settings)
    try:
        out["last_run"] = json.loads(last_run_path(instance.name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        out["last_run"] = None
    state = open_state(instance.name, settings)
    if state is not None:
        out["chats"] = redact_value(state.sessions())
        out["outbox_unsent"] = len(state.outbox())
        state.store.close()  # type: ignore[attr-defined]
    return out


def _forget_state(name: str, settings: Settings) -> None:
    state = open_state(name, settings)
    if state is not None:
        state.clear()
        state.store.close()  # type: ignore[attr-defined]


def open_state(name: str, settings: Any) -> BridgeState | None:
    """The instance's durable state (chat sessions, offset, inbox, outbox) in the session store;
    None when state is off (``ACP_PROGRESS_STATE=off``: nothing survives a restart)."""
    from acp_adapter.store import MemoryStore, open_store

    if not settings.state:
        return None
    where = Path(settings.state_dir) if settings.state_dir else None
    store = open_store(
        where, enabled=True, retention_days=settings.session_retention_days, url=settings.store.url
    )
    if isinstance(store, MemoryStore):
        store.close()
        return None
    return BridgeState(store, name)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Execute ``acp-progress bridge ACTION``; returns the exit status. ``settings`` are the
    environment's and the settings file's with this command's flags on top (``bridge run``'s
    summary flags), loaded and validated by :func:`acp_adapter.cli.main`."""
    store = BridgeStore()
    actions: dict[str, Callable[[BridgeStore, argparse.Namespace, Settings], int]] = {
        "create": _create,
        "update": _update,
        "list": _list,
        "show": _show,
        "delete": _delete,
    }
    try:
        action = actions.get(args.bridge_command)
        if action is not None:
            return action(store, args, settings)
        return _run(store.get(args.name), args, settings)
    except BridgeConfigError as exc:
        print(f"acp-progress bridge: {exc}", file=sys.stderr)
        return 2


def _instance_fields(args: argparse.Namespace) -> dict[str, Any]:
    """What ``create`` and ``update`` take from the command line for an instance, beyond its
    progress settings (an option not given is None: a new instance's default, an update's "keep")."""
    return {
        "chat_ids": args.chat_ids,
        "agent": args.agent,
        "cwd": args.cwd,
        "summary": args.instance_summary,
        "user_ids": args.user_ids,
        "approvers": args.approvers,
    }


def _create(store: BridgeStore, args: argparse.Namespace, settings: Settings) -> int:
    if args.platform == "telegram" and not args.chat_ids:
        raise BridgeConfigError(
            "a telegram bridge needs --chat-id ID (repeatable): the chats allowed to prompt the "
            "agent; a chat's id is in the warning the bridge logs when someone there writes to it"
        )
    base = new_instance(args.name, args.platform, **_instance_fields(args))
    changes = _progress_changes(args)
    instance = merge_update(base, progress=changes) if changes else base
    store.create(instance)
    _forget_state(instance.name, settings)  # a new bridge of an old name starts with no chats
    print(json.dumps(_describe(instance, settings), indent=2, ensure_ascii=False))
    return 0


def _update(store: BridgeStore, args: argparse.Namespace, settings: Settings) -> int:
    instance = merge_update(store.get(args.name), progress=_progress_changes(args), **_instance_fields(args))
    store.replace(instance)
    print(json.dumps(_describe(instance, settings), indent=2, ensure_ascii=False))
    return 0


def _list(store: BridgeStore, args: argparse.Namespace, settings: Settings) -> int:
    for inst in store.load().values():
        p = resolve_progress(inst)
        print(
            redact_text(
                f"{inst.name}\t{inst.platform}\tchats={len(inst.routing.chat_ids)}\t"
                f"progress={p.tool_progress}/{p.grouping}\tcwd={inst.cwd}\t"
                f"summary={resolve_summary_mode(inst, settings)}"
            )
        )
    return 0


def _show(store: BridgeStore, args: argparse.Namespace, settings: Settings) -> int:
    print(json.dumps(_describe(store.get(args.name), settings), indent=2, ensure_ascii=False))
    return 0


def _delete(store: BridgeStore, args: argparse.Namespace, settings: Settings) -> int:
    store.delete(args.name)
    _forget_state(args.name, settings)
    return 0


def _wait_to_lead(name: str, settings: Settings) -> Any:
    """On a shared (PostgreSQL) store: block until this process leads bridge ``name`` (the
    others stand by: :mod:`acp_adapter.frontends.bridges.standby`); None otherwise."""
    if not (settings.state and settings.store.url):
        return None
    from acp_adapter.frontends.bridges.standby import Leadership

    leader = Leadership(settings.store.url, name, retry=settings.store.leader_retry)
    leader.acquire(lambda text: print(redact_text(text), file=sys.stderr, flush=True))
    return leader


async def _run_telegram(instance: BridgeInstance, runner: Any, settings: Settings, leader: Any) -> None:
    """:func:`run_telegram`, stopped (as by SIGTERM) if the leader lock is lost meanwhile."""
    from acp_adapter.frontends.bridges.platforms.telegram import run_telegram

    stop = asyncio.Event()
    keeper = asyncio.create_task(leader.keep(stop)) if leader is not None else None
    try:
        await run_telegram(instance, runner=runner, settings=settings.telegram, stop=stop)
    finally:
        if keeper is not None:
            keeper.cancel()


def _run(instance: BridgeInstance, args: argparse.Namespace, settings: Settings) -> int:
    from acp_adapter.client.driver import AgentError
    from acp_adapter.config import ConfigError
    from acp_adapter.frontends.bridges.options import BridgeOptions
    from acp_adapter.frontends.bridges.runner import BridgeRunner
    from acp_adapter.summary import SummaryFactory

    try:
        mode = resolve_summary_mode(instance, settings, getattr(args, "summary", None))
        summary = SummaryFactory.from_settings(settings.replace(summary=mode))
    except ConfigError as exc:
        print(exc.report("acp-progress bridge"), file=sys.stderr)
        return 2
    mcp_servers = mcp_servers_of(args, "bridge")
    if mcp_servers is None:
        return 2
    # a standby waits here, before it reads the shared state (the leader is still changing it)
    leader = _wait_to_lead(instance.name, settings) if instance.platform != "console" else None
    state = open_state(instance.name, settings)
    options = BridgeOptions(stderr_log=args.agent_log, summary=summary, state=state, mcp_servers=mcp_servers)
    runner = BridgeRunner(instance, options)
    runner.on_ready = lambda text: print(redact_text(text), file=sys.stderr, flush=True)
    refused: int | None = None
    try:
        refused = _drive(instance, runner, settings, leader)
        if refused is not None:
            return refused
    except KeyboardInterrupt:
        runner.stop_signal = runner.stop_signal or signal.SIGINT
    except AgentError as exc:
        print(f"acp-progress bridge: {exc}", file=sys.stderr)
        return 1
    finally:
        if leader is not None:
            leader.release()
        if state is not None:
            state.store.close()  # type: ignore[attr-defined]
        if refused is None or runner.started:  # a token rejected at startup ran nothing: no metrics
            _record_run(instance.name, runner)
    if leader is not None and leader.lost:
        return 1  # its supervisor restarts it: as the standby, or the leader again
    # stopped by Ctrl-C / SIGTERM: 130 / 143, as watch, chat, run and agui; the console's input
    # ending is the run's ordinary end: 0
    return 128 + int(runner.stop_signal) if runner.stop_signal else 0


def _drive(instance: BridgeInstance, runner: Any, settings: Settings, leader: Any) -> int | None:
    """Run the instance's platform until it stops; 2 when Telegram refused the set-up (a bad
    token, no allowed chat: said in one line), None after a run."""
    if instance.platform == "console":
        from acp_adapter.frontends.bridges.platforms.console import run_console

        asyncio.run(run_console(instance, sys.stdin, sys.stdout, runner=runner))
        return None
    from acp_adapter.frontends.bridges.platforms.telegram import TelegramSetupError

    try:
        asyncio.run(_run_telegram(instance, runner, settings, leader))
    except TelegramSetupError as exc:
        print(f"acp-progress bridge: {exc}", file=sys.stderr)
        return 2
    return None


def _record_run(name: str, runner: Any) -> None:
    """The run's delivery metrics: kept for ``bridge show`` (``last_run``) and printed."""
    metrics = runner.metrics().as_dict()
    stats = runner.delivery_stats()
    record = {**metrics, "posts": stats.posts, "edits": stats.edits, "failures": stats.failures}
    atomic_write_text(last_run_path(name), json.dumps(record, indent=2) + "\n")
    print(redact_text(f"bridge {name}: delivery metrics {json.dumps(record)}"), file=sys.stderr)
