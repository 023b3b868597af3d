"""Driving the endpoint's web page in Playwright: type a prompt and send it, wait for the run to end."""

from __future__ import annotations

from typing import Any


def send(page: Any, text: str) -> None:
    """Type ``text`` in the prompt box and press Enter."""
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def idle(page: Any, within: float = 15_000) -> None:
    """The run ended: Send is enabled again."""
    page.wait_for_selector("#send:not([disabled])", timeout=within)
