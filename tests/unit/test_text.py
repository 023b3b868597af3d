"""The bottom layer's text helpers: the one ellipsis cut, prompt flattening and heartbeat line."""

from __future__ import annotations

import pytest
from acp import embedded_text_resource, resource_block, text_block
from acp.schema import (
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
)

from acp_adapter.frontends.bridges.sink import utf16_len
from acp_adapter.text import ELLIPSIS, ellipsize, flatten, prompt_to_text, still_thinking


def test_a_text_that_fits_is_unchanged() -> None:
    assert ellipsize("hello", 5) == "hello"
    assert ellipsize("", 0) == ""


@pytest.mark.parametrize("cap", [2, 3, 10, 50])
def test_a_cut_text_ends_with_the_ellipsis_inside_the_cap(cap: int) -> None:
    cut = ellipsize("word " * 40, cap)
    assert cut.endswith(ELLIPSIS) and len(cut) <= cap
    assert not cut[:-1].endswith(" "), "no blank before the ellipsis"


def test_tiny_caps() -> None:
    assert ellipsize("abc", 1) == ELLIPSIS
    assert ellipsize("abc", 0) == ""
    assert ellipsize("abc", -3) == ""


def test_measure_counts_what_the_platform_counts() -> None:
    text = "😀" * 10  # two UTF-16 units each
    cut = ellipsize(text, 9, measure=utf16_len)
    assert utf16_len(cut) <= 9 and cut == "😀" * 4 + ELLIPSIS
    assert ellipsize("short", 10, measure=utf16_len) == "short"


def test_word_cut_backs_up_to_a_word_boundary_and_drops_trailing_punctuation() -> None:
    assert (
        ellipsize("Checking the failing tests, then fixing them", 30, words=True)
        == "Checking the failing tests…"
    )
    # no boundary in the last third: a plain cut
    assert ellipsize("a " + "b" * 40, 20, words=True) == "a " + "b" * 17 + ELLIPSIS


def test_flatten_is_one_line_and_capped() -> None:
    assert flatten("  a\tb\n\nc  ") == "a b c"
    assert flatten("x " * 100, 10) == "x x x x x" + ELLIPSIS


def test_prompt_to_text_with_and_without_attachments() -> None:
    blocks = [
        text_block("fix it"),
        resource_block(embedded_text_resource("file:///a.py", "print(1)")),
        EmbeddedResourceContentBlock(
            type="resource", resource=BlobResourceContents(uri="file:///b.bin", blob="AAAA")
        ),
        ResourceContentBlock(type="resource_link", uri="file:///c.txt", name="c.txt"),
        ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
        text_block("now"),
    ]
    assert prompt_to_text(blocks) == "\n".join(
        [
            "fix it",
            '<context uri="file:///a.py">\nprint(1)\n</context>',
            "[attached binary resource file:///b.bin]",
            "[file: file:///c.txt]",
            "[image attachment: image/png, 3 bytes]",
            "now",
        ]
    )
    assert prompt_to_text(blocks, attachments=False) == "fix it\nnow"
    assert prompt_to_text([]) == ""


def test_the_heartbeat_line_is_worded_once_for_every_surface() -> None:
    assert still_thinking(90) == "Still thinking… 1m 30s"
    assert still_thinking(4.25, "reading files") == "Still thinking… 4.2s — reading files"
    assert still_thinking(40, "") == "Still thinking… 40s", "an empty status adds no dash"


def test_the_plain_printer_and_the_thinking_callback_say_what_the_card_says() -> None:
    import io

    from acp_adapter.frontends.plain.printer import TerminalPrinter
    from acp_adapter.tools import build_thinking_progress

    card = build_thinking_progress("t1", 40, "reading files")
    shown = card.content[0].content.text  # type: ignore[index,union-attr]
    out = io.StringIO()
    TerminalPrinter(out, animate=False).spinner_heartbeat(40, "reading files")
    assert out.getvalue() == f"{shown}\n"
