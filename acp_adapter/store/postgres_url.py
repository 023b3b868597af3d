"""The PostgreSQL store's URL: where the database is, and how to speak of it without its password.

``ACP_PROGRESS_DATABASE_URL=postgresql://USER:PASSWORD@HOST:PORT/DB`` (settings file: ``[store]
url``). The password is a credential to the database every replica shares: it must never appear in
output, logs, ``acp-progress config`` or an error message. Everything that names the database goes
through :meth:`DatabaseUrl.shown` (``postgresql://USER:[hidden]@HOST:PORT/DB``) or
:meth:`DatabaseUrl.where` (``HOST:PORT``), and every error text from the driver through
:meth:`DatabaseUrl.clean` (the password cut out wherever it appears, then the canonical redactor).

No import of the driver here: ``acp-progress config`` and the start-up check use this module
without paying for psycopg.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from acp_adapter.safety.redact import redact_text
from acp_adapter.safety.redact.keys import is_sensitive_key
from acp_adapter.store.base import StoreError

#: shown instead of the password (the config report's convention for a secret that is set)
HIDDEN = "[hidden]"
SCHEMES = ("postgresql", "postgres")
DEFAULT_PORT = 5432


class DatabaseUrlError(StoreError):
    """The URL is not a PostgreSQL URL this store can use (the message never holds its password)."""


@dataclass(frozen=True)
class DatabaseUrl:
    """A parsed ``postgresql://`` URL. ``repr`` and ``str`` never show the password."""

    raw: str = field(repr=False)
    host: str
    port: int
    database: str
    user: str | None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> DatabaseUrl:
        text = url.strip()
        try:
            parts = urlsplit(text)
            port = parts.port
            host = parts.hostname
        except ValueError as exc:  # a port that is not a number …
            raise DatabaseUrlError(f"the database URL is not valid ({exc}): {_hide_any(text)}") from None
        if parts.scheme not in SCHEMES:
            raise DatabaseUrlError(
                "the database URL must start with postgresql:// (got "
                f"{parts.scheme + '://' if parts.scheme else 'no scheme'}): {_hide_any(text)}"
            )
        database = unquote(parts.path.lstrip("/"))
        password = unquote(parts.password) if parts.password is not None else None
        if password is None:
            # libpq takes the password as a URL parameter too (``?password=…``)
            password = dict(parse_qsl(parts.query)).get("password")
        return cls(
            raw=text,
            host=host or "localhost",
            port=port or DEFAULT_PORT,
            database=database or (unquote(parts.username) if parts.username else "postgres"),
            user=unquote(parts.username) if parts.username else None,
            password=password,
        )

    def where(self) -> str:
        """``HOST:PORT`` (the part of an error a person acts on)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def shown(self) -> str:
        """The URL as it may be printed: the password replaced by ``[hidden]``."""
        return _hide_any(self.raw)

    def clean(self, text: str) -> str:
        """``text`` (a driver's error message …) with the password cut out and then redacted."""
        if self.password:
            text = text.replace(self.password, HIDDEN)
        return redact_text(_hide_any(text))

    def __str__(self) -> str:
        return self.shown()


#: URL parameters that carry a credential whatever the classifier says of their name (libpq's
#: ``password`` and the client key's ``sslpassword``); any other parameter named like a secret
#: (``token``, ``api_key`` …) is hidden too.
_SECRET_PARAMS = frozenset({"password", "sslpassword", "pass", "pwd"})


def _hide_any(text: str) -> str:
    """Every credential of every ``scheme://…`` URL in ``text`` replaced by ``[hidden]``: the
    password of ``user:password@`` and the value of each parameter that names a secret."""
    out: list[str] = []
    rest = text
    while (at := rest.find("://")) >= 0:
        head, tail = rest[: at + 3], rest[at + 3 :]
        end = min((i for i in (tail.find(c) for c in "/?# ") if i >= 0), default=len(tail))
        authority = tail[:end]
        if "@" in authority:
            creds, _, hostpart = authority.rpartition("@")
            if ":" in creds:
                creds = creds.split(":", 1)[0] + ":" + HIDDEN
            authority = f"{creds}@{hostpart}"
        out.append(head + authority)
        rest = tail[end:]
        query_at = rest.find("?")
        blank = min((i for i in (rest.find(c) for c in " \t\n") if i >= 0), default=len(rest))
        if 0 <= query_at < blank:
            query_end = min((i for i in (rest.find("#", query_at), blank) if i >= 0), default=blank)
            out.append(rest[: query_at + 1] + _hide_params(rest[query_at + 1 : query_end]))
            rest = rest[query_end:]
    out.append(rest)
    return "".join(out)


def _hide_params(query: str) -> str:
    """``a=1&password=x`` → ``a=1&password=[hidden]`` (the separators and order kept)."""
    shown: list[str] = []
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        key = unquote(name).strip().lower()
        if eq and value and (key in _SECRET_PARAMS or is_sensitive_key(key)):
            pair = f"{name}={HIDDEN}"
        shown.append(pair)
    return "&".join(shown)
