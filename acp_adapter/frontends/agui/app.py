"""The AG-UI HTTP endpoint: ``POST /`` takes a ``RunAgentInput`` and answers an SSE stream of events.

:func:`create_app` takes one :class:`~.endpoint.AguiOptions` (every field below is one of its
fields) and returns a FastAPI app a host can run (``acp-progress agui``) or mount. Its
lifespan starts the ACP agent (through the one client driver) and stops it; a host that mounts the
app under its own (Starlette does not run a mounted app's lifespan) enters it from its own
lifespan with ``async with app.router.lifespan_context(app)``; without that the agent is started
by the first run and never stopped explicitly.

* ``POST /`` — one run. ``415`` unless ``Content-Type: application/json`` (checked before the
  body is read), ``503`` with ``Retry-After`` while ``max_runs`` runs are in flight, ``408`` for a
  body that does not arrive within ``body_timeout``, ``413`` for one over ``max_body_bytes``,
  ``422`` for a body that is not a usable ``RunAgentInput`` (the message names the fields; ids
  over ``max_id_length`` characters too), ``409`` while the thread already has a run. Otherwise
  ``200`` and ``text/event-stream``: every event is an ag-ui-protocol model encoded by
  :class:`ag_ui.encoder.EventEncoder`. A client that disconnects cancels its ACP turn; one gone
  before its body arrived is one INFO line.
* ``GET /`` — the web page (:mod:`.page`: plain HTML/CSS/JS from the package, a strict CSP).
* ``GET /threads`` — ``{"threads": [{"threadId", "title", "usedAt", "running", "paused",
  "interrupt"?}]}``: this endpoint's stored threads, most recently used first (the page's thread
  list); a thread paused on a permission question carries its interrupt (a reloaded page asks again).
* ``GET /threads/{threadId}`` — ``{"threadId", "messages", "state"?, "truncated", "omitted"}``: the
  thread's earlier conversation from the session store as AG-UI messages (:mod:`.history`: user,
  assistant, reasoning, tool calls with their results), the newest that fit its bounds; ``404``
  for a thread this endpoint does not have (another endpoint's included).
* ``GET /health`` — ``{"status": "ok", "agentRunning", "threads", "activeRuns"}``; only
  ``{"status": "ok"}`` to a caller without the token, when there is one.

Every request first passes the admission gates of :mod:`.admission` (``admission``: Host,
Origin and ``Sec-Fetch-Site``, CORS for allowed origins, the bearer token); by default only the
loopback names are admitted and there is no token. The limits are ``limits``
(:class:`~.limits.EndpointLimits`).

Progress summaries (``summary``, see :mod:`.summaries`): each run that has them publishes a
``PROGRESS_SUMMARY`` activity snapshot per new revision, one ``messageId`` per run, replaced in
place, all before the run's terminal event.

Permission requests from the agent are answered by ``permission_policy``: by default
:func:`~acp_adapter.client.driver.deny_all`, so dangerous tools are denied and the agent says so on
the card; ``allow_all`` (``--yes``) allows. A run that asks for it
(``forwardedProps.permissionInterrupts``, or ``permission_interrupts=True`` for every run) gets the
question instead, as an AG-UI interrupt, and its client answers with a resume (:mod:`.interrupts`);
``permission_policy`` answers when nobody does within ``permission_timeout`` seconds. A tool's
question (ACP ``elicitation/create``) pauses such a run the same way, with a form
(:mod:`.questions`); otherwise, or after the same wait, it is declined with its reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from ag_ui.encoder import EventEncoder
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send

from acp_adapter.errors import AcpProgressError
from acp_adapter.frontends.agui.active import ActiveRun
from acp_adapter.frontends.agui.admission import Admission, bearer_ok, install_admission
from acp_adapter.frontends.agui.endpoint import AguiOptions
from acp_adapter.frontends.agui.interrupts import ResumeError
from acp_adapter.frontends.agui.limits import RETRY_AFTER, EndpointLimits
from acp_adapter.frontends.agui.page import install_page
from acp_adapter.frontends.agui.request import BadRunInput, parse_run_request
from acp_adapter.frontends.agui.run_starter import TooManyRuns
from acp_adapter.frontends.agui.service import AguiService
from acp_adapter.frontends.agui.thread_store import ConversationUnavailable
from acp_adapter.frontends.agui.threads import ThreadBusy
from acp_adapter.frontends.agui.visible import visible_event
from acp_adapter.safety.web_text import web_visible_value

log = logging.getLogger("acp_progress.agui.app")

_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class _RunStream(StreamingResponse):
    """The SSE response of one run; however it ends, a run it did not see to the end is cancelled.

    That covers a disconnect mid-stream, a client gone before the first byte (the body iterator
    never started) and a failed socket write alike: :meth:`ActiveRun.client_gone` is a no-op for
    a run that already ended.
    """

    def __init__(self, active: ActiveRun, encoder: EventEncoder) -> None:
        super().__init__(
            _encoded(active, encoder), media_type=encoder.get_content_type(), headers=_SSE_HEADERS
        )
        self._active = active

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._active.client_gone()


async def _encoded(active: ActiveRun, encoder: EventEncoder) -> AsyncIterator[str]:
    """Everything queued is encoded and written together: one write per burst, none delayed.
    Every event's text is cleaned on its way out (:mod:`.visible`)."""
    async for batch in active.context.emitter.batches():
        yield "".join(encoder.encode(visible_event(event)) for event in batch)


class _ClientGone(AcpProgressError):
    """The client disconnected before its request body arrived."""


def _is_json(content_type: str | None) -> bool:
    """``application/json``, with parameters (``; charset=utf-8``) or without."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == "application/json"


async def _read_body(request: Request, limits: EndpointLimits) -> bytes:
    """The whole body, within ``limits.body_timeout`` (408) and ``limits.max_body_bytes`` (413)."""
    too_large = f"the request body is larger than {limits.max_body_bytes} bytes"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise BadRunInput(too_large, status=413)
    body = bytearray()
    try:
        async with asyncio.timeout(limits.body_timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limits.max_body_bytes:
                    raise BadRunInput(too_large, status=413)
    except TimeoutError:
        raise BadRunInput(
            f"the request body did not arrive within {limits.body_timeout:g} seconds", status=408
        ) from None
    except ClientDisconnect:
        raise _ClientGone(len(body)) from None
    return bytes(body)


def _refusal(status: int, detail: str, **headers: str) -> JSONResponse:
    if status in (408, 413):
        headers["Connection"] = "close"  # the rest of that body is not read: the connection ends
    return JSONResponse({"detail": detail}, status_code=status, headers=headers or None)


async def _start_run(request: Request, service: AguiService, limits: EndpointLimits) -> Response:
    """``POST /``: the run's SSE stream, or the refusal that says why there is none."""
    if not _is_json(request.headers.get("content-type")):
        return _refusal(415, "POST a RunAgentInput with Content-Type: application/json")
    if service.runs_full:
        return _busy(limits)
    try:
        body = await _read_body(request, limits)
        run_request = parse_run_request(
            body,
            service.tool_progress,
            service.progress_summary,
            max_id_length=limits.max_id_length,
            global_interrupts=service.permission_interrupts,
        )
    except BadRunInput as exc:
        return _refusal(exc.status, str(exc))
    except _ClientGone as exc:
        log.info("a client disconnected before its request body arrived (%s bytes read)", exc.args[0])
        return Response(status_code=400)  # nobody is there to read it
    try:
        active = await service.open_run(run_request)
    except ThreadBusy as exc:
        return JSONResponse({"detail": str(exc)}, status_code=409)
    except ResumeError as exc:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)
    except TooManyRuns:
        return _busy(limits)
    return _RunStream(active, EventEncoder(accept=request.headers.get("accept", "")))


def _busy(limits: EndpointLimits) -> JSONResponse:
    return _refusal(
        503,
        f"{limits.max_runs} runs are in progress, the most this endpoint serves at once; retry later",
        **{"Retry-After": str(RETRY_AFTER)},
    )


def create_app(options: AguiOptions | None = None) -> FastAPI:
    """Build the AG-UI endpoint for one ACP agent, configured by ``options``
    (:class:`~.endpoint.AguiOptions`; ``None``: every default — this project's agent in the current
    directory, loopback only). Bad options raise here, before anything is served (a summary set-up
    that cannot work raises :class:`~acp_adapter.config.ConfigError`)."""
    options = options if options is not None else AguiOptions()
    admission = options.admission
    limits = options.limits
    service = AguiService(options)
    app = FastAPI(
        title="acp-progress AG-UI endpoint",
        lifespan=_lifespan(service),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.agui = service
    app.state.admission = admission
    app.state.limits = limits
    install_admission(app, admission)

    install_page(app)
    _install_routes(app, service, admission, limits)
    return app


def _lifespan(service: AguiService) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The agent starts with the app (a no-op when the command started it) and stops with it."""
    argv, workspace = service.argv, service.workspace

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        log.info("AG-UI endpoint ready (agent %s, workspace %s)", argv[0], workspace)
        try:
            yield
        finally:
            await service.close()

    return lifespan


def _install_routes(app: FastAPI, service: AguiService, admission: Admission, limits: EndpointLimits) -> None:
    """``GET /threads``, ``GET /threads/{id}``, ``GET /health`` and ``POST /`` (a run)."""

    @app.get("/threads")
    async def threads() -> dict[str, Any]:
        listing: dict[str, Any] = web_visible_value({"threads": await service.thread_list()})
        return listing

    @app.get("/threads/{thread_id}", response_model=None)
    async def thread(thread_id: str) -> dict[str, Any] | JSONResponse:
        unknown = JSONResponse({"detail": "this endpoint has no such thread"}, status_code=404)
        if len(thread_id) > limits.max_id_length:
            return unknown
        try:
            history = await service.thread_history(thread_id)
        except ConversationUnavailable as exc:
            return _refusal(503, str(exc), **{"Retry-After": str(RETRY_AFTER)})
        return unknown if history is None else web_visible_value(history)

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        if not bearer_ok(request.headers, admission.token):
            return {"status": "ok"}  # a probe learns that it lives, nothing about its runs
        return service.health()

    @app.post("/", response_model=None)
    async def run(request: Request) -> Response:
        return await _start_run(request, service, limits)
