"""Turning transport and HTTP failures of the OpenAI-compatible back-end into short ``ModelError``s.

Why this exists: what the user sees when a model request fails is one line in the editor, so it
must say what went wrong in plain words (``Cannot connect to http://localhost:11434/v1 (connection
refused)``, ``Rate limited (HTTP 429)``) rather than an exception chain from ``openai``/``httpx``,
and it must never contain the API key (:func:`scrub`, :func:`display_url`). Each
:class:`~.base.ModelError` built here also says whether it may be retried and carries, in typed
fields, what the retry loop shows and uses: ``detail`` (the server's words), ``label`` (the short
cause in ``Retrying in 2s (429)``) and ``retry_after`` (the server's ``Retry-After``, capped at
:data:`MAX_RETRY_AFTER`). Connection errors, 408/409/429 and 5xx and a stream that drops are
retryable; a timeout is not (the user already waited the whole timeout).

Exceptions are classified by the ``openai`` package's own types (:func:`classify`):
``APIStatusError`` (an HTTP error status), ``APITimeoutError``, ``APIConnectionError`` (worded by
the ``OSError`` underneath it, if any) and ``APIError`` (an error event inside the stream); anything
else is a bug somewhere and is logged with its traceback.
"""

from __future__ import annotations

import email.utils
import logging
import socket
import ssl
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from acp_adapter.errors import exception_chain
from acp_adapter.models.base import ModelError
from acp_adapter.text import flatten

if TYPE_CHECKING:
    from openai import APIStatusError


log = logging.getLogger("acp_progress.models.openai")

MAX_RETRY_AFTER = 30.0
_RETRYABLE_STATUS = frozenset({408, 409, 429})


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


_PROBLEMS: tuple[tuple[type[OSError], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (socket.gaierror, "cannot resolve the host name"),
    (ssl.SSLCertVerificationError, "TLS certificate verification failed"),
    (ssl.SSLError, "TLS error"),
    (ConnectionResetError, "connection reset"),
)


def _connection_problem(exc: BaseException) -> str | None:
    """What the operating system said under an ``APIConnectionError``; None if no socket error
    is underneath (the server accepted the connection and closed it)."""
    errors = [e for e in exception_chain(exc) if isinstance(e, OSError)]
    for kind, problem in _PROBLEMS:
        if any(isinstance(e, kind) for e in errors):
            return problem
    return "connection failed" if errors else None


# ---------------------------------------------------------------- building ModelErrors


def failure(
    head: str,
    *,
    detail: str = "",
    retryable: bool = False,
    status: int | None = None,
    label: str | None = None,
    retry_after: float | None = None,
) -> ModelError:
    reason = f"{head}: {detail}" if detail else head
    return ModelError(
        reason, retryable=retryable, status=status, label=label, retry_after=retry_after, detail=detail
    )


def stream_dropped(chunks: int) -> ModelError:
    """The stream ended (or broke) after the headers, before a finish reason."""
    return failure(
        f"The stream ended unexpectedly after {chunks} chunk{'s' if chunks != 1 else ''}",
        retryable=True,
        label="stream dropped",
    )


def malformed_event() -> ModelError:
    return failure("Malformed server-sent event from the model server")


def classify(
    exc: BaseException, *, key: str, model: str, url: str, timeout: float, chunks: int, responded: bool
) -> ModelError:
    """A ModelError for an exception raised by the ``openai`` client during one attempt.

    ``key`` is the API key (scrubbed from server messages), ``model`` the configured model, ``url``
    the base URL in its display form, ``timeout`` the configured timeout; ``chunks``/``responded``
    say how far the attempt got (events received, headers in).
    """
    import openai

    if isinstance(exc, openai.APIStatusError):
        return status_failure(exc, key=key, model=model, url=url)
    if isinstance(exc, openai.APITimeoutError):
        if chunks == 0:
            return failure(f"No response from the model server within {fmt_seconds(timeout)}")
        return failure(f"The model server sent nothing for {fmt_seconds(timeout)} after {chunks} chunks")
    if isinstance(exc, openai.APIConnectionError):
        if responded:
            return stream_dropped(chunks)
        problem = _connection_problem(exc)
        if problem is None:
            return failure(
                f"The model server at {url} closed the connection without responding",
                retryable=True,
                label="connection closed",
            )
        return failure(
            f"Cannot connect to {url} ({problem})",
            retryable=problem != "TLS certificate verification failed",
            label=problem,
        )
    if isinstance(exc, openai.APIError):
        # an ``error`` event inside the stream (the SDK raises it with the event as ``body``)
        message = flatten(scrub(server_message(exc.body) or exc.message, key), 160) or "unknown error"
        return failure("The model server reported an error", detail=message)
    log.error("unexpected error from the OpenAI client", exc_info=exc)
    return failure(f"Unexpected error talking to the model server ({type(exc).__name__})")


def status_failure(exc: APIStatusError, *, key: str, model: str, url: str) -> ModelError:
    """A ModelError for an HTTP error status; ``key`` is the API key (for the hint and to scrub the
    server's message), ``model`` the configured model, ``url`` the display base URL."""
    status = exc.status_code
    message = flatten(scrub(server_message(exc.body), key), 160)
    code = _error_code(exc.body)
    if status == 429 or status >= 500 or status in _RETRYABLE_STATUS:
        return _not_now_failure(status, message, code, exc.response.headers)
    return _refused_failure(status, message, code, key=key, model=model, url=url)


def _not_now_failure(status: int, message: str, code: str, headers: Any) -> ModelError:
    """The statuses that say "not now" (rate limited, a server error, asked to retry): retryable,
    after the server's ``Retry-After``; an exhausted quota is the exception, no retry helps it."""
    if status == 429:
        if code == "insufficient_quota":
            return failure("Quota exceeded (HTTP 429)", detail=message, status=status)
        return failure(
            "Rate limited (HTTP 429)",
            retryable=True,
            status=status,
            label="429",
            retry_after=retry_after(headers),
        )
    head = (
        f"Server error (HTTP {status})"
        if status >= 500
        else f"The model server asked to retry (HTTP {status})"
    )
    return failure(
        head,
        detail=message,
        retryable=True,
        status=status,
        label=str(status),
        retry_after=retry_after(headers),
    )


def _refused_failure(status: int, message: str, code: str, *, key: str, model: str, url: str) -> ModelError:
    """The statuses that refuse the request as it is: each says which setting to check."""
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
    if status == 413:
        return failure(
            "Request too large (HTTP 413): the conversation may exceed the model's limits", status=status
        )
    return failure(f"The model server rejected the request (HTTP {status})", detail=message, status=status)


def final_failure(exc: ModelError, attempt: int, key: str) -> ModelError:
    """The error reported once retrying stopped: the reason, the attempt count, the key scrubbed."""
    head = exc.head
    if attempt > 1:
        head = f"{head} after {attempt} attempts"
    reason = scrub(f"{head}: {exc.detail}" if exc.detail else head, key)
    log.warning("model request failed: %s", reason)
    return ModelError(
        reason,
        retryable=exc.retryable,
        status=exc.status,
        label=exc.label,
        detail=scrub(exc.detail, key),
        attempts=attempt,
    )
