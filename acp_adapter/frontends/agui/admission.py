"""Who may talk to the AG-UI endpoint: Host, Origin, CORS and the bearer token, checked before a route.

An endpoint on loopback is still reachable from every web page its person opens: a page can POST
to ``http://127.0.0.1:8000/`` (a "simple" ``text/plain`` request needs no preflight) and, through
DNS rebinding (a name of the attacker's that resolves to 127.0.0.1), even read the answer. So,
outermost first:

1. **Host** (Starlette's :class:`~starlette.middleware.trustedhost.TrustedHostMiddleware`, answering
   ``403`` rather than its ``400``): only the loopback names (``127.0.0.1``, ``localhost``,
   ``[::1]``) and the address the server is bound to, each *with the port the connection reached*
   (a page of the attacker's on another local port is another origin; a ``Host`` without a port
   means the scheme's default port), and ``allowed_hosts``: an entry with a port (``name:8443``)
   admits that port only, an entry without one any port (it names a host the operator vouches
   for, often as a reverse proxy rewrites it).
2. **Origin**: a request that carries one must come from the server's own origin (the scheme and
   ``Host`` it was sent to, or an allowed host on the server's port) or an ``allowed_origins``
   entry; ``Sec-Fetch-Site: cross-site`` is refused unless the origin is allowed. ``403``
   otherwise. Requests without ``Origin`` (curl, Node, Python) are not browsers' cross-site ones.
3. **CORS** (Starlette's :class:`~starlette.middleware.cors.CORSMiddleware`) for the allowed
   origins only: their preflights are answered, so a browser front-end works on purpose.
4. **Token**: with a token configured, every route but ``/health`` and the web page's files
   (``GET /`` and ``/page/*``: no secret in them, and a navigation cannot
   carry a header) needs ``Authorization: Bearer <token>``, compared in constant time; ``401``
   otherwise. ``/health`` stays open for probes but tells an unauthenticated caller only
   ``{"status": "ok"}``.

Refusals are logged at INFO in one escaped line; what is refused never reaches the app.
:func:`install_admission` adds the gates to an app as Starlette middleware.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("acp_progress.agui.admission")

LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")
HEALTH_PATH: Final = "/health"
#: The web page's files: fetched by a browser's navigation, which cannot send the token.
PAGE_PATHS: Final = frozenset({"/", "/page/app.js", "/page/app.css", "/page/icon.svg"})
_HOST_OK: Final = "acp_progress.host_ok"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine only."""
    bare = host.strip("[]").lower()
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """``::1`` → ``[::1]``: the form a ``Host`` header (and TrustedHostMiddleware) uses."""
    host = host.strip().lower()
    if ":" in host and not host.startswith("["):
        return f"[{host}]"
    return host


def split_host(value: str) -> tuple[str, int | None]:
    """A ``Host`` header or an ``--allowed-host`` entry as (name in ``Host`` form, port or None).

    ``[::1]:8000`` → (``[::1]``, 8000); ``::1`` (a bare IPv6 address) → (``[::1]``, None);
    ``example.com:8443`` → (``example.com``, 8443). A port that is not a number is -1 (matches none)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        name += "]"
        port_text = rest[1:] if rest.startswith(":") else None
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        return _host_name(value), None
    if port_text is None:
        return name, None
    return name, int(port_text) if port_text.isdigit() and len(port_text) <= 5 else -1


def _name_matches(pattern: str, name: str) -> bool:
    """TrustedHostMiddleware's rule: exact, or ``*.example.com`` for any subdomain."""
    return name == pattern or (pattern.startswith("*") and name.endswith(pattern[1:]))


@dataclass(frozen=True)
class Admission:
    """The admission rules of one endpoint; :func:`install_admission` puts them in front of an app.

    ``bind_host`` is the address the server listens on: a non-loopback one (``0.0.0.0`` aside,
    which no client sends) is admitted as a ``Host`` too. ``token`` ``None`` means no token.
    """

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    token: str | None = None
    bind_host: str | None = None

    @property
    def host_names(self) -> tuple[str, ...]:
        """Every name admitted as ``Host``, without ports."""
        names = [*self.bound_names, *(split_host(h)[0] for h in self.allowed_hosts if h.strip())]
        return tuple(dict.fromkeys(names))

    @property
    def bound_names(self) -> tuple[str, ...]:
        """The names admitted with the port the connection reached only: loopback and the bind host."""
        names = list(LOOPBACK_HOSTS)
        if self.bind_host and not _unspecified(self.bind_host):
            names.append(_host_name(self.bind_host))
        return tuple(dict.fromkeys(names))

    @property
    def host_ports(self) -> tuple[tuple[str, int | None], ...]:
        """The ``allowed_hosts`` entries as (name, port): None admits any port."""
        return tuple(dict.fromkeys(split_host(h) for h in self.allowed_hosts if h.strip()))

    @property
    def origins(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(o.strip().rstrip("/").lower() for o in self.allowed_origins if o.strip()))


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def bearer_ok(headers: Headers, token: str | None) -> bool:
    """``Authorization: Bearer <token>`` matches (constant time); always true without a token."""
    if token is None:
        return True
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credentials.strip().encode(), token.encode())


def _route_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, **headers: str
) -> None:
    response = JSONResponse({"detail": detail}, status_code=status, headers=headers or None)
    await response(scope, receive, send)


class _HostGate(TrustedHostMiddleware):
    """TrustedHostMiddleware, but an unknown ``Host`` is a ``403`` (it answers ``400``), logged once,
    and the port counts: TrustedHostMiddleware compares names only."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Sequence[str],
        bound_names: Sequence[str] = (),
        host_ports: Sequence[tuple[str, int | None]] = (),
    ) -> None:
        async def reached(scope: Scope, receive: Receive, send: Send) -> None:
            scope[_HOST_OK] = True
            await app(scope, receive, send)

        super().__init__(reached, allowed_hosts=list(allowed_hosts), www_redirect=False)
        self.bound_names = frozenset(bound_names)
        self.host_ports = tuple(host_ports)

    def port_ok(self, scope: Scope, host: str) -> bool:
        """The ``Host`` names an admitted name with a port that name is admitted on (or a name no
        rule knows, which TrustedHostMiddleware then refuses)."""
        name, port = split_host(host)
        if port is None:
            port = {"http": 80, "https": 443}.get(scope.get("scheme", "http"))
        server_port = (scope.get("server") or (None, None))[1]
        rules = [p for n, p in self.host_ports if _name_matches(n, name)]
        if name in self.bound_names:
            rules.append(server_port)  # None (no port known, a Unix socket): any port
        return not rules or any(rule is None or rule == port for rule in rules)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")
        if not self.port_ok(scope, host):
            log.info("refused a request for Host %r: not an allowed port for that host", host[:200])
            await _refuse(scope, receive, send, 403, "this Host is not allowed (see --allowed-host)")
            return

        async def send_forbidden(message: Message) -> None:
            if message["type"] == "http.response.start" and not scope.get(_HOST_OK):
                host = Headers(scope=scope).get("host", "")
                log.info("refused a request for Host %r: not an allowed host", host[:200])
                message = {**message, "status": 403}
            await send(message)

        await super().__call__(scope, receive, send_forbidden)


class _OriginGate:
    """A browser's cross-site request is refused unless its origin was allowed on purpose."""

    def __init__(self, app: ASGIApp, host_names: Iterable[str], origins: Iterable[str]) -> None:
        self.app = app
        self.host_names = frozenset(host_names)
        self.origins = frozenset(origins)

    def _own(self, origin: str, scope: Scope, headers: Headers) -> bool:
        scheme = scope.get("scheme", "http")
        if origin == f"{scheme}://{headers.get('host', '').lower()}":
            return True
        try:
            parts = urlsplit(origin)
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        except ValueError:
            return False
        server = scope.get("server") or (None, None)
        name = _host_name(parts.hostname or "")
        return parts.scheme == scheme and name in self.host_names and port == server[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        allowed = origin is not None and origin.rstrip("/").lower() in self.origins
        if origin is not None and not allowed and not self._own(origin.lower(), scope, headers):
            log.info("refused a request from Origin %r: not an allowed origin", origin[:200])
            await _refuse(scope, receive, send, 403, "this origin is not allowed (see --allowed-origin)")
            return
        if headers.get("sec-fetch-site", "").lower() == "cross-site" and not allowed:
            log.info("refused a cross-site request (Sec-Fetch-Site) from Origin %r", (origin or "")[:200])
            await _refuse(
                scope, receive, send, 403, "cross-site requests are not allowed (see --allowed-origin)"
            )
            return
        await self.app(scope, receive, send)


def _page(scope: Scope, path: str) -> bool:
    """A GET (or HEAD) of one of the page's files: ``POST /`` (a run) still needs the token."""
    return scope.get("method") in ("GET", "HEAD") and path in PAGE_PATHS


class _TokenGate:
    """Every route but ``/health`` needs the bearer token (when one is configured)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = _route_path(scope)
        if scope["type"] != "http" or path == HEALTH_PATH or _page(scope, path):
            await self.app(scope, receive, send)
            return
        if not bearer_ok(Headers(scope=scope), self.token):
            log.info("refused a request without the right bearer token")
            await _refuse(
                scope, receive, send, 401, "a bearer token is required", **{"WWW-Authenticate": "Bearer"}
            )
            return
        await self.app(scope, receive, send)


def install_admission(app: Starlette, admission: Admission) -> None:
    """Put the Host, Origin, CORS and token gates of ``admission`` in front of ``app``'s routes.

    Starlette's ``add_middleware`` makes the last one added the outermost: Host, then Origin,
    then CORS (so a refused origin gets no CORS headers), then the token (so an allowed origin's
    preflight, which carries no credentials, is answered, and a 401 still has CORS headers).
    """
    if admission.token is not None:
        app.add_middleware(_TokenGate, token=admission.token)
    if admission.origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(admission.origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Accept"],
            max_age=600,
        )
    app.add_middleware(_OriginGate, host_names=admission.host_names, origins=admission.origins)
    app.add_middleware(
        _HostGate,
        allowed_hosts=admission.host_names,
        bound_names=admission.bound_names,
        host_ports=admission.host_ports,
    )
