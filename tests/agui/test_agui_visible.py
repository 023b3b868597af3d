"""No disguised text from the AG-UI endpoint: what it emits neither acts on a terminal nor hides.

A model-proposed ``echo "…" \\u202e; rm -rf data`` must not read as ``… atad fr- mr ;`` anywhere the
endpoint's events are shown (its web page, a terminal running a client library's example):
terminal control sequences are removed from every event, bidirectional controls, zero-width and
tag characters are shown as ``<U+202E>``; a permission question carries the whole command.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.safety.web_text import web_visible, web_visible_value
from tests.agents.agui_everything_agent import EverythingAgent
from tests.helpers.acp_agent import ROOT
from tests.helpers.agui_http import Served
from tests.helpers.agui_inprocess import endpoint_in_process, use_in_process_test_agent
from tests.helpers.agui_process import of_type, sse_events, text_of
from tests.helpers.disguised_command import SHOWN_COMMAND

AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'agui_everything_agent.py'}"
#: What must never come out: bidi controls, zero-width characters, tag characters, separators.
_HIDDEN = {
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x200E,
    0x200F,
    0x061C,
    0x200B,
    *range(0x2060, 0x2065),
    0xFEFF,
    0x180E,
    0x2028,
    0x2029,
    *range(0xE0000, 0xE0080),
}


def _acts_or_hides(char: str) -> bool:
    code = ord(char)
    return (code < 0x20 and char not in "\n\t") or 0x7F <= code < 0xA0 or code in _HIDDEN


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ('echo "x" \u202e; rm -rf data', 'echo "x" <U+202E>; rm -rf data'),
        ("title\x1b]0;owned\x07 here", "title here"),
        ("clip\x1b]52;c;Zm9v\x1b\\board", "clipboard"),
        ("\x1b[2J\x1b[31mred\x1b[0m", "red"),
        ("one-char csi \x9b31m and osc \x9d0;x\x9c done", "one-char csi  and osc  done"),
        ("zero\u200bwidth\u2060joined\ufeff", "zero<U+200B>width<U+2060>joined<U+FEFF>"),
        ("tag\U000e0041\U000e007f", "tag<U+E0041><U+E007F>"),
        ("isolate \u2066x\u2069 mark \u200f", "isolate <U+2066>x<U+2069> mark <U+200F>"),
        ("lines\r\nand\ttabs\nstay", "lines\nand\ttabs\nstay"),
        ("שלום 👨\u200d👩\u200d👧 kept", "שלום 👨\u200d👩\u200d👧 kept"),
    ],
)
def test_sequences_are_removed_and_hidden_characters_shown(raw: str, shown: str) -> None:
    assert web_visible(raw) == shown


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_nothing_that_acts_or_hides_gets_through_and_cleaning_twice_changes_nothing(text: str) -> None:
    once = web_visible(text)
    assert not [c for c in once if _acts_or_hides(c)], ascii(once)
    assert web_visible(once) == once


def test_every_string_of_a_value_is_cleaned_keys_too() -> None:
    value = {"k\u202e": ["\x1b[31mx", {"n": 1, "s": "\u200b"}], "b": True}
    assert web_visible_value(value) == {"k<U+202E>": ["x", {"n": 1, "s": "<U+200B>"}], "b": True}


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``acp-progress agui --agent AGENT --summary off`` served in this process, its agent too
    (what it emits is the point, not their processes)."""
    with pytest.MonkeyPatch.context() as patched:
        use_in_process_test_agent(patched, AGENT, EverythingAgent)
        with endpoint_in_process(tmp_path_factory.mktemp("agui-visible"), agent_command=AGENT) as served:
            yield served


def _stream(endpoint: Served, body: dict[str, Any]) -> str:
    with httpx.stream("POST", endpoint.url + "/", json=body, timeout=30) as response:
        assert response.status_code == 200, response.read()
        return "".join(response.iter_text())


def _clean_wire(raw: str) -> None:
    """Neither raw nor JSON-escaped: a client that parses and prints the events prints no control."""
    for decoded in [raw, *(json.dumps(e) for e in sse_events(iter(raw.splitlines())))]:
        for hidden in ("\x1b", "\\u001b", "\u202e", "\\u202e", "\u200b", "\\u200b", "\x07", "\\u0007"):
            assert hidden not in decoded, (hidden, decoded[:400])
        assert "\U000e0041" not in decoded and "\\udb40\\udc41" not in decoded


def test_a_disguised_command_is_shown_whole_and_visible_in_the_question(endpoint: Served) -> None:
    body = {
        "threadId": "disguised-q",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "disguised"}],
        "forwardedProps": {"permissionInterrupts": True},
    }
    raw = _stream(endpoint, body)
    _clean_wire(raw)
    events = list(sse_events(iter(raw.splitlines())))
    [finished] = of_type(events, "RUN_FINISHED")
    [interrupt] = finished["outcome"]["interrupts"]
    info = interrupt["metadata"]["acpProgress"]
    assert info["command"] == SHOWN_COMMAND  # whole (past 160 characters) and with the override shown
    assert len(SHOWN_COMMAND) > 200 and SHOWN_COMMAND.endswith("; rm -rf data <U+200B><U+E0041>")
    [args] = of_type(events, "TOOL_CALL_ARGS")
    assert json.loads(args["delta"]) == {"command": SHOWN_COMMAND}
    listing = httpx.get(endpoint.url + "/threads").text  # a reloaded page asks again from here
    assert "\\u202e" not in listing and "<U+202E>" in listing
    resume = {
        "threadId": "disguised-q",
        "runId": "r2",
        "messages": [],
        "resume": [{"interruptId": interrupt["id"], "status": "cancelled"}],
    }
    _clean_wire(_stream(endpoint, resume))


def test_answers_and_cards_carry_no_terminal_escape(endpoint: Served) -> None:
    body = {
        "threadId": "disguised-a",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "disguised"}],
    }
    raw = _stream(endpoint, body)  # the static policy (deny) answers; the answer repeats the command
    _clean_wire(raw)
    events = list(sse_events(iter(raw.splitlines())))
    assert text_of(events) == f"permission=reject {SHOWN_COMMAND}"
    prompt = "hi \x1b]0;owned\x07\x1b[2J\u202ethere"
    echoed = _stream(
        endpoint,
        {"threadId": "echo", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": prompt}]},
    )
    _clean_wire(echoed)
    assert text_of(list(sse_events(iter(echoed.splitlines())))) == "echo: hi <U+202E>there"
