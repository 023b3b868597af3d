"""The bottom layer's text helpers: stopwatch durations, the one ellipsis cut, the one prompt flattening.

Kept separate (and pure, importing nothing of this package) because the ACP cards, the terminal
printer, the watch client, the chat bridges, the summary and the session store must all say
"1m 0s" the same way, cut a long line the same way (``…`` inside the cap) and read a person's
prompt the same way. Redaction is *not* done here: the callers that send a string out run the
canonical redactor first (see :func:`acp_adapter.tools.one_line`), so a cut never leaves a secret
fragment the redactor no longer recognises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

__all__ = [
    "ELLIPSIS",
    "THINKING_TITLE",
    "ellipsize",
    "flatten",
    "format_elapsed",
    "prompt_to_text",
    "still_thinking",
]

#: The one mark of a cut text.
ELLIPSIS = "…"
#: What a word-boundary cut also trims before the ellipsis (``done, …`` reads as ``done…``).
_WORD_TRIM = " ,;:.-—"


def format_elapsed(seconds: float) -> str:
    """Format a duration the way a person reads a stopwatch.

    Sub-10-second values keep one decimal so fast heartbeats (tests, keep-alives) still move;
    longer ones are whole seconds, then ``1m 0s`` and ``1h 2m 3s``.
    """
    if seconds != seconds or seconds < 0:  # NaN or negative clock skew: never print nonsense
        seconds = 0.0
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m {secs}s"


#: The think card's title, and the plain terminal's and the thinking callback's first line.
THINKING_TITLE = "Thinking..."


def still_thinking(elapsed: float, status: str | None = None) -> str:
    """The heartbeat's line — ``Still thinking… 40s — <status>`` — worded once, so the ACP card,
    the plain terminal and the embedder's thinking callback say the same thing. ``status`` is shown
    as given (a caller that sends it out cuts and redacts it first)."""
    line = f"Still thinking{ELLIPSIS} {format_elapsed(elapsed)}"
    return f"{line} — {status}" if status else line


def ellipsize(
    text: str, cap: int, *, measure: Callable[[str], int] | None = None, words: bool = False
) -> str:
    """``text`` cut so that it *with* its trailing ``…`` is at most ``cap`` long; unchanged if it fits.

    ``measure`` is the length that counts (default: characters; a chat platform may count UTF-16
    units); the longest prefix that fits with the ellipsis is kept, trailing blanks trimmed. With
    ``words`` the cut moves back to a word boundary when one is in the last third (and trailing
    punctuation goes too): the form for a sentence a person reads, not for an identifier.
    """
    size = measure or len
    if size(text) <= cap:
        return text
    if cap <= 1:
        return ELLIPSIS[: max(cap, 0)]
    if measure is None:
        cut = text[: cap - 1]
    else:
        lo, hi = 0, len(text)
        while lo < hi:  # the longest prefix that fits together with the ellipsis
            mid = (lo + hi + 1) // 2
            if measure(text[:mid] + ELLIPSIS) <= cap:
                lo = mid
            else:
                hi = mid - 1
        cut = text[:lo]
    if words:
        space = cut.rfind(" ")
        if space >= cap * 2 // 3:
            cut = cut[:space]
        return cut.rstrip(_WORD_TRIM) + ELLIPSIS
    return cut.rstrip() + ELLIPSIS


def flatten(text: str, cap: int | None = None) -> str:
    """``text`` as one line: every whitespace run one space, trimmed, then cut by :func:`ellipsize`."""
    flat = " ".join(text.split())
    return flat if cap is None or len(flat) <= cap else ellipsize(flat, cap)


#: The image types a model back-end accepts in a prompt (the chat-completions vision formats): an
#: image of any other type — or a "type" carrying more than a type, such as
#: ``image/png;base64,AAAA``, which would rewrite the data URL it is spliced into — is not sent.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def image_type(mime: str) -> str | None:
    """``mime`` as one of :data:`IMAGE_TYPES` (any case, surrounding spaces ignored), or None."""
    wanted = mime.strip().lower() if isinstance(mime, str) else ""
    return wanted if wanted in IMAGE_TYPES else None


def base64_size(data: str) -> int:
    """The decoded size in bytes of base64 ``data`` (without decoding it)."""
    body = data.strip().rstrip("=")
    return len(body) * 3 // 4


def prompt_to_text(blocks: Sequence[Any], *, attachments: bool = True) -> str:
    """Flatten ACP prompt content blocks into text, one block per line.

    Text blocks are the person's words. With ``attachments`` (what a model sees) an embedded text
    resource becomes a ``<context uri="…">`` block and the others a bracketed marker; without
    (what a person typed: a title, a summary's request) they are left out.
    """
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif not attachments:
            continue
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
            else:
                parts.append(f"[attached binary resource {resource.uri}]")
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"[file: {block.uri}]")
        elif isinstance(block, ImageContentBlock):
            # the image itself reaches a back-end that sees images (``ImagePart``); the text says
            # what it is, so every model knows one was attached
            kind = image_type(block.mime_type)
            size = base64_size(block.data)
            if kind is None:  # never the raw type: it is the sender's text, and no image follows
                parts.append(
                    f"[image attachment of a type the model does not accept, {size:,} bytes: not sent]"
                )
            else:
                parts.append(f"[image attachment: {kind}, {size:,} bytes]")
        elif isinstance(block, AudioContentBlock):
            parts.append(f"[{block.type} attachment not supported by this agent]")
    return "\n".join(parts)
