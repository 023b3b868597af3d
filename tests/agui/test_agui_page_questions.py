"""A tool's question on the web page, in a real headless browser (Debian's chromium through
Playwright, as in ``test_agui_page.py``).

A real ``acp-progress agui`` process drives this project's agent with a real MCP server
(``tests/mcp_servers/tasks.py``) whose ``orders`` tool asks a form of every kind, its first
field's title hostile. The page shows the tool's permission question, then the form; the person
fills it and presses Send, and the tool's answer, built from what was typed, shows. Decline
reaches the tool too. Screenshots go to ``tmp_path``, never into the repository.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.agui_page import idle, send
from tests.helpers.agui_process import AguiProcess
from tests.helpers.mcp_kit import mcp_config

pytestmark = pytest.mark.e2e

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install -e '.[test]' installs playwright"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AguiProcess]:
    workspace = tmp_path_factory.mktemp("agui-page-questions")
    process = AguiProcess(
        workspace,
        "--redact",
        "none",
        "--summary",
        "off",
        "--mcp-config",
        str(mcp_config(workspace)),
        env={"ACP_PROGRESS_SUMMARY_INTERVAL": "0"},
    )
    try:
        yield process.wait_healthy(60)
    finally:
        process.stop()


def ask(page: Any, prompt: str) -> Any:
    """Send ``prompt``, allow the tool, and return the form the tool's question shows."""
    send(page, prompt)
    page.wait_for_selector("article.question button.option.allow:not([disabled])", timeout=60_000).click()
    return page.wait_for_selector("form.tool-question", timeout=60_000)


def test_the_person_fills_the_form_and_the_tool_gets_the_answer(
    page: Any, server: AguiProcess, tmp_path: Path
) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    form = ask(page, "call orders {}")
    assert "Your order?" in form.text_content()
    assert "waiting for your answer" in page.locator("#log").text_content()  # the card says so
    titles = [t.text_content() for t in form.query_selector_all(".field-title")]
    assert titles == ["Name<U+202E>txt.exe", "How many", "Urgent (optional)", "Size"]
    assert form.query_selector("script, img, iframe") is None
    page.screenshot(path=str(tmp_path / "form.png"), full_page=True)
    form.query_selector("input[data-field='name']").fill("Ada")
    form.query_selector("input[data-field='count']").fill("3")
    form.query_selector("input[data-field='urgent']").check()
    form.query_selector("select[data-field='size']").select_option("large")
    form.query_selector("button:has-text('Send')").click()
    page.wait_for_selector("#log :text('ordered 3 large for Ada, urgent=True')", timeout=60_000)
    idle(page, 60_000)
    assert form.query_selector("button:not([disabled])") is None
    assert page.problems == []


def test_a_form_missing_a_required_field_is_not_sent_and_decline_reaches_the_tool(
    page: Any, server: AguiProcess
) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    form = ask(page, "call orders {}")
    form.query_selector("button:has-text('Send')").click()  # nothing filled: the browser refuses
    assert form.query_selector("button:has-text('Send'):not([disabled])") is not None
    form.query_selector("button:has-text('Decline')").click()
    page.wait_for_selector("#log :text('the person chose decline')", timeout=60_000)
    idle(page, 60_000)
    assert page.problems == []


def test_a_page_reloaded_while_asked_shows_the_form_again_and_its_answer_goes_through(
    page: Any, server: AguiProcess
) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    ask(page, 'call asks {"question": "Favourite colour?"}')
    page.reload()
    form = page.wait_for_selector("form.tool-question", timeout=30_000)  # asked again
    assert "Favourite colour?" in form.text_content()
    form.query_selector("input[data-field='colour']").fill("teal")
    form.query_selector("button:has-text('Send')").click()
    page.wait_for_selector("#log :text('the person said teal')", timeout=60_000)
    idle(page, 60_000)
    assert page.problems == []
