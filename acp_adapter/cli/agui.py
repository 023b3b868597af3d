"""``acp-progress agui``: serve the AG-UI endpoint for an ACP agent over HTTP (uvicorn).

The top-level CLI only registers the subcommand and delegates here. Parsing needs nothing beyond
the standard library, so ``acp-progress --help`` works without the ``agui`` extra; running the
endpoint without it fails with the install line.

Admission and limits come from :class:`~acp_adapter.config.AguiSettings`
(``ACP_PROGRESS_AGUI_*``) with this command's flags on top. Every endpoint needs a token, on
loopback too: one given (``--token`` or ``ACP_PROGRESS_AGUI_TOKEN``), else the endpoint's own
(:mod:`~acp_adapter.frontends.agui.token_file`), printed in the start line inside the web page's
URL. ``--no-token`` serves without one, on loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any, Final

from acp_adapter.cli._flags import SUMMARY_FLAGS, add_mcp_config_flag, add_model_flags, mcp_servers_of
from acp_adapter.errors import AcpProgressError

if TYPE_CHECKING:
    from acp_adapter.config import Settings

log = logging.getLogger("acp_progress.agui.command")

#: Seconds uvicorn lets open runs finish at shutdown before it cancels them (and their turns).
SHUTDOWN_GRACE: Final = 1
#: Shortest token accepted: a bearer token is the only thing between the network and the agent.
MIN_TOKEN_LENGTH: Final = 16
#: ``{settings field: flag}`` of the flags laid over AguiSettings (admission, limits, tool progress).
LIMIT_FLAGS: Final = {
    "token": "--token",
    "allowed_hosts": "--allowed-host",
    "allowed_origins": "--allowed-origin",
    "body_timeout": "--body-timeout",
    "max_body_bytes": "--max-body-bytes",
    "max_connections": "--max-connections",
    "max_runs": "--max-runs",
    "max_id_length": "--max-id-length",
    "max_queued_events": "--max-queued-events",
    "tool_progress": "--tool-progress",
}


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0 and 3600 seconds, got {text}")
    return value


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``agui`` on the top-level subparsers object."""
    agui = sub.add_parser(
        "agui",
        help="serve an AG-UI endpoint (HTTP + SSE) that drives an ACP agent",
        description="POST a RunAgentInput to / and read AG-UI events as SSE; GET /health answers. "
        "One ACP session per threadId. Needs the agui extra.",
    )
    agui.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    agui.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000)")
    _add_agent_flags(agui)
    _add_permission_flags(agui)
    agui.add_argument(
        "--agent-log", metavar="FILE", help="write the agent's stderr to FILE (default: discarded)"
    )
    agui.add_argument(
        "--init-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the agent to answer initialize (default 30)",
    )
    add_mcp_config_flag(agui)
    agui.add_argument(
        "--instance",
        metavar="NAME",
        help="name of this endpoint's conversations in the session store (default: its address, port, "
        "token and workspace): two endpoints never share threads unless given the same NAME",
    )
    _add_admission_flags(agui)
    # --summary, --summary-interval, --summary-max-length: the same flags (and validation) as on
    # watch, serve and relay. On by default here (auto = embedded): each run publishes a
    # PROGRESS_SUMMARY activity; a run opts out with forwardedProps.emitProgressSummary: false.
    add_model_flags(agui, only=SUMMARY_FLAGS)
    return agui


def _add_agent_flags(agui: argparse.ArgumentParser) -> None:
    """Which agent runs, in which workspace, and what of its tool progress reaches a client."""
    agui.add_argument(
        "--agent",
        help="command line of the ACP agent to drive (default: this project's agent, python -m acp_adapter)",
    )
    agui.add_argument(
        "--tool-progress",
        action="store_true",
        default=None,
        help="publish TOOL_PROGRESS activity snapshots for every run (default off, or "
        "ACP_PROGRESS_AGUI_TOOL_PROGRESS=1); a run overrides it with forwardedProps.emitToolProgress",
    )
    agui.add_argument(
        "--redact",
        default="default",
        metavar="default|counts|none|module:function",
        help="which tool progress/result values reach the client (default: every progress value "
        "is [redacted]; counts: value and total published, messages withheld; none: all); the "
        "canonical redactor runs after any policy",
    )
    agui.add_argument("--cwd", default=os.getcwd(), help="the agent's workspace (default: current directory)")


def _add_permission_flags(agui: argparse.ArgumentParser) -> None:
    """Who answers the agent's permission requests and its tools' questions, and how long they wait."""
    agui.add_argument(
        "--yes", action="store_true", help="allow the agent's permission requests (default: deny them)"
    )
    agui.add_argument(
        "--permission-interrupts",
        action="store_true",
        help="ask every run's client about the agent's permission requests and its tools' questions "
        "(an AG-UI interrupt it answers with a resume) instead of only runs that set "
        "forwardedProps.permissionInterrupts",
    )
    agui.add_argument(
        "--permission-timeout",
        type=_seconds,
        default=120.0,
        metavar="SECONDS",
        help="how long a run paused on a permission question waits for its resume before the "
        "static answer (deny, or allow with --yes) is given, and on a tool's question before it is "
        "declined (default 120)",
    )


def _add_admission_flags(agui: argparse.ArgumentParser) -> None:
    """Who is admitted and how much is taken; values are validated by AguiSettings (env defaults)."""
    group = agui.add_argument_group(
        "admission and limits", "each also an ACP_PROGRESS_AGUI_* variable; a flag wins over it"
    )
    group.add_argument(
        "--token",
        help="bearer token every request but /health must carry (Authorization: Bearer TOKEN; "
        f"at least {MIN_TOKEN_LENGTH} characters; env ACP_PROGRESS_AGUI_TOKEN is better than the "
        "command line); default: the endpoint's own, made at its first start and kept (mode 0600) "
        "in the state directory as agui-token",
    )
    group.add_argument(
        "--no-token",
        action="store_true",
        help="serve without a token: every local user and every web page you open can then drive "
        "the agent (loopback only)",
    )
    group.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="NAME[:PORT]",
        help="also admit requests for this Host (repeatable; with a port, on that port only, without "
        "one on any port; default: the loopback names and the bound address, on the bound port only)",
    )
    group.add_argument(
        "--allowed-origin",
        dest="allowed_origins",
        action="append",
        metavar="ORIGIN",
        help="admit browser requests from this origin, with CORS (repeatable; e.g. https://app.example)",
    )
    numbers = [
        (
            "--body-timeout",
            "body_timeout",
            "SECONDS",
            "seconds a request's head, then its body, may take (5)",
        ),
        ("--max-body-bytes", "max_body_bytes", "N", "largest request body (16 MiB)"),
        ("--max-connections", "max_connections", "N", "open connections at once (256)"),
        ("--max-runs", "max_runs", "N", "runs in flight at once (32)"),
        ("--max-id-length", "max_id_length", "N", "longest threadId/runId/message id (256)"),
        ("--max-queued-events", "max_queued_events", "N", "events queued per run for a slow reader (1024)"),
    ]
    for flag, dest, metavar, help_text in numbers:
        group.add_argument(flag, dest=dest, metavar=metavar, help=help_text)


def _is_loopback(host: str) -> bool:
    from acp_adapter.frontends.agui.admission import is_loopback

    return is_loopback(host)


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Build the app from the flags and serve it until SIGINT/SIGTERM (Ctrl-C at any moment,
    even while the libraries load, stops it at once: 130 before it serves, 0 after)."""
    try:
        return _prepare(args, settings)
    except KeyboardInterrupt:
        return 130


class _Refused(AcpProgressError):
    """The endpoint cannot serve as asked; the message is the one line the command prints (exit 2)."""


def _prepare(args: argparse.Namespace, settings: Settings) -> int:
    try:
        _require_extra()
        endpoint = _endpoint_settings(args, settings)
        token = _token(args, settings, endpoint)
    except _Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    from acp_adapter.frontends.agui.admission import Admission

    args.token = token.strip() if token is not None else None
    admission = Admission(
        allowed_hosts=endpoint.allowed_hosts,
        allowed_origins=endpoint.allowed_origins,
        token=args.token,
        bind_host=args.host,
    )
    mcp_servers = mcp_servers_of(args, "agui")
    if mcp_servers is None:
        return 2
    args.mcp_servers = mcp_servers
    from acp_adapter.frontends.agui.thread_store import endpoint_scope

    # the endpoint's own token is one per state directory: it names no other endpoint than before
    scoped_token = None if args.own_token else token
    args.thread_scope = endpoint_scope(args.instance, args.host, args.port, scoped_token, args.cwd)
    thread_store = _open_thread_store(settings)
    try:
        return _run(args, settings, endpoint, admission, thread_store)
    finally:
        thread_store.close()


def _require_extra() -> None:
    """The agui extra, checked before anything starts."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401

        from acp_adapter.frontends.agui.admission import Admission  # noqa: F401
        from acp_adapter.frontends.agui.app import create_app  # noqa: F401 - imports ag-ui-protocol
    except ImportError as exc:
        raise _Refused(
            f"acp-progress agui: needs the agui extra ({exc.name} is missing): "
            "pip install 'acp-progress[agui]'"
        ) from None


def _endpoint_settings(args: argparse.Namespace, settings: Settings) -> Any:
    """The AguiSettings with this command's flags on top (the workspace checked first)."""
    from acp_adapter.config import ConfigError

    if not os.path.isdir(args.cwd):
        raise _Refused(f"acp-progress agui: --cwd {args.cwd!r} is not a directory")
    try:
        return settings.agui.with_flags(
            {name: (flag, getattr(args, name, None)) for name, flag in LIMIT_FLAGS.items()}
        )
    except ConfigError as exc:
        raise _Refused(exc.report("acp-progress agui")) from None


def _token(args: argparse.Namespace, settings: Settings, endpoint: Any) -> str | None:
    """The bearer token every request carries, as given: the one given, else the endpoint's own
    (which sets ``args.own_token``), or None with ``--no-token`` on loopback; a weak or
    contradicting one is refused."""
    token = endpoint.token.get_secret_value() if endpoint.token is not None else None
    if token is not None and len(token.strip()) < MIN_TOKEN_LENGTH:
        raise _Refused(f"acp-progress agui: the token must be at least {MIN_TOKEN_LENGTH} characters")
    if args.no_token and token is not None:
        raise _Refused(
            "acp-progress agui: --no-token and a token (--token, ACP_PROGRESS_AGUI_TOKEN) contradict"
        )
    if token is None and not _is_loopback(args.host):
        raise _Refused(
            f"acp-progress agui: refusing to serve on {args.host}, which is not loopback, without a "
            "token: set ACP_PROGRESS_AGUI_TOKEN (or --token) and send Authorization: Bearer <token>"
        )
    args.own_token = False
    if token is None and not args.no_token:
        from acp_adapter.frontends.agui.token_file import endpoint_token

        try:
            token, _made = endpoint_token(_token_dir(settings))
        except OSError as exc:
            raise _Refused(f"acp-progress agui: cannot use the endpoint's token file: {exc}") from None
        args.own_token = True
    return token


def _run(
    args: argparse.Namespace, settings: Settings, endpoint: Any, admission: Any, thread_store: Any
) -> int:
    import uvicorn

    from acp_adapter.frontends.agui.stopping import StoppingServer

    try:
        app = _app(args, settings, endpoint, admission, thread_store)
    except _Refused as exc:
        print(exc, file=sys.stderr)
        return 2
    if settings.state and settings.store.url:  # replicas on one PostgreSQL store: one run per thread
        _share_threads(app.state.agui, args, settings.store.url, endpoint, thread_store)
    _warn_exposure(args, endpoint)
    protocol, backlog = _http_protocol(endpoint)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_config=None,  # our logging (stderr, redacted) is already configured
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
        lifespan="on",
        http=protocol,
        backlog=backlog,
    )
    try:
        listener = _listen(args.host, args.port, backlog)
    except OSError as exc:
        print(
            f"acp-progress agui: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    with listener:
        return asyncio.run(_serve(StoppingServer(config, app.state.agui), app.state.agui, listener, args))


def _app(
    args: argparse.Namespace, settings: Settings, endpoint: Any, admission: Any, thread_store: Any
) -> Any:
    """The endpoint's app from the flags; options it cannot serve with are refused."""
    from acp_adapter.client.driver import AgentStartError, allow_all, deny_all
    from acp_adapter.config import ConfigError
    from acp_adapter.frontends.agui.app import create_app
    from acp_adapter.frontends.agui.endpoint import AguiOptions
    from acp_adapter.frontends.agui.limits import EndpointLimits
    from acp_adapter.frontends.agui.options import ToolProgressOptionError
    from acp_adapter.frontends.agui.policy import PolicyError

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `uvicorn module:app` does: --redact mymod:fn finds ./mymod.py
    try:
        return create_app(
            AguiOptions(
                agent_command=args.agent,
                policy=args.redact,
                tool_progress=endpoint.tool_progress,  # --tool-progress, else the settings
                cwd=args.cwd,
                permission_policy=allow_all if args.yes else deny_all,
                init_timeout=args.init_timeout,
                agent_log=args.agent_log,
                summary=settings,
                admission=admission,
                limits=EndpointLimits.from_settings(endpoint),
                thread_store=thread_store,
                thread_retention_days=settings.session_retention_days,
                mcp_servers=args.mcp_servers,
                thread_scope=args.thread_scope,
                permission_interrupts=args.permission_interrupts,
                permission_timeout=args.permission_timeout,
            )
        )
    except (AgentStartError, PolicyError, ToolProgressOptionError, ConfigError, ValueError) as exc:
        raise _Refused(f"acp-progress agui: {exc}") from None


def _share_threads(
    service: Any, args: argparse.Namespace, url: str, endpoint: Any, thread_store: Any
) -> None:
    """Replicas on one PostgreSQL store serve one run per thread between them."""
    from acp_adapter.frontends.agui.replicas import ReplicaThreadLocks

    service.thread_locks = ReplicaThreadLocks(
        url,
        thread_store,
        args.thread_scope,
        health_interval=endpoint.health_interval,
        health_timeout=endpoint.health_timeout,
    )
    if not args.instance:
        log.warning(
            "the session store is shared (PostgreSQL): give every replica of this endpoint the same "
            "--instance NAME, or each serves only its own threads"
        )


def _warn_exposure(args: argparse.Namespace, endpoint: Any) -> None:
    """Say so when the endpoint is reachable beyond this machine, or admits only loopback names."""
    if not _is_loopback(args.host):
        log.warning(
            "serving on %s: anyone who reaches it and holds the token drives the agent; "
            "use TLS in front of it (a reverse proxy) when it crosses a network",
            args.host,
        )
    if _unspecified(args.host) and not endpoint.allowed_hosts:
        log.warning(
            "serving on %s: only requests for the loopback names are admitted until you name the "
            "host clients use with --allowed-host",
            args.host,
        )


def _http_protocol(endpoint: Any) -> tuple[type, int]:
    """uvicorn's HTTP protocol under the connection cap and header timeout, and the listen backlog."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    from acp_adapter.frontends.agui.connections import connection_cap, guarded_protocol

    max_connections, backlog = connection_cap(endpoint.max_connections)
    protocol = guarded_protocol(
        AutoHTTPProtocol, max_connections=max_connections, header_timeout=endpoint.body_timeout
    )
    return protocol, backlog


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    """Bind the port before anything starts: a port in use is one line, and nothing announces
    serving that is not (uvicorn listens on the socket it is given)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host.strip("[]"), port))
        listener.listen(backlog)
    except OSError:
        listener.close()
        raise
    listener.set_inheritable(False)
    return listener


async def _serve(server: Any, service: Any, listener: socket.socket, args: argparse.Namespace) -> int:
    """Start the agent, then serve until SIGINT/SIGTERM; each is handled from the first moment.

    Until uvicorn serves, a stopping signal cancels the start (the agent process group is ended)
    and the command exits 130; once it serves, ``server`` (a
    :class:`~acp_adapter.frontends.agui.stopping.StoppingServer`) ends the open runs with
    ``RUN_ERROR`` and then stops uvicorn: 130 after SIGINT, 143 after SIGTERM. The agent is started
    here, not in the app's lifespan, so a broken ``--agent`` is one line and is never followed by
    an announcement or a lifespan traceback.
    """
    failed = await _start_agent(server, service)
    if failed is not None:
        return failed
    print(f"acp-progress agui: {_serving_line(args)}", file=sys.stderr, flush=True)
    try:
        await server.serve(sockets=[listener])
    except SystemExit as exc:  # uvicorn exits this way when startup failed
        await service.close()
        return exc.code if isinstance(exc.code, int) and exc.code else 1
    finally:
        await service.close()  # a no-op after the lifespan closed it
    stopped_by = getattr(server, "stop_signal", None)
    return 128 + stopped_by if stopped_by else 0


async def _start_agent(server: Any, service: Any) -> int | None:
    """Start the agent with SIGINT/SIGTERM cancelling the start; None once it runs, else the exit
    status (1: it did not start, 130: a signal came first). Then, until uvicorn takes over, a
    signal asks ``server`` to stop."""
    from acp_adapter.client.driver import AgentError

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    signalled: list[int] = []

    def stop(signum: int) -> None:
        signalled.append(signum)
        task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    print("acp-progress agui: starting the agent …", file=sys.stderr, flush=True)
    try:
        try:
            await service.start()
        except AgentError as exc:
            await service.close()
            print(f"acp-progress agui: {exc}", file=sys.stderr)
            return 1
    except asyncio.CancelledError:
        if not signalled:
            raise
        await service.close()
        return 130
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
            # until uvicorn takes over (it saves and restores what is here): a signal asks it to stop
            signal.signal(signum, lambda _signum, _frame: setattr(server, "should_exit", True))
    if signalled:  # arrived after the start finished, before the handlers above were replaced
        await service.close()
        return 130
    return None


def _token_dir(settings: Any) -> Any:
    """Where the endpoint keeps its own token: the state directory (None with the state off)."""
    from pathlib import Path

    from acp_adapter.store import default_state_dir

    if not settings.state:
        return None
    return Path(settings.state_dir).expanduser() if settings.state_dir else default_state_dir()


def page_url(host: str, port: int, token: str | None = None) -> str:
    """The web page's address; with the endpoint's own token in the fragment (``#token=``), which
    the browser never sends to a server: the page takes it from there into the tab."""
    name = host.strip("[]")
    if _unspecified(name):
        name = "127.0.0.1"
    shown = f"[{name}]" if ":" in name else name
    url = f"http://{shown}:{port}/"
    return f"{url}#token={token}" if token else url


def _serving_line(args: argparse.Namespace) -> str:
    """What the start line says: where the page is, and how the token reaches it."""
    served = f"on http://{args.host}:{args.port}/ (POST a RunAgentInput; GET /health)"
    if args.no_token:
        return (
            f"serving AG-UI {served}; the web page is at {page_url(args.host, args.port)} "
            "- WITHOUT a token (--no-token): anyone on this machine can drive the agent"
        )
    if args.own_token:
        return (
            f"serving AG-UI {served}; open the web page at {page_url(args.host, args.port, args.token)} "
            "(the part after # is this endpoint's token; clients send Authorization: Bearer <token>)"
        )
    return (
        f"serving AG-UI {served}; the web page is at {page_url(args.host, args.port)} "
        "(it asks for the token once per tab)"
    )


def _open_thread_store(settings: Any) -> Any:
    """The session store the endpoint remembers its threads in (the agent's, by default)."""
    from pathlib import Path

    from acp_adapter.store import open_store

    directory = Path(settings.state_dir).expanduser() if settings.state_dir else None
    # retention_days=0: the agent prunes its sessions; the endpoint prunes only its threads
    return open_store(directory, enabled=settings.state, retention_days=0, url=settings.store.url)
