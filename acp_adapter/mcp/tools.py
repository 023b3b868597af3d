"""MCP tools as toolbox tools: ``mcp__<server>__<tool>`` with the server's JSON schema.

Why a bridge and not a second execution path: every tool call must go through
:meth:`~acp_adapter.tooling.toolbox.Toolbox.execute`, so an MCP call gets the same card,
permission question, progress path (``ctx.progress`` → ``_meta.acpProgress.progress`` →
AG-UI ``TOOL_PROGRESS`` and bridge lines) and cancel as a built-in tool. The tool function runs
on the turn's worker thread and hands the call to the event loop, where the MCP session lives.
Everything a server sends is hostile until checked: names are sanitized, descriptions and schemas
bounded, results cut at 1 MiB and stripped of control characters, reasons redacted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from acp_adapter.cancel import TurnCancelled
from acp_adapter.mcp.clean import ServerCrashed, clean_text, reason_of, scrub
from acp_adapter.mcp.connection import McpServer
from acp_adapter.mcp.elicitation import AskedCall
from acp_adapter.mcp.names import Offered, offered_names
from acp_adapter.mcp.task_calls import TaskFailed, call_as_task
from acp_adapter.mcp.tasks import status_line
from acp_adapter.mcp.trust import is_trusted
from acp_adapter.tooling.display import ImageShown
from acp_adapter.tooling.toolbox import Tool, ToolContext, ToolError, ToolReturn

log = logging.getLogger("acp_progress.mcp")

#: The most of one result the model gets (bytes of UTF-8); the rest is cut with a note.
MAX_RESULT_BYTES = 1 << 20
MAX_DESCRIPTION = 2000
MAX_SCHEMA_BYTES = 64 * 1024
#: All MCP tool descriptions and schemas offered in one session (every model request carries them).
MAX_OFFERED_BYTES = 2 << 20
MAX_ERROR = 2000
#: Tools left out for a name already taken that a notice names one by one (the rest are counted).
MAX_NAMED_DROPS = 10

_SEARCHY = re.compile(r"search|find|query|grep|lookup|list", re.I)
_FETCHY = re.compile(r"fetch|download|http|url|web|browse", re.I)


@dataclass(frozen=True)
class McpTool(Tool):
    """A toolbox tool backed by an MCP server; ``card_kind`` is the ACP kind its card shows."""

    card_kind: str = "other"
    server: str = ""
    mcp_name: str = ""
    #: the person marked the server trusted: its annotations decide (see :mod:`acp_adapter.mcp.trust`)
    trusted: bool = False
    #: the server's annotations say the tool only reads (a claim, checked by nobody)
    claims_read_only: bool = False


def card_kind(tool: types.Tool, trusted: bool = True) -> str:
    """``read``/``search``/``fetch`` for a read-only tool of a trusted server (by its name), else
    ``other``: an untrusted server's claim must not reach a client that lets ``read`` calls through."""
    annotations = tool.annotations
    if not trusted or annotations is None or annotations.read_only_hint is not True:
        return "other"
    if _SEARCHY.search(tool.name):
        return "search"
    if _FETCHY.search(tool.name):
        return "fetch"
    return "read"


def safe_schema(schema: object) -> dict[str, Any]:
    """The tool's input schema when it is a bounded JSON object schema, else an open object."""
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    try:
        size = len(json.dumps(schema))
    except (TypeError, ValueError, RecursionError):
        return {"type": "object", "properties": {}}
    if size > MAX_SCHEMA_BYTES:
        return {"type": "object", "properties": {}}
    out = dict(schema)
    out["type"] = "object"
    if not isinstance(out.get("properties"), Mapping):
        out["properties"] = {}
    required = out.get("required")
    well_formed = isinstance(required, list) and all(isinstance(r, str) for r in required)
    if required is not None and not well_formed:
        out.pop("required")
    return out


class McpToolFactory:
    """Builds the toolbox tools of a session's MCP servers (on the event loop thread)."""

    def __init__(self, manager: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.manager = manager
        self.loop = loop
        self._dropped_told: set[object] = set()

    def tools(self) -> list[McpTool]:
        out: list[McpTool] = []
        budget = MAX_OFFERED_BYTES  # what every model request carries: bounded for the session
        taken: dict[str, str] = {}  # model-facing name → "server/tool" that has it
        for server in self.manager.servers:
            if server.state not in ("ready", "crashed"):  # a crashed one is restarted at its next call
                continue
            by_name = {t.name: t for t in server.tools}
            offered = offered_names(server.name, by_name, taken)
            trusted = is_trusted(server.spec)
            self._tell_dropped(server.name, len(by_name), offered)
            mapping = offered.mapping
            taken.update((name, f"{server.name}/{tool}") for name, tool in mapping.items())
            over = 0
            for offered_name, original in mapping.items():
                tool = self._tool(server.name, offered_name, by_name[original], trusted)
                cost = len(tool.description) + len(json.dumps(tool.parameters))
                if budget - cost < 0:
                    over += 1
                    continue
                budget -= cost
                out.append(tool)
            if over and (server.name, "budget") not in self._dropped_told:
                self._dropped_told.add((server.name, "budget"))
                limit = MAX_OFFERED_BYTES >> 20
                why = f"{over} of its tools were left out (a session's MCP tool schemas: at most {limit} MiB)"
                self.manager.notice(server.name, why)
        return out

    def _tell_dropped(self, server: str, listed: int, offered: Offered) -> None:
        """Say once which tools of ``server`` were left out, and why, naming them."""
        if offered.over_limit and server not in self._dropped_told:
            self._dropped_told.add(server)
            left = offered.over_limit
            why = f"is not available: {left} of its {listed} tools were left out (at most 1,000 a server)"
            self.manager.note(server, why)
        for tool, holder in offered.collided[:MAX_NAMED_DROPS]:
            if (server, tool) in self._dropped_told:
                continue
            self._dropped_told.add((server, tool))
            why = (
                f"tool '{clean_text(tool)[:80]}' was left out: its name for the model is the "
                f"same as that of '{clean_text(holder)[:160]}'"
            )
            self.manager.note(server, why)
        rest = len(offered.collided) - MAX_NAMED_DROPS
        if rest > 0 and (server, "collided") not in self._dropped_told:
            self._dropped_told.add((server, "collided"))
            self.manager.note(server, f"had {rest} more tools left out for names already taken")

    def _tool(self, server: str, offered: str, tool: types.Tool, trusted: bool = False) -> McpTool:
        description = clean_text(tool.description or tool.title or f"{tool.name} from MCP server {server}")
        meta = tool.meta if isinstance(tool.meta, Mapping) else {}
        read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
        return McpTool(
            name=offered,
            description=f"[MCP {server}] {description[:MAX_DESCRIPTION]}",
            parameters=safe_schema(tool.input_schema),
            function=self._function(server, tool.name),
            dangerous=not (trusted and read_only),  # an untrusted server's hints decide nothing
            extension=dict(meta),
            card_kind=card_kind(tool, trusted),
            server=server,
            mcp_name=clean_text(tool.name)[:200],
            trusted=trusted,
            claims_read_only=read_only,
        )

    def _function(self, server_name: str, tool_name: str) -> Any:
        manager, loop = self.manager, self.loop

        def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolReturn:
            ctx.cancel.raise_if_cancelled()
            server = _wait(loop, manager_ready(manager, server_name), ctx)
            if server is None:
                raise ToolError(f"MCP server '{server_name}' is not running")
            finished = False

            secrets = server.secrets

            async def progress(value: float, total: float | None, message: str | None) -> None:
                if not finished:  # progress after the result is ignored
                    note = scrub(clean_text(message)[:500], secrets) if isinstance(message, str) else None
                    ctx.progress(value, total, note)

            asked = AskedCall(ctx.call.id, lambda text: ctx.progress(None, None, text))
            server.asking.append(asked)  # a question from the server belongs to this call's card
            try:
                if server.uses_task(tool_name):
                    call = self._as_task(server, tool_name, dict(args), ctx, progress)
                else:
                    call = server.call(tool_name, dict(args), progress, manager.call_timeout)
                result = _wait(loop, call, ctx)
            except ServerCrashed as exc:
                raise ToolError(f"MCP server '{server_name}': {exc}") from None
            except TaskFailed as exc:
                text = scrub(" ".join(clean_text(str(exc)).split())[:MAX_ERROR], secrets)
                raise ToolError(f"MCP task failed: {text}") from None
            except (TurnCancelled, ToolError):
                raise
            except Exception as exc:  # an error answer, a timeout, a result that is not valid MCP …
                raise ToolError(f"MCP server '{server_name}': {scrub(reason_of(exc), secrets)}") from None
            finally:
                finished = True
                if asked in server.asking:
                    server.asking.remove(asked)
            return to_return(result, secrets)

        return run

    def _as_task(
        self, server: McpServer, tool_name: str, args: dict[str, Any], ctx: ToolContext, progress: Any
    ) -> Any:
        """The call made as an MCP task: its status and status message show on the card as
        progress lines, its record goes to the session's task log."""
        secrets = server.secrets

        def on_status(task: types.Task) -> None:
            ctx.progress(None, None, scrub(status_line(task), secrets))

        return call_as_task(
            server,
            tool_name,
            args,
            title=f"{server.name}: {clean_text(tool_name)[:100]}",
            progress=progress,
            on_status=on_status,
            cancel_reason=lambda: ctx.cancel.reason,
            task_log=getattr(self.manager, "task_log", None),
            call_timeout=self.manager.call_timeout,
        )


async def manager_ready(manager: Any, name: str) -> McpServer | None:
    """The server, waiting for it to start; a crashed one is started again once a turn."""
    server: McpServer | None = manager.server(name)
    if server is None:
        return None
    if server.state == "starting":
        await server.wait_ready()
    if server.state == "ready":
        return server
    fresh: McpServer | None = await manager.restart(server)
    return fresh


def _wait(loop: asyncio.AbstractEventLoop, coro: Any, ctx: ToolContext) -> Any:
    """Run ``coro`` on the loop and wait for it on this worker thread; cancel of the turn cancels
    the coroutine (the SDK sends ``notifications/cancelled``) and returns at once."""
    future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(coro, loop)

    def abandon() -> None:
        future.cancel()

    remove = ctx.cancel.on_cancel(abandon)
    try:
        return future.result()
    except concurrent.futures.CancelledError:
        raise TurnCancelled(ctx.cancel.reason) from None
    finally:
        remove()


def _item_text(item: Any) -> str:
    if isinstance(item, types.TextContent):
        return item.text
    if isinstance(item, types.ImageContent):
        return f"[image {item.mime_type}, about {len(item.data) * 3 // 4} bytes]"
    if isinstance(item, types.AudioContent):
        return f"[audio {item.mime_type}, about {len(item.data) * 3 // 4} bytes]"
    if isinstance(item, types.ResourceLink):
        return f"[resource {item.name}: {item.uri}]"
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[resource {resource.uri}, binary]"
    return f"[{getattr(item, 'type', 'content')}]"


def result_text(result: types.CallToolResult) -> str:
    """The result as text: text items, then a line per image, audio or resource link."""
    parts = [_item_text(item) for item in result.content]
    if not parts and result.structured_content is not None:
        try:
            parts = [json.dumps(result.structured_content)[: MAX_RESULT_BYTES + 1]]
        except (TypeError, ValueError, RecursionError):
            parts = ["[structured content]"]
    return "\n".join(parts)


def cut(text: str, limit: int = MAX_RESULT_BYTES) -> str:
    """At most ``limit`` bytes of UTF-8, with a note saying how much was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return f"{kept}\n… (result cut: the server returned {len(data):,} bytes; the first {limit:,} are kept)"


def to_return(result: types.CallToolResult, secrets: tuple[str, ...] = ()) -> ToolReturn:
    """A tool result for the toolbox; ``isError`` fails the card with the server's message."""
    text = scrub(clean_text(cut(result_text(result))), secrets)
    if result.is_error:
        message = " ".join(text.split())[:MAX_ERROR] or "the tool reported an error"
        raise ToolError(message)
    size = len(text.encode("utf-8", "replace"))
    return ToolReturn(
        text or "(no output)",
        summary=f"{size:,} bytes",
        raw_output=media_of(result, secrets),
        display=images_of(result),
    )


#: Images of one result shown on its card, and the most base64 they may hold together.
MAX_SHOWN_IMAGES = 8
MAX_SHOWN_IMAGE_DATA = 8 * 1024 * 1024


def images_of(result: types.CallToolResult) -> tuple[ImageShown, ...]:
    """The result's images, for the card (a client shows them as image content); bounded in count
    and size, and only with an image mime type."""
    shown: list[ImageShown] = []
    budget = MAX_SHOWN_IMAGE_DATA
    for item in result.content:
        if len(shown) >= MAX_SHOWN_IMAGES:
            break
        if isinstance(item, types.ImageContent) and item.mime_type.startswith("image/"):
            if len(item.data) > budget:
                continue
            budget -= len(item.data)
            shown.append(ImageShown(clean_text(item.mime_type)[:100], item.data))
    return tuple(shown)


MAX_MEDIA = 50


def media_of(result: types.CallToolResult, secrets: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """Images, audio and resource links of a result, described for the card's raw output (never
    their data); None when there are none."""
    media: list[dict[str, Any]] = []
    for item in result.content:
        if len(media) >= MAX_MEDIA:
            break
        if isinstance(item, types.ImageContent | types.AudioContent):
            media.append({"type": item.type, "mimeType": clean_text(item.mime_type)[:100]})
        elif isinstance(item, types.ResourceLink):
            link = {
                "type": "resource_link",
                "uri": clean_text(str(item.uri))[:2000],
                "name": clean_text(item.name)[:200],
            }
            media.append({k: scrub(v, secrets) for k, v in link.items()})
    return {"media": media} if media else None
