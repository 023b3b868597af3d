"""The endpoint's web page, in a real headless browser.

Debian's ``chromium`` (``/usr/bin/chromium``; :mod:`tests.helpers.chromium` installs it with apt when
missing and run as root, else the tests fail saying what to install) driven by Playwright for Python with
``executable_path`` — Playwright never downloads a browser here. The page talks to the endpoint
``acp-progress agui`` builds in front of ``tests/agents/agui_everything_agent.py``, both served in this
process (what the page shows and sends is the point, not their processes): a prompt streams its answer
while a progress bar moves to 100 %, the plan checklist and the diff show, a permission question is
answered with its buttons, a run is stopped, and after a reload the thread is listed. The conversation
restored after a reload comes from this project's agent behind the endpoint ``acp-progress agui`` builds,
both served in this process (what the page restores is the point there), as is a tool's question: the
page shows the tool's permission question, then its form; the person fills it and presses Send, and the
tool's answer, built from what was typed, shows (decline reaches the tool too). The endpoint's own token
is checked on an ``--own-token`` endpoint as a user starts it. One browser for all (a context per test).
Screenshots go to ``tmp_path``, never into the repository.
"""

from __future__ import annotations

import re
import stat
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_adapter.config import Settings
from acp_adapter.frontends.agui.token_file import TOKEN_FILE
from acp_adapter.mcp.config import frontend_servers
from acp_adapter.tooling.presentation import NATIVE_TOOLS, card_emoji
from tests.agents.agui_everything_agent import LONG_COMMAND, EverythingAgent
from tests.helpers.acp_agent import ROOT
from tests.helpers.agui_http import Served
from tests.helpers.agui_inprocess import (
    endpoint_in_process,
    use_in_process_agui_agents,
    use_in_process_test_agent,
)
from tests.helpers.agui_page import idle, send
from tests.helpers.agui_process import AguiProcess
from tests.helpers.disguised_command import SHOWN_COMMAND
from tests.helpers.log_lines import LogLines, log_lines
from tests.helpers.mcp_kit import http_tasks_server, mcp_config

pytestmark = pytest.mark.e2e

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install -e '.[test]' installs playwright"
)

AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'agui_everything_agent.py'}"


@dataclass
class PageEndpoint:
    """The page tests' endpoint: where it serves, and what its runs log."""

    url: str
    log: LogLines


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageEndpoint]:
    """The endpoint ``acp-progress agui --redact none`` builds (summaries at every change) in front
    of ``tests/agents/agui_everything_agent.py``, both served in this process: what the page shows
    and sends is the point, not their processes (the browser is a process of its own)."""
    workspace = tmp_path_factory.mktemp("agui-page")
    with pytest.MonkeyPatch.context() as patched, log_lines("acp_progress.agui.active") as log:
        use_in_process_test_agent(patched, AGENT, EverythingAgent)
        summary = Settings(summary_interval=0)
        with endpoint_in_process(workspace, agent_command=AGENT, policy="none", summary=summary) as served:
            yield PageEndpoint(served.url, log)


def test_the_page_is_served_with_a_strict_policy_and_no_inline_code(server: PageEndpoint) -> None:
    response = httpx.get(server.url + "/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    html = response.text
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/page/app.js" defer>']
    assert "<style" not in html and " style=" not in html
    assert re.search(r"<[^>]*\son[a-z]+\s*=", html) is None  # no inline event handler
    for path in ("/page/app.js", "/page/app.css"):
        asset = httpx.get(server.url + path)
        assert asset.status_code == 200 and asset.headers["content-security-policy"] == policy
    assert "//" not in re.sub(r"//.*", "", html.replace("http://www.w3.org", ""))  # no CDN URL


def test_a_run_in_the_browser(page: Any, server: PageEndpoint, tmp_path: Path) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    send(page, "everything 150")
    state = page.locator(".card .state").first
    seen: list[str] = []
    deadline = time.monotonic() + 15
    while "100%" not in (seen[-1] if seen else "") and time.monotonic() < deadline:
        text = state.text_content() or ""
        if not seen or seen[-1] != text:
            seen.append(text)
        time.sleep(0.02)
    moving = [s for s in seen if re.fullmatch(r"\d/5 · \d+%", s)]
    assert len(moving) >= 2 and "100%" in seen[-1], seen  # it moved, then reached 100 %
    bar = page.locator(".card progress").first
    assert bar.evaluate("b => b.value === b.max")
    idle(page)
    answer = page.locator(".msg.assistant").last
    assert answer.text_content() == "All done: 5 items counted and the typo fixed."
    plan = page.locator("#plan-list li")
    assert plan.count() == 3 and page.locator("#plan-list li.completed").count() == 3
    assert "Count the items" in plan.nth(1).text_content()
    assert page.locator(".diff .add").text_content() == "+pears"
    assert page.locator(".diff .del").text_content() == "-paers"
    assert "4,321" in page.locator("#usage").text_content()
    assert "First I read the notes" in page.locator("details.reasoning").text_content()
    assert page.locator("#summary").text_content().strip()  # the one-sentence progress summary
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    assert page.problems == []


def test_a_permission_question_is_answered_with_its_buttons(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    send(page, "permission")
    question = page.wait_for_selector(".question")
    assert page.locator(".question pre.command").text_content() == LONG_COMMAND  # whole, never cut
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Allow once"  # focus moves to the question
    page.click(".question button:has-text('Allow once')")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "permission=allow"
    assert question.query_selector("button:not([disabled])") is None
    assert page.locator(".card.tool .state").last.text_content() == "done · 100%"
    send(page, "permission")
    page.wait_for_selector(".question button:not([disabled]):has-text('Deny')").click()
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "permission=reject"
    assert page.locator(".card.tool .state").last.text_content() == "failed"  # denied: not "done"
    assert page.problems == []


def test_a_thread_list_that_arrives_after_the_answer_does_not_ask_again(
    page: Any, server: PageEndpoint
) -> None:
    """A list of threads fetched while the question waited can reach the page after the question was
    answered and the run it resumed has ended (a slow network, a busy endpoint): the page must not
    ask the answered question again — a second answer would resume a run that no longer waits."""
    held: list[tuple[Any, Any]] = []
    holding = [False]

    def hold(route: Any) -> None:
        if holding[0]:
            held.append((route, route.fetch()))  # the endpoint answers now; the page sees it later
        else:
            route.continue_()

    def waiting_question_held() -> bool:
        return any(t.get("interrupt") for _, answer in held for t in answer.json()["threads"])

    page.route(re.compile(r".*/threads$"), hold)
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    holding[0] = True
    send(page, "permission")
    page.wait_for_selector(".question button:has-text('Allow once')")
    deadline = time.monotonic() + 10
    while not waiting_question_held() and time.monotonic() < deadline:
        page.wait_for_timeout(20)  # the run's own list, fetched once its stream ended
    assert waiting_question_held()
    holding[0] = False
    page.click(".question button:has-text('Allow once')")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "permission=allow"
    for route, answer in held:
        route.fulfill(response=answer)
    page.wait_for_timeout(300)  # the late lists are read and applied, or not
    assert page.locator(".question").count() == 1
    assert page.locator(".question button:not([disabled])").count() == 0
    assert page.locator("#send").is_enabled()
    assert page.problems == []


def test_stop_aborts_the_run_and_the_thread_goes_on(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    send(page, "slow")
    page.wait_for_selector(".card .state:has-text('/100')")
    page.click("#stop")
    idle(page)
    assert page.locator(".msg.note").last.text_content() == "Stopped."
    server.log.wait_for("the client is gone; cancelling its turn")
    send(page, "hello")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "echo: hello"


def test_after_a_reload_the_thread_is_listed(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    send(page, "remember this thread")
    idle(page)
    page.reload()
    current = page.wait_for_selector("#thread-list button[aria-current='true']")
    assert current.text_content() == "remember this thread"
    # that agent keeps no session in the store: the page says the thread goes on, with its title
    note = page.wait_for_selector(".msg.note")
    assert note.text_content() == "Continuing “remember this thread”. The agent remembers what was said."
    threads = httpx.get(server.url + "/threads").json()["threads"]
    assert "remember this thread" in [t["title"] for t in threads]


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """This project's agent (its built-in model): it records each session in the store. The
    endpoint (``acp-progress agui --summary off``) and the agent are served in this process: what
    the page restores is the point, not their processes."""
    workspace = tmp_path_factory.mktemp("agui-page-own")
    (workspace / "notes.txt").write_text("pears\n")
    with pytest.MonkeyPatch.context() as patched:
        use_in_process_agui_agents(patched)
        with endpoint_in_process(workspace) as served:
            yield served


def stored(server: Served, thread_id: str, needle: str) -> dict[str, Any]:
    """The thread's stored conversation, read once right after the run ended: it holds ``needle``
    (the endpoint has the agent flush its store before it reads; no waiting for the write here)."""
    body = httpx.get(f"{server.url}/threads/{thread_id}").json()
    assert any(needle in str(m.get("content")) for m in body.get("messages", [])), body
    return body


def test_after_a_reload_the_thread_shows_its_earlier_conversation(page: Any, own_server: Served) -> None:
    page.goto(own_server.url + "/")
    page.click("#new-thread")
    send(page, "list the files here")
    idle(page)
    live_title = page.locator(".card.tool .name").last.text_content() or ""
    # watch's line for it: the card's emoji (card_emoji: the tool's own or its kind's) and title
    emoji, title = live_title.split(" ", 1)
    assert title == f"{NATIVE_TOOLS['list_dir'].verb} ." and emoji in {
        card_emoji("read"),
        card_emoji("read", "list_dir"),
    }
    answer = page.locator(".msg.assistant").last.get_attribute("data-raw") or ""  # its Markdown
    assert "notes.txt" in answer
    thread_id = page.evaluate("sessionStorage.getItem('acp-progress.thread')")
    stored(own_server, thread_id, answer)
    page.reload()
    page.wait_for_selector(".msg.assistant")
    assert page.locator(".msg.user").all_text_contents() == ["list the files here"]
    assert page.locator(".msg.assistant").evaluate_all("ms => ms.map(m => m.dataset.raw)") == [answer]
    card = page.locator(".card.tool.done")
    assert card.count() == 1 and card.get_attribute("data-tool") == "list_dir"
    # titled as watch titles it: the same emoji and words as the live card had
    assert card.locator(".name").text_content() == live_title
    assert "notes.txt" in (card.locator("div.result").text_content() or "")
    # the thread goes on: a new run on it is drawn after the earlier conversation
    send(page, "read notes.txt")
    idle(page)
    assert page.locator(".msg.user").all_text_contents() == ["list the files here", "read notes.txt"]
    assert "pears" in (page.locator(".msg.assistant").last.text_content() or "")
    stored(own_server, thread_id, "read notes.txt")
    # another conversation, then back: the thread list opens the thread with its conversation
    page.click("#new-thread")
    assert page.locator("#log > *").count() == 0
    page.click(f"#thread-list button[data-thread-id='{thread_id}']")
    page.wait_for_selector(".msg.user:has-text('read notes.txt')")
    assert page.locator(".msg.user").all_text_contents() == ["list the files here", "read notes.txt"]
    assert page.locator(".card.tool.done").count() == 2
    assert page.problems == []


def test_a_restored_conversation_is_text_never_markup(page: Any, own_server: Served) -> None:
    page.goto(own_server.url + "/")
    page.click("#new-thread")
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script> list the files'
    send(page, hostile)
    idle(page)
    thread_id = page.evaluate("sessionStorage.getItem('acp-progress.thread')")
    stored(own_server, thread_id, page.locator(".msg.assistant").last.get_attribute("data-raw") or "")
    page.reload()
    page.wait_for_selector(".msg.user")
    assert page.locator(".msg.user").all_text_contents() == [hostile]
    assert page.evaluate("document.querySelectorAll('main img, main script').length") == 0
    assert page.evaluate("window.pwned === undefined")
    assert page.problems == []


def test_accessibility_basics(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    for field in page.locator("textarea, input").all():
        assert field.evaluate("f => f.labels.length") >= 1, field.evaluate("f => f.outerHTML")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip"
    order: list[str] = []
    while "send" not in order and len(order) < 60:
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.textContent"))
    # the conversations first, then the message box and its Send button, in reading order
    assert order[0] == "new-thread" and order[-2:] == ["prompt", "send"], order
    spin = (
        "document.querySelector('#busy') && getComputedStyle(document.querySelector('#busy')).animationName"
    )
    assert page.evaluate(spin) == "spin"
    page.emulate_media(reduced_motion="reduce")
    assert page.evaluate(spin) == "none"


def _own_token_endpoint(workspace: Path, *, agent_inside: bool = False) -> tuple[AguiProcess, str]:
    """``acp-progress agui --own-token`` on ``workspace``'s state directory, and the page's URL it
    printed: in front of the everything agent, or with ``agent_inside`` this project's agent inside
    the endpoint's process (a start whose runs are not the point)."""
    agent = () if agent_inside else ("--agent", AGENT)
    process = AguiProcess(
        workspace,
        "--own-token",
        *agent,
        "--summary",
        "off",
        env={"ACP_PROGRESS_STATE_DIR": str(workspace / "state")},
        agent_inside=agent_inside,
    )
    process.wait_healthy()
    process.wait_for("open the web page at ")
    url = re.search(r"open the web page at (http://\S+)", process.text()).group(1)  # type: ignore[union-attr]
    return process, url


@pytest.fixture(scope="module")
def tokened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AguiProcess, str, Path]]:
    """An endpoint with its own token (made at its first start, printed once inside the page's
    URL), that URL and its state directory."""
    workspace = tmp_path_factory.mktemp("agui-page-token")
    process, url = _own_token_endpoint(workspace)
    try:
        yield process, url, workspace / "state"
    finally:
        process.stop()


def test_a_loopback_endpoint_needs_its_own_token_printed_with_the_page_url(
    tokened: tuple[AguiProcess, str, Path],
) -> None:
    """A token by default, on loopback too: made at the first start, kept in the state directory
    (mode 0600), printed once inside the page's URL, and the same at the next start."""
    process, url, state = tokened
    assert url.startswith(f"{process.url}/#token=")
    token = url.split("#token=", 1)[1]
    stored = state / TOKEN_FILE
    assert stored.read_text().strip() == token
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert httpx.get(process.url + "/threads").status_code == 401
    assert httpx.post(process.url + "/", json={}).status_code == 401
    assert httpx.get(process.url + "/").status_code == 200  # the page itself holds no secret
    authorized = httpx.get(process.url + "/threads", headers={"Authorization": f"Bearer {token}"})
    assert authorized.status_code == 200
    assert process.text().count(token) == 1  # printed once
    # the next start on that state directory (nothing runs on it: its agent inside it)
    again, again_url = _own_token_endpoint(state.parent, agent_inside=True)
    try:
        assert again_url == f"{again.url}/#token={token}"  # the kept token, not a new one
    finally:
        again.stop()


def test_the_token_is_asked_once_and_kept_in_the_tab(
    browser: Any, tokened: tuple[AguiProcess, str, Path]
) -> None:
    process, url, _state = tokened
    token = url.split("#token=", 1)[1]
    assert httpx.get(process.url + "/").status_code == 200  # the page itself needs no token
    assert httpx.get(process.url + "/threads").status_code == 401
    assert httpx.post(process.url + "/", json={}).status_code == 401
    context = browser.new_context()
    page = context.new_page()
    page.goto(process.url + "/")
    page.wait_for_selector("#token-form:not([hidden])")
    page.fill("#token", token)
    page.press("#token", "Enter")
    page.wait_for_selector("#connection:has-text('Connected')")
    assert page.evaluate("sessionStorage.getItem('acp-progress.token')") == token
    assert page.evaluate("localStorage.length") == 0
    send(page, "hi")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "echo: hi"
    page.reload()
    page.wait_for_selector("#connection:has-text('Connected')")  # not asked again in this tab
    assert page.locator("#token-form").is_hidden()
    context.close()


def test_markup_from_the_agent_is_shown_as_text_never_run(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    send(page, hostile)
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == f"echo: {hostile}"
    page.reload()  # the title (the first prompt) in the thread list is text too
    page.wait_for_selector("#thread-list button[aria-current='true']")
    assert page.locator("#thread-list button[aria-current='true']").text_content() == hostile
    assert page.evaluate("document.querySelectorAll('main img, main script, nav img').length") == 0
    assert page.evaluate("window.pwned === undefined")


def test_a_question_open_at_a_reload_is_asked_again(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    send(page, "permission")
    page.wait_for_selector(".question")
    page.reload()
    page.wait_for_selector(".question")
    assert page.locator(".question pre.command").text_content() == LONG_COMMAND
    assert page.locator("#send").is_disabled()  # the question comes first
    page.click(".question button:has-text('Deny')")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "permission=reject"


def test_stop_ends_every_open_card_and_the_summary_at_once(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    send(page, "slow")
    page.wait_for_selector(".card .state:has-text('/100')")
    page.wait_for_selector("#summary:not([hidden])")
    gone = "the client is gone; cancelling its turn"
    cancelled_before = server.log.text().count(gone)
    page.click("#stop")
    # at once, not after a reload: the card says Cancelled, its bar stops, the summary is gone
    assert page.locator(".card.tool .state").last.text_content() == "Cancelled"
    assert page.locator("#summary").is_hidden()
    # nothing that still arrives brings them back: the endpoint has seen the page go and cancelled
    # the turn (nothing more of this run is sent), and the page had three progress ticks' time
    deadline = time.monotonic() + 15
    while server.log.text().count(gone) == cancelled_before:
        assert time.monotonic() < deadline, server.log.text()
        page.wait_for_timeout(20)
    page.wait_for_timeout(300)
    assert page.locator(".card.tool .state").last.text_content() == "Cancelled"
    assert page.locator("#summary").is_hidden()
    assert page.problems == []


def test_the_plan_belongs_to_its_run(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    send(page, "everything 10")
    idle(page)
    assert page.locator("#plan-list li").count() == 3
    send(page, "hello")
    idle(page)
    assert page.locator("#plan").is_hidden() and page.locator("#plan-list li").count() == 0


def test_the_header_counts_the_conversation_of_the_first_run(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    page.click("#new-thread")
    before = len(httpx.get(server.url + "/threads").json()["threads"])
    send(page, "slow")
    page.wait_for_selector(".card .state:has-text('/100')")
    expected = f"Connected · {before + 1} conversation{'' if before + 1 == 1 else 's'}"
    page.wait_for_selector(f"#connection:has-text('{expected}')", timeout=5000)
    page.click("#stop")
    idle(page)


def test_cards_show_watch_s_title_and_emoji_and_readable_arguments(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    send(page, "everything 10")
    idle(page)
    first = page.locator(".card.tool").first
    assert first.locator(".name").text_content() == f"{card_emoji('other', 'count')} Counting items"
    assert first.locator("dl.args-list dt").all_text_contents() == ["n"]
    assert first.locator("dl.args-list dd").all_text_contents() == ["5"]
    assert "{" not in (first.locator(".args").text_content() or "")  # no raw JSON


def test_the_answer_s_markdown_is_rendered_and_its_html_is_text(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    prompt = (
        "**bold** and `<b>code</b>` and [ok](https://example.com/a) and [bad](javascript:alert(1)) "
        '<img src=x onerror="window.pwned=1"><b>raw</b>'
    )
    send(page, prompt)
    idle(page)
    answer = page.locator(".msg.assistant").last
    assert answer.locator("strong").text_content() == "bold"
    assert answer.locator("code").text_content() == "<b>code</b>"
    links = answer.locator("a")
    assert links.count() == 1 and links.get_attribute("href") == "https://example.com/a"
    assert links.get_attribute("rel") == "noopener noreferrer nofollow"
    assert "[bad](javascript:alert(1))" in (answer.text_content() or "")
    assert answer.locator("b, img, script").count() == 0 and "<b>raw</b>" in (answer.text_content() or "")
    assert page.evaluate("window.pwned === undefined")
    assert page.problems == []


def test_a_disguised_command_shows_whole_and_visible_on_the_page(page: Any, server: PageEndpoint) -> None:
    page.goto(server.url + "/")
    page.click("#new-thread")
    send(page, "disguised")
    page.wait_for_selector(".question")
    assert page.locator(".question pre.command").text_content() == SHOWN_COMMAND
    card = page.locator(".card.tool").last.text_content() or ""
    assert "<U+202E>" in card and "\u202e" not in card and "\u200b" not in card
    assert "\u202e" not in (page.locator("main").text_content() or "")
    page.click(".question button:has-text('Deny')")
    idle(page)


def test_the_printed_url_opens_the_page_with_its_token_and_a_wrong_one_is_said(
    browser: Any, tokened: tuple[AguiProcess, str, Path]
) -> None:
    process, url, _state = tokened
    context = browser.new_context()
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("#connection:has-text('Connected')")
    assert "#" not in page.url and page.locator("#token-form").is_hidden()  # taken out of the address
    send(page, "hi")
    idle(page)
    assert page.locator(".msg.assistant").last.text_content() == "echo: hi"
    context.close()
    context = browser.new_context()
    page = context.new_page()
    page.goto(process.url + "/#token=not-the-token-0123456789")
    page.wait_for_selector("#connection:has-text('The token was not accepted')")
    assert page.locator("#token-form").is_visible()
    context.close()


# ---------------------------------------------------------------- a tool's question on the page


@pytest.fixture(scope="module")
def questions_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """For a tool's question on the page: ``acp-progress agui --redact none --summary off
    --mcp-config …`` with a real MCP server (``tests/mcp_servers/tasks.py``, one process over
    streamable HTTP for every test's session) whose ``orders`` tool asks a form of every kind, its
    first field's title hostile; and this project's agent, served in
    this process (what the page shows and sends is the point, not their processes; the
    browser and the MCP server are processes of their own)."""
    workspace = tmp_path_factory.mktemp("agui-page-questions")
    with http_tasks_server() as url, pytest.MonkeyPatch.context() as patched:
        servers = frontend_servers(str(mcp_config(workspace, url)))
        use_in_process_agui_agents(patched)
        with endpoint_in_process(
            workspace, env={"ACP_PROGRESS_SUMMARY_INTERVAL": "0"}, policy="none", mcp_servers=servers
        ) as served:
            yield served


def ask(page: Any, prompt: str) -> Any:
    """Send ``prompt``, allow the tool, and return the form the tool's question shows."""
    send(page, prompt)
    page.wait_for_selector("article.question button.option.allow:not([disabled])", timeout=60_000).click()
    return page.wait_for_selector("form.tool-question", timeout=60_000)


def test_the_person_fills_the_form_and_the_tool_gets_the_answer(
    page: Any, questions_server: Served, tmp_path: Path
) -> None:
    page.goto(questions_server.url + "/")
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
    page: Any, questions_server: Served
) -> None:
    page.goto(questions_server.url + "/")
    page.wait_for_selector("#connection:has-text('Connected')")
    form = ask(page, "call orders {}")
    form.query_selector("button:has-text('Send')").click()  # nothing filled: the browser refuses
    assert form.query_selector("button:has-text('Send'):not([disabled])") is not None
    form.query_selector("button:has-text('Decline')").click()
    page.wait_for_selector("#log :text('the person chose decline')", timeout=60_000)
    idle(page, 60_000)
    assert page.problems == []


def test_a_page_reloaded_while_asked_shows_the_form_again_and_its_answer_goes_through(
    page: Any, questions_server: Served
) -> None:
    page.goto(questions_server.url + "/")
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
