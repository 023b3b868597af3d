"""A foreign agent that sends thousands of notifications the ACP schema refuses: each kind is one
line with a count on the person's terminal, never a traceback per notification (the SDK logs one
of twenty lines for each: 2,000 of them were 40,000 lines), and the turn's answer still arrives.

The counting itself with a fake clock; then a real misbehaving agent process (the scripted test
agent's ``invalid`` mode) driven by ``watch`` and ``chat``. What is checked is what the front-end
prints, so the command line runs in this process (:func:`tests.helpers.cli_inside.run_cli_inside`,
the production code from ``main`` on); the foreign agent it drives is spawned as given."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from acp_adapter.client.agent_notifications import MAX_KINDS, NotificationCheck
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.cli_inside import run_cli_inside

AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'scripted_agent.py'} invalid 2000"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _update(update: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}


VALID = _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
MISSING = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}


def test_valid_messages_pass_and_invalid_notifications_are_counted_by_kind(caplog) -> None:
    clock = Clock()
    check = NotificationCheck(clock, every=30)
    caplog.set_level("WARNING", logger="acp_progress.client")
    assert check.admit(VALID)
    assert check.admit({"jsonrpc": "2.0", "id": 1, "method": "session/request_permission", "params": {}})
    assert check.admit({"jsonrpc": "2.0", "id": 1, "result": None})  # answers are the SDK's to match
    assert check.admit({"jsonrpc": "2.0", "method": "_vendor/hello", "params": {}})  # an extension
    for _ in range(500):
        assert not check.admit(MISSING)
        assert not check.admit({"jsonrpc": "2.0", "method": "nonsense/x", "params": {}})
        assert not check.admit(_update({"sessionUpdate": "tool_call", "toolCallId": 7, "title": "t"}))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines  # the first of each kind, saying what is wrong
    assert "invalid session/update (update: Field required)" in lines[0]
    assert "unknown notification (no client handles nonsense/x)" in lines[1]
    assert "update.tool_call.toolCallId: Input should be a valid string" in lines[2]
    clock.now = 31  # the next one of a kind, after the interval: one line sums up the ones between
    assert not check.admit(MISSING)
    assert (
        caplog.records[-1].getMessage().startswith("ignored 500 more invalid session/update from the agent")
    )
    check.flush()  # closing: the other two kinds' counts
    assert [r.getMessage().split(" from")[0] for r in caplog.records[4:]] == [
        "ignored 499 more unknown notification",
        "ignored 499 more invalid session/update",
    ]
    assert check.dropped == 1501
    check.flush()
    assert len(caplog.records) == 6  # nothing new to say


def test_a_sender_that_varies_its_mistakes_shares_one_count_past_the_limit(caplog) -> None:
    check = NotificationCheck(Clock())
    caplog.set_level("WARNING", logger="acp_progress.client")
    for i in range(MAX_KINDS * 10):
        assert not check.admit(
            _update({"sessionUpdate": "tool_call", "toolCallId": "t", f"f{i}": 1, "title": i})
        )
        assert not check.admit({"jsonrpc": "2.0", "method": f"m{i}", "params": {}})
        assert not check.admit({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": i}})
    assert len(caplog.records) <= MAX_KINDS + 1


def _lines_about_the_agent(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "from the agent" in line or "the agent's" in line]


def _assert_summed_up(stderr: str) -> None:
    assert "Traceback" not in stderr and "ValidationError" not in stderr, stderr[:3000]
    assert len(stderr.splitlines()) <= 12, stderr[:3000]
    lines = _lines_about_the_agent(stderr)
    firsts = sum(1 for line in lines if "ignored the agent's" in line)
    more = sum(int(m.group(1).replace(",", "")) for m in re.finditer(r"ignored ([\d,]+) more", stderr))
    assert firsts == 4 and firsts + more == 2000, stderr


@pytest.mark.e2e
def test_watch_sums_up_a_foreign_agents_2000_invalid_updates(tmp_path: Path) -> None:
    done = run_cli_inside(
        ["watch", "--agent", AGENT, "hi"],
        env={**agent_env(), "ACP_PROGRESS_STATE_DIR": str(tmp_path / "state")},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "after the invalid updates" in done.stdout  # the answer still arrives
    _assert_summed_up(done.stderr)


@pytest.mark.e2e
@pytest.mark.parametrize("front_end", ["chat", "watch-json"])
def test_chat_and_json_sum_up_too(tmp_path: Path, front_end: str) -> None:
    args = ["chat", "--agent", AGENT] if front_end == "chat" else ["watch", "--json", "--agent", AGENT, "hi"]
    done = run_cli_inside(
        args,
        stdin="hi\n" if front_end == "chat" else "",
        env={**agent_env(), "ACP_PROGRESS_STATE_DIR": str(tmp_path / "state")},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "after the invalid updates" in done.stdout
    _assert_summed_up(done.stderr)
