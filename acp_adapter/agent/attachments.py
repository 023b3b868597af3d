"""Images of a prompt, for a back-end that sees them.

Why checked here: an image's type and data are spliced into the ``data:`` URL the model back-end
is sent, so a type that is not one of the few the back-end accepts (:data:`IMAGE_TYPES`), or data
that is not plain base64, would let the sender rewrite that URL (``image/png;base64,AAAA``) or
send the model what it cannot read (``text/html``, ``image/svg+xml``). Such an image is not sent;
the person is told why (:attr:`PromptImages.refused`) and the turn goes on with the rest. Why
bounded here: an image arrives as base64 inside one JSON-RPC line, already bounded by the stream
limits, but a model request carrying many large images is a cost the person did not mean; so at
most :data:`MAX_IMAGES` images of at most :data:`MAX_IMAGE_BYTES` each are passed on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from acp.schema import ImageContentBlock

from acp_adapter.models.base import ImagePart
from acp_adapter.text import IMAGE_TYPES, base64_size, flatten, image_type

__all__ = ["MAX_IMAGES", "MAX_IMAGE_BYTES", "PromptImages", "prompt_images", "sort_images"]

MAX_IMAGES = 8
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


@dataclass(frozen=True)
class PromptImages:
    """The images a back-end gets, and a sentence for each one it does not get."""

    images: tuple[ImagePart, ...]
    refused: tuple[str, ...]


def _problem(mime: str, data: str) -> str | None:
    """Why an image block is not sent (None: it is)."""
    if image_type(mime) is None:
        shown = flatten(mime, 60) if isinstance(mime, str) else "?"
        accepted = ", ".join(IMAGE_TYPES)
        return f"its type {shown!r} is not one the model accepts ({accepted})"
    if len(data) % 4 or not _BASE64.fullmatch(data):
        return "its data is not base64"
    if base64_size(data) > MAX_IMAGE_BYTES:
        return f"it is larger than {MAX_IMAGE_BYTES >> 20} MiB"
    return None


def sort_images(blocks: Sequence[Any]) -> PromptImages:
    """The prompt's image blocks that carry data: those sent (checked and bounded, see above) and
    a sentence for each that is not."""
    images: list[ImagePart] = []
    refused: list[str] = []
    number = 0
    for block in blocks:
        if not isinstance(block, ImageContentBlock) or not block.data:
            continue
        number += 1
        data = "".join(block.data.split())
        problem = _problem(block.mime_type, data)
        if problem is None and len(images) >= MAX_IMAGES:
            problem = f"a prompt sends at most {MAX_IMAGES} images"
        if problem is not None:
            refused.append(f"Image {number} was not sent to the model: {problem}.")
            continue
        images.append(ImagePart(image_type(block.mime_type) or block.mime_type, data))
    return PromptImages(tuple(images), tuple(refused))


def prompt_images(blocks: Sequence[Any]) -> tuple[ImagePart, ...]:
    """The images of :func:`sort_images` a back-end gets."""
    return sort_images(blocks).images
