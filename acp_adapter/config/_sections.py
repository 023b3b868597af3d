"""The section models: each a TOML table of the settings file and a group of variables
(``[openai]``, ``[summary_openai]``, ``[telegram]``, ``[agui]``, ``[streams]``, ``[store]``,
``[mcp]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import InitSettingsSource

from acp_adapter.config._model import DEFAULT_SOURCE, _label_for, _Section, _source_target, setting
from acp_adapter.config._sources import ConfigFileChoice, _flag_layer, _Layer, _validate, section_from_env


def _http_base_url(value: Any) -> Any:
    """An OpenAI-compatible server's base URL: http or https, with a host — checked with the other
    settings (exit 2, a direct message), not by the back-end once the agent has started. The value is
    not echoed: a URL may hold a password (``https://user:pass@host/v1``)."""
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        return value
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises here, not at the first call
    except ValueError:
        host = None
    if parts.scheme not in ("http", "https") or not host or any(ch.isspace() for ch in value.strip()):
        raise PydanticCustomError(
            "http_url", "expected an http:// or https:// URL with a host, such as http://localhost:11434/v1"
        )
    return value.strip()


class OpenAISettings(_Section):
    """Connection settings of the OpenAI-compatible back-end."""

    base_url: str = setting(
        "https://api.openai.com/v1", env="OPENAI_BASE_URL", help="the server's /v1 base URL"
    )
    api_key: str = setting(
        "", env="OPENAI_API_KEY", secret=True, help="bearer token; local servers usually need none"
    )
    model: str = setting("gpt-4o-mini", env="ACP_PROGRESS_OPENAI_MODEL", help="model name", min_length=1)
    timeout: float = setting(
        120.0,
        env="ACP_PROGRESS_OPENAI_TIMEOUT",
        help="seconds without any byte from the server before the call fails",
        gt=0,
        le=3600,
    )
    max_retries: int = setting(
        2,
        env="ACP_PROGRESS_OPENAI_MAX_RETRIES",
        help="retries for 429 / 5xx / dropped connections before the first token",
        ge=0,
        le=10,
    )
    context_window: int | None = setting(
        None,
        env="ACP_PROGRESS_OPENAI_CONTEXT_WINDOW",
        help="context size in tokens; when set, usage is sent as usage_update",
        ge=1,
        le=100_000_000,
    )

    _base_url = field_validator("base_url", mode="before")(_http_base_url)


class SummaryOpenAISettings(_Section):
    """The progress-summary model's own connection: independent of the primary model's."""

    base_url: str = setting(
        "https://api.openai.com/v1",
        env="ACP_PROGRESS_SUMMARY_OPENAI_BASE_URL",
        help="the summary server's /v1 base URL",
    )
    model: str = setting(
        "gpt-4o-mini", env="ACP_PROGRESS_SUMMARY_OPENAI_MODEL", help="summary model name", min_length=1
    )
    api_key: str = setting(
        "", env="ACP_PROGRESS_SUMMARY_OPENAI_API_KEY", secret=True, help="bearer token of the summary server"
    )
    timeout: float = setting(
        20.0,
        env="ACP_PROGRESS_SUMMARY_OPENAI_TIMEOUT",
        help="seconds one summary request may take",
        gt=0,
        le=600,
    )

    _base_url = field_validator("base_url", mode="before")(_http_base_url)


class TelegramSettings(_Section):
    """Limits of the Telegram bridge (``bridge run`` of a telegram instance)."""

    retry_after_cap: float = setting(
        60.0,
        env="ACP_PROGRESS_TELEGRAM_RETRY_AFTER_CAP",
        help="longest 429 retry_after (seconds) a delivery waits; a longer one drops that delivery",
        ge=0,
        le=3600,
    )
    answer_retries: int = setting(
        4,
        env="ACP_PROGRESS_TELEGRAM_ANSWER_RETRIES",
        help="retries of an answer, error or question after a 5xx, malformed reply or timeout",
        ge=0,
        le=10,
    )
    retry_backoff: float = setting(
        0.5,
        env="ACP_PROGRESS_TELEGRAM_RETRY_BACKOFF",
        help="first backoff (seconds) between those retries; doubles each time, at most 8 s",
        gt=0,
        le=60,
    )
    http_timeout: float = setting(
        10.0,
        env="ACP_PROGRESS_TELEGRAM_HTTP_TIMEOUT",
        help="seconds one Bot API call may take (connect, write, read) before it counts as a timeout",
        gt=0,
        le=300,
    )
    refusal_interval: float = setting(
        3600.0,
        env="ACP_PROGRESS_TELEGRAM_REFUSAL_INTERVAL",
        help="seconds between two refusals sent to the same stranger chat",
        ge=0,
        le=604800,
    )
    refusals_per_hour: int = setting(
        60,
        env="ACP_PROGRESS_TELEGRAM_REFUSALS_PER_HOUR",
        help="refusals sent to all strangers together per hour (the rest are silent)",
        ge=0,
        le=100000,
    )
    refusal_memory: int = setting(
        4096,
        env="ACP_PROGRESS_TELEGRAM_REFUSAL_MEMORY",
        help="stranger chats the refusal limiter remembers (oldest forgotten first)",
        ge=1,
        le=1_000_000,
    )
    stop_grace: float = setting(
        3.0,
        env="ACP_PROGRESS_TELEGRAM_STOP_GRACE",
        help="seconds Ctrl-C/SIGTERM leaves for the last edits (stopped lines, unanswered questions)",
        gt=0,
        le=4,
    )
    api_url: str = setting(
        "https://api.telegram.org",
        env="ACP_PROGRESS_TELEGRAM_API_URL",
        help="the Bot API server (a self-hosted one, or a test's fake); /bot<token>/METHOD is appended",
        pattern=r"^https?://\S+$",
        max_length=2000,
    )


def _name_list(value: Any) -> Any:
    """``a,b`` from an environment variable, or a list from repeated flags, as a tuple of names."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class AguiSettings(_Section):
    """Who the AG-UI endpoint admits and how much it takes (every input is bounded).

    Only ``acp-progress agui`` uses it. Read from the environment with everything else;
    ``acp-progress agui`` lays its own flags on top
    with :meth:`with_flags`. These are the endpoint's own: :meth:`to_env` exports none of them, so
    the token never travels to a child agent through :meth:`Settings.to_env`.
    """

    token: SecretStr | None = setting(
        None,
        env="ACP_PROGRESS_AGUI_TOKEN",
        secret=True,
        help="bearer token every request must carry (Authorization: Bearer ...); "
        "required when bound to a non-loopback address (at least 16 characters, checked by the command)",
    )
    allowed_hosts: tuple[str, ...] = setting(
        (),
        env="ACP_PROGRESS_AGUI_ALLOWED_HOSTS",
        help="extra Host names admitted besides the bound loopback names (comma-separated)",
    )
    allowed_origins: tuple[str, ...] = setting(
        (),
        env="ACP_PROGRESS_AGUI_ALLOWED_ORIGINS",
        help="extra browser origins admitted, with CORS (comma-separated, e.g. https://app.example)",
    )
    body_timeout: float = setting(
        5.0,
        env="ACP_PROGRESS_AGUI_BODY_TIMEOUT",
        help="seconds a request's headers, and then its body, may take to arrive (408 after)",
        gt=0,
        le=600,
    )
    max_body_bytes: int = setting(
        16 * 1024 * 1024,
        env="ACP_PROGRESS_AGUI_MAX_BODY_BYTES",
        help="largest POST body accepted (413 beyond)",
        ge=1024,
        le=1024 * 1024 * 1024,
    )
    max_connections: int = setting(
        256,
        env="ACP_PROGRESS_AGUI_MAX_CONNECTIONS",
        help="open HTTP connections at once (beyond: 503 and closed); also kept below the fd limit",
        ge=1,
        le=100_000,
    )
    max_runs: int = setting(
        32,
        env="ACP_PROGRESS_AGUI_MAX_RUNS",
        help="runs in flight at once (beyond: 503 with Retry-After)",
        ge=1,
        le=10_000,
    )
    max_id_length: int = setting(
        256,
        env="ACP_PROGRESS_AGUI_MAX_ID_LENGTH",
        help="longest threadId, runId or message id in characters (422 beyond)",
        ge=8,
        le=4096,
    )
    max_queued_events: int = setting(
        1024,
        env="ACP_PROGRESS_AGUI_MAX_QUEUED_EVENTS",
        help="events a run queues for a slow SSE reader before snapshots coalesce and the agent waits",
        ge=16,
        le=1_000_000,
    )
    health_interval: float = setting(
        5.0,
        env="ACP_PROGRESS_AGUI_HEALTH_INTERVAL",
        help="seconds between two checks that a replica's PostgreSQL database answers "
        '(the "database" of /health)',
        gt=0,
        le=3600,
    )
    health_timeout: float = setting(
        2.0,
        env="ACP_PROGRESS_AGUI_HEALTH_TIMEOUT",
        help="seconds one of those checks waits for the database before it counts as not answering",
        gt=0,
        le=60,
    )
    tool_progress: bool = setting(
        False,
        env="ACP_PROGRESS_AGUI_TOOL_PROGRESS",
        help="publish TOOL_PROGRESS activity snapshots for every run (--tool-progress); a run "
        "overrides it with forwardedProps.emitToolProgress",
    )

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        return _name_list(value)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> AguiSettings:
        """Just the endpoint's settings from the settings file's ``[agui]`` and the environment
        (for :func:`~acp_adapter.frontends.agui.app.create_app` called without them)."""
        return section_from_env(cls, environ, config_file)

    def to_env(self) -> dict[str, str]:
        return {}  # the endpoint's own settings: never handed to a child process

    def with_flags(self, flags: Mapping[str, tuple[str, Any]]) -> AguiSettings:
        """A validated copy with ``{field: (flag, value)}`` applied (``None`` values skipped).

        Errors are :class:`ConfigError` naming the flag, as :meth:`Settings.load` does.
        """
        model = type(self)
        data: dict[str, Any] = self.model_dump()
        if self.token is not None:
            data["token"] = self.token.get_secret_value()
        current = _Layer(
            InitSettingsSource(_source_target(model), init_kwargs=data),
            lambda loc: DEFAULT_SOURCE,  # not reported: only the copy is returned
            lambda loc: _label_for(model, loc, {}),
        )
        return _validate(model, [current, _flag_layer(model, flags)])[0]


class StreamSettings(_Section):
    """Limits of every JSON-RPC stream the package reads (``serve``, the relay both ways, the client
    driver): enforced in one place, :mod:`acp_adapter.protocol.ndjson`."""

    max_line_bytes: int = setting(
        50 * 1024 * 1024,
        env="ACP_PROGRESS_MAX_LINE_BYTES",
        help="longest JSON-RPC line in bytes; a longer line is skipped whole and answered once",
        ge=1024,
        le=50 * 1024 * 1024,
    )
    max_json_depth: int = setting(
        256,
        env="ACP_PROGRESS_MAX_JSON_DEPTH",
        help="deepest nesting of arrays/objects in a JSON-RPC line; deeper lines are refused unparsed",
        ge=2,
        le=512,
    )
    max_in_flight: int = setting(
        1024,
        env="ACP_PROGRESS_MAX_IN_FLIGHT",
        help="requests from the peer handled at once; at the limit the reader waits for answers",
        ge=1,
        le=100_000,
    )
    write_high_water: int = setting(
        1024 * 1024,
        env="ACP_PROGRESS_WRITE_HIGH_WATER",
        help="bytes queued for a peer that is not reading before the reader stops reading",
        ge=4096,
        le=64 * 1024 * 1024,
    )
    max_queued_updates: int = setting(
        1024,
        env="ACP_PROGRESS_MAX_QUEUED_UPDATES",
        help="a turn's updates waiting for a slow front-end before the client driver stops reading the agent",
        ge=1,
        le=1_000_000,
    )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> StreamSettings:
        """Just these limits from the settings file's ``[streams]`` and the environment (for code
        that has no :class:`Settings`)."""
        return section_from_env(cls, environ, config_file)


class McpSettings(_Section):
    """Limits of the MCP servers the agent connects (``[mcp]``; the servers themselves are the
    ``[mcp_servers.NAME]`` tables). One size limit holds for every transport: a stdio line, an HTTP
    body and a server-sent event are each one message."""

    max_message_bytes: int = setting(
        64 << 20,
        env="ACP_PROGRESS_MCP_MAX_LINE",
        help="largest message from an MCP server in bytes (stdio line, HTTP body, SSE event); "
        "a larger one is cut off while it arrives and its call fails",
        ge=64 << 10,
        le=1 << 30,
    )
    start_timeout: float = setting(
        10.0,
        env="ACP_PROGRESS_MCP_START_TIMEOUT",
        help="seconds each MCP server gets to start, initialize and list its tools",
        ge=0.1,
        le=300,
    )
    call_timeout: float = setting(
        0.0,
        env="ACP_PROGRESS_MCP_CALL_TIMEOUT",
        help="seconds one MCP tool call may take; 0 = no limit (cancel still ends it)",
        ge=0,
        le=86_400,
    )
    stop_grace: float = setting(
        2.0,
        env="ACP_PROGRESS_MCP_STOP_GRACE",
        help="seconds a stdio MCP server gets to exit after its input is closed before its "
        "process group is terminated (a server with a timer pending may never exit by itself)",
        ge=0,
        le=60,
    )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, config_file: ConfigFileChoice = True
    ) -> McpSettings:
        """Just these limits from the settings file's ``[mcp]`` and the environment (for code that
        has no :class:`Settings`)."""
        return section_from_env(cls, environ, config_file)


class StoreSettings(_Section):
    """Where sessions, the audit and the front-ends' state are kept when not in the SQLite file
    (``[store]``): a PostgreSQL database every process on every machine shares."""

    url: str | None = setting(
        None,
        env="ACP_PROGRESS_DATABASE_URL",
        secret=True,
        metavar="URL",
        help="postgresql://USER:PASSWORD@HOST:PORT/DB: keep the session store in PostgreSQL, shared by "
        "every process and machine (unset: the SQLite file in the state directory)",
    )
    flush_timeout: float = setting(
        2.0,
        env="ACP_PROGRESS_STORE_FLUSH_TIMEOUT",
        help="seconds a prompt's answer waits for its turn to reach the session store (a slow database "
        "delays answers by at most this; the write still lands after); 0 answers without waiting",
        ge=0,
        le=300,
    )
    leader_retry: float = setting(
        1.0,
        env="ACP_PROGRESS_STORE_LEADER_RETRY",
        help="seconds between a standby bridge's attempts to lead (and the leader's checks of its lock "
        "in PostgreSQL): how soon a standby takes over from a leader that died",
        gt=0,
        le=60,
    )

    @field_validator("url", mode="before")
    @classmethod
    def _postgres_url(cls, value: Any) -> Any:
        """Checked at start-up (a typo fails there, not at the first write); the message never
        echoes the URL, which holds the password."""
        from urllib.parse import urlsplit

        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 - raises ValueError for a port that is not one
        except ValueError as exc:
            raise PydanticCustomError("database_url", f"not a valid database URL ({exc})") from None
        if parts.scheme not in ("postgresql", "postgres"):
            got = f"{parts.scheme}://" if parts.scheme else "no scheme"
            raise PydanticCustomError(
                "database_url", f"must be a postgresql://USER:PASSWORD@HOST:PORT/DB URL (got {got})"
            )
        return value.strip()
