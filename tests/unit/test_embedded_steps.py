"""The embedded offline model runs every step a prompt asks for, in order: "please search the
whole workspace for TODO markers and afterwards wait 4 seconds" runs the search, then the wait —
not only the wait."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_adapter.models.embedded_calls import _steps, plan_tool_calls

TOOLS = {"search", "wait", "run_command", "read_file", "list_dir"}


def planned(prompt: str) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, dict(c.arguments)) for c in plan_tool_calls(prompt, TOOLS)]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (
            "please search the whole workspace for TODO markers and afterwards wait 4 seconds",
            [("search", {"query": "TODO"}), ("wait", {"seconds": 4.0, "label": "long task"})],
        ),
        (
            "read notes.py, then search for TODO, then wait 1 second",
            [
                ("read_file", {"path": "notes.py"}),
                ("search", {"query": "TODO"}),
                ("wait", {"seconds": 1.0, "label": "long task"}),
            ],
        ),
        (
            "search for TODO then search for FIXME",
            [("search", {"query": "TODO"}), ("search", {"query": "FIXME"})],
        ),
        (
            "run `echo a; echo b` then list the files",
            [("run_command", {"command": "echo a; echo b"}), ("list_dir", {"path": "."})],
        ),
        ('search for "cats and then dogs"', [("search", {"query": "cats and then dogs"})]),
        ("search for TODO and FIXME", [("search", {"query": "TODO"})]),  # "and" alone is not a new step
        ("wait 10 seconds", [("wait", {"seconds": 10.0, "label": "long task"})]),
    ],
)
def test_every_step_in_order(prompt: str, expected: list[tuple[str, dict[str, object]]]) -> None:
    assert planned(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (
            "search for \u201ccats and then dogs\u201d then wait 1 second",
            ["search for \u201ccats and then dogs\u201d", "wait 1 second"],
        ),
        (
            "search for \u201ccats and then dogs\u201c then wait 1 second",
            ["search for \u201ccats and then dogs\u201c", "wait 1 second"],
        ),
        ('search for "a then b" then wait 2 seconds', ['search for "a then b"', "wait 2 seconds"]),
        ("run `echo a then echo b", ["run `echo a then echo b"]),  # an unclosed quote runs to the end
        (
            "run `" + "x then " * 10_000 + "` then wait 1 second",
            ["run `" + "x then " * 10_000 + "`", "wait 1 second"],
        ),
    ],
)
def test_a_quoted_span_is_one_piece_of_its_step(prompt: str, expected: list[str]) -> None:
    """Separators inside quotes (straight, back or curly, closed by either curly mark) split nothing."""
    assert _steps(prompt) == expected


def test_only_offered_tools_are_planned() -> None:
    assert [c.name for c in plan_tool_calls("search for TODO and then wait 2 seconds", {"wait"})] == ["wait"]


@given(st.text(max_size=300))
def test_steps_never_lose_or_invent_text(prompt: str) -> None:
    """The steps are pieces of the prompt, in order (separators dropped, nothing else)."""
    steps = _steps(prompt)
    at = 0
    for step in steps:
        found = prompt.find(step, at)
        assert found >= 0
        at = found + len(step)
