"""Images of a prompt, for a back-end that sees them.

Why bounded here: an image arrives as base64 inside one JSON-RPC line, already bounded by the
stream limits, but a model request carrying many large images is a cost the person did not mean;
so at most :data:`MAX_IMAGES` images of at most :data:`MAX_IMAGE_BYTES` each are passed on, and
only with a mime type of an image (the text of the prompt says what was attached either way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import ImageContentBlock

from acp_adapter.models.base import ImagePart
from acp_adapter.text import base64_size

__all__ = ["MAX_IMAGES", "MAX_IMAGE_BYTES", "prompt_images"]

MAX_IMAGES = 8
MAX_IMAGE_BYTES = 20 * 1024 * 1024


def prompt_images(blocks: Sequence[Any]) -> tuple[ImagePart, ...]:
    """The prompt's image blocks that carry data, as :class:`ImagePart` (bounded, see above)."""
    images: list[ImagePart] = []
    for block in blocks:
        if len(images) >= MAX_IMAGES:
            break
        if not isinstance(block, ImageContentBlock) or not block.data:
            continue
        if not block.mime_type.startswith("image/") or base64_size(block.data) > MAX_IMAGE_BYTES:
            continue
        images.append(ImagePart(block.mime_type, "".join(block.data.split())))
    return tuple(images)
