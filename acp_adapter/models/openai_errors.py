"""Turning transport and HTTP failures of the OpenAI-compatible back-end into short ``ModelError``s.

Why this exists: what the user sees when a model request fails is one line in the editor, so it
must say what went wrong in plain words (``Cannot connect to http://localhost:11434/v1 (connection
refused)``, ``Rate limited (HTTP 429)``) rather than an exception chain from ``openai``/``httpx``,
and it must never contain the API key (:func:`scrub`, :func:`display_url`). Each
:class:`~.base.ModelError` built here also says whether it may be retried and carries, in
``extra``, what the retry loop shows and uses: ``head``/``detail`` (the reason's parts), ``label``
(the short cause in ``Retrying in 2s (429)``) and ``retry_after`` (the server's ``Retry-After``,
capped at :data:`MAX_RETRY_AFTER`). Connection errors, 408/409/429 and 5xx and a stream that drops
are retryable; a timeout is not (the user already waited the whole timeout).
"""

from __future__ import annotations

import email.utils
import logging
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .base import ModelError

__all__ = [
    "MAX_RETRY_AFTER",
    "display_url",
    "failure",
    "final_failure",
    "fmt_seconds",
    "one_line",
    "request_failure",
    "retry_after",
    "scrub",
    "server_message",
    "status_failure",
    "stream_dropped",
]

log = logging.getLogger("acp_progress.models.openai")

MAX_RETRY_AFTER = 30.0
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_TRANSPORT_MODULES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2", "ssl", "socket"})


# ---------------------------------------------------------------- wording helpers


def display_url(url: str) -> str:
    """``url`` without credentials or query (never show a key that someone put in the URL)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    except ValueError:
        return "the configured OPENAI_BASE_URL"


def fmt_seconds(seconds: float) -> str:
    return f"{seconds:.3g}s"


def scrub(text: str, key: str) -> str:
    """``text`` with the API ``key`` masked (keys shorter than 4 characters are left alone)."""
    if key and len(key) >= 4:
        text = text.replace(key, "***")
    return text


def one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def server_message(body: Any) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return ""
    return body if isinstance(body, str) else ""


def _error_code(body: Any) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        code = body.get("code")
        return code if isinstance(code, str) else ""
    return ""


def retry_after(headers: Any) -> float | None:
    """Seconds asked for by ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), capped."""
    if headers is None:
        return None
    try:
        raw_ms = headers.get("retry-after-ms")
        if raw_ms is not None:
            return min(max(float(raw_ms) / 1000, 0.0), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


# ---------------------------------------------------------------- classifying exceptions


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 20:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _is_timeout(exc: BaseException) -> bool:
    return any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in _chain(exc))


def _is_transport_error(exc: BaseException, connection_error: type[BaseException]) -> bool:
    """Whether ``exc`` came from the network or the HTTP layer (not from a bug of ours)."""
    return any(
        isinstance(e, OSError | connection_error) or type(e).__module__.split(".")[0] in _TRANSPORT_MODULES
        for e in _chain(exc)
    )


def _connection_problem(exc: BaseException) -> str:
    import ssl

    for e in _chain(exc):
        if isinstance(e, ConnectionRefusedError):
            return "connection refused"
        if isinstance(e, socket.gaierror):
            return "cannot resolve the host name"
        if isinstance(e, ssl.SSLCertVerificationError):
            return "TLS certificate verification failed"
        if isinstance(e, ssl.SSLError):
            return "TLS error"
        if isinstance(e, ConnectionResetError):
            return "connection reset"
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if "connection refused" in text:
        return "connection refused"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "cannot resolve the host name"
    if "unsupportedprotocol" in text or "missing an 'http://' or 'https://'" in text:
        return "unsupported URL"
    return "connection failed"


# ---------------------------------------------------------------- building ModelErrors


def failure(
    head: str, *, detail: str = "", retryable: bool = False, status: int | None = None, **extra: Any
) -> ModelError:
    reason = f"{head}: {detail}" if detail else head
    return ModelError(
        reason, retryable=retryable, status=status, extra={"head": head, "detail": detail, **extra}
    )


def stream_dropped(chunks: int) -> ModelError:
    """The stream ended (or broke) after the headers, before ``[DONE]`` or a finish reason."""
    return failure(
        f"The stream ended unexpectedly after {chunks} chunk{'s' if chunks != 1 else ''}",
        retryable=True,
        label="stream dropped",
    )


def request_failure(
    exc: Exception,
    *,
    connection_error: type[BaseException],
    timeout: float,
    chunks: int,
    responded: bool,
    url: str,
) -> ModelError:
    """A ModelError for an exception (other than an HTTP status error) raised by the HTTP layer.

    ``connection_error`` is ``openai.APIConnectionError``; ``timeout`` the configured timeout;
    ``chunks``/``responded`` how far the attempt got; ``url`` the base URL in its display form.
    """
    if _is_timeout(exc):
        if chunks == 0:
            return failure(f"No response from the model server within {fmt_seconds(timeout)}")
        return failure(f"The model server sent nothing for {fmt_seconds(timeout)} after {chunks} chunks")
    if isinstance(exc, ModelError):
        return exc
    if not _is_transport_error(exc, connection_error):
        log.debug("unexpected error from the OpenAI client: %s", type(exc).__name__)
        return failure(f"Unexpected error talking to the model server ({type(exc).__name__})")
    if responded:
        return stream_dropped(chunks)
    if any("RemoteProtocolError" in type(e).__name__ for e in _chain(exc)):
        return failure(
            f"The model server at {url} closed the connection without responding",
            retryable=True,
            label="connection closed",
        )
    problem = _connection_problem(exc)
    return failure(
        f"Cannot connect to {url} ({problem})",
        retryable=problem not in ("unsupported URL", "TLS certificate verification failed"),
        label=problem,
    )


def status_failure(exc: Any, *, key: str, model: str, url: str) -> ModelError:
    """A ModelError for ``openai.APIStatusError`` ``exc``; ``key`` is the API key (for the hint and
    to scrub the server's message), ``model`` the configured model, ``url`` the display base URL."""
    status = int(getattr(exc, "status_code", 0) or 0)
    body = getattr(exc, "body", None)
    response = getattr(exc, "response", None)
    message = one_line(scrub(server_message(body), key))
    code = _error_code(body)
    if status == 401:
        hint = "OPENAI_API_KEY is empty" if not key else "check OPENAI_API_KEY"
        return failure(f"Authentication failed (HTTP 401): {hint}", status=status)
    if status == 403:
        return failure(
            f"Permission denied (HTTP 403): check OPENAI_API_KEY and access to model '{model}'",
            status=status,
        )
    if status == 404:
        lowered = message.lower()
        if code == "model_not_found" or "model" in lowered or model.lower() in lowered:
            return failure(f"Model '{model}' not found (HTTP 404)", status=status)
        return failure(
            f"Not found (HTTP 404): check OPENAI_BASE_URL ({url}) and the model '{model}'",
            status=status,
        )
    if status == 429:
        if code == "insufficient_quota":
            return failure("Quota exceeded (HTTP 429)", detail=message, status=status)
        return failure(
            "Rate limited (HTTP 429)",
            retryable=True,
            status=status,
            label="429",
            retry_after=retry_after(getattr(response, "headers", None)),
        )
    if status >= 500:
        return failure(
            f"Server error (HTTP {status})",
            detail=message,
            retryable=True,
            status=status,
            label=str(status),
            retry_after=retry_after(getattr(response, "headers", None)),
        )
    if status in _RETRYABLE_STATUS:
        return failure(
            f"The model server asked to retry (HTTP {status})",
            detail=message,
            retryable=True,
            status=status,
            label=str(status),
            retry_after=retry_after(getattr(response, "headers", None)),
        )
    if status == 413:
        return failure(
            "Request too large (HTTP 413): the conversation may exceed the model's limits", status=status
        )
    return failure(f"The model server rejected the request (HTTP {status})", detail=message, status=status)


def final_failure(exc: ModelError, attempt: int, key: str) -> ModelError:
    """The error reported once retrying stopped: the reason, the attempt count, the key scrubbed."""
    head = exc.extra.get("head", exc.reason)
    detail = exc.extra.get("detail", "")
    if attempt > 1:
        head = f"{head} after {attempt} attempts"
    reason = scrub(f"{head}: {detail}" if detail else head, key)
    log.warning("model request failed: %s", reason)
    return ModelError(reason, retryable=exc.retryable, status=exc.status, extra={"attempts": attempt})
