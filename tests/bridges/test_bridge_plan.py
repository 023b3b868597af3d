"""The bridges show an agent's plan, its diffs and — only when asked — its thoughts: the plan is one
message edited in place as entries change (accumulate) or a new message per change (separate); an
edit is ``✅ Edit notes.py — +2 −3 notes.py``; ``--delivery-thoughts`` (kept in the instance file)
posts the thoughts. ``bridge run`` of the console platform, and the Telegram platform against the
strict fake Bot API, against the scripted agent that sends every kind of update: all in this
process (what they post is the point, not their processes; the bridge drives the scripted agent
over the SDK's in-memory transports, as it would over its pipe)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from acp.helpers import plan_entry, text_block, update_agent_thought, update_plan

from acp_adapter.cli import main
from acp_adapter.frontends.bridges.config import ProgressConfig
from acp_adapter.frontends.bridges.events import PlanUpdate, ThoughtText
from acp_adapter.frontends.bridges.projection import TurnProjection
from acp_adapter.frontends.bridges.runner import BridgeRunner
from tests.agents.everything_agent import EverythingAgent
from tests.helpers.acp_agent import ROOT, agent_env
from tests.helpers.console_bridge import run_console_bridge
from tests.helpers.shared_servers import drive_own_agent_in_process

RUN_CLI = "import sys; from acp_adapter.cli import main; sys.exit(main(sys.argv[1:]))"
AGENT = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'everything_agent.py'} --pause 0.02"
#: the bridge instance's agent command, as ``bridge create --agent AGENT`` keeps it
AGENT_ARGV = tuple(AGENT.split())


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path))
    # a bridge whose agent is AGENT drives it in this process, as AGENT would run it
    drive_own_agent_in_process(
        monkeypatch,
        BridgeRunner,
        lambda runner: runner.instance.agent == AGENT_ARGV,
        make_agent=lambda: EverythingAgent(modes_only=False, pause=0.02),
    )
    return tmp_path


def _run(name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """``bridge run NAME`` in this process, the scripted agent too."""
    env = {**agent_env(), "ACP_PROGRESS_SUMMARY": "off"}
    done = run_console_bridge(name, "fix it\n", monkeypatch, capsys, env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _plan_messages(out: str) -> list[tuple[str, str]]:
    """(message id, verb) of every post or edit whose text is the plan."""
    return re.findall(r"^\[#(\d+)( edited)?\] plan \d/3$", out, flags=re.MULTILINE)


def test_the_plan_is_one_message_edited_in_place_and_thoughts_stay_out(
    cfg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        main(
            ["bridge", "create", "b", "--platform", "console", "--agent", AGENT, "--delivery-progress", "all"]
        )
        == 0
    )
    out = _run("b", monkeypatch, capsys)
    plans = _plan_messages(out)
    assert plans[0][1] == "" and len({mid for mid, _ in plans}) == 1, out  # posted once…
    assert len(plans) >= 2 and all(verb == " edited" for _, verb in plans[1:])  # …then edited
    final = out[out.rindex("plan 3/3") :]
    assert "✓ Read notes.py · high\n     ✓ Fix the greeting · medium\n     ✓ Run the tests · low" in final
    assert "✅ Edit notes.py — +2 −3 notes.py" in out  # the diff as a short line
    assert "💭" not in out and "typo." not in out.split("Fixed the typo")[0], out  # no thought posted


def test_delivery_thoughts_and_separate_grouping(
    cfg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["bridge", "create", "s", "--platform", "console", "--agent", AGENT]) == 0
    changes = [
        "--delivery-progress",
        "all",
        "--delivery-progress-grouping",
        "separate",
        "--delivery-thoughts",
    ]
    assert main(["bridge", "update", "s", *changes]) == 0
    capsys.readouterr()
    assert main(["bridge", "show", "s"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["effective_progress"]["thoughts"] is True  # kept in the instance file
    assert json.loads((cfg / "bridges.json").read_text())["instances"]["s"]["delivery_defaults"]["progress"][
        "thoughts"
    ]
    out = _run("s", monkeypatch, capsys)
    assert "💭 Reading notes.py first. The greeting has a typo. I will fix it, then run the tests." in out
    plans = _plan_messages(out)
    assert len(plans) >= 3 and len({mid for mid, _ in plans}) == len(plans), out  # a message per change
    assert all(verb == "" for _, verb in plans)
    assert "[#" in out and "✅ Edit notes.py — +2 −3 notes.py" in out


def test_an_unchanged_plan_makes_no_edit_and_a_thought_needs_the_option() -> None:
    projection = TurnProjection(ProgressConfig(tool_progress="all"))
    entries = [plan_entry("Read", priority="high", status="pending")]
    assert projection.project(update_plan(entries), 0.0) == [PlanUpdate(("plan 0/1", "○ Read · high"))]
    assert projection.project(update_plan(entries), 0.1) == []
    assert projection.project(update_agent_thought(text_block("hmm")), 0.2) == []
    assert projection.finish() == []
    asked = TurnProjection(ProgressConfig(tool_progress="all", thoughts=True))
    asked.project(update_agent_thought(text_block("hmm\nsk-live-1234567890abcdefghijklmnop")), 0.0)
    [thought] = asked.finish()
    assert isinstance(thought, ThoughtText) and thought.text.startswith("hmm ")
    assert "1234567890abcdefghij" not in thought.text  # redacted like every line a chat gets


@pytest.mark.anyio
async def test_telegram_edits_the_plan_message_in_place(cfg: Path) -> None:
    """The same through the Telegram platform, against the strict fake Bot API."""
    pytest.importorskip("telegram")
    from acp_adapter.frontends.bridges.config import BridgeStore
    from acp_adapter.frontends.bridges.delivery import COALESCE_WINDOW
    from tests.helpers.fake_telegram import FakeTelegram, telegram_bridge, until
    from tests.helpers.telegram_chat import CHAT, TOKEN

    fake = FakeTelegram(TOKEN).start()
    args = ["bridge", "create", "tg", "--platform", "telegram", "--chat-id", str(CHAT), "--agent", AGENT]
    assert main([*args, "--delivery-progress", "all"]) == 0
    try:
        # what ``bridge run tg`` runs: the stored instance, the default edit window
        async with telegram_bridge(fake, BridgeStore().get("tg"), token=TOKEN, window=COALESCE_WINDOW):
            fake.user_says(CHAT, "fix it")
            await until(lambda: any("3 tests pass" in t for t in fake.chat_view(CHAT)), what="the answer")
    finally:
        fake.stop()
    plans = [m for m in fake.bot_messages(CHAT) if m.text.startswith("plan ")]
    assert len(plans) == 1, fake.chat_view(CHAT)  # one message…
    assert plans[0].text.splitlines() == [
        "plan 3/3",
        "✓ Read notes.py · high",
        "✓ Fix the greeting · medium",
        "✓ Run the tests · low",
    ]
    edits = [
        c for c in fake.calls_of("editMessageText") if int(c.params["message_id"]) == plans[0].message_id
    ]
    assert edits, "the plan message was never edited"  # …edited in place as its entries changed
    view = fake.chat_view(CHAT)
    assert any("✅ Edit notes.py — +2 −3 notes.py" in t for t in view), view
    assert not any("💭" in t for t in view)


def test_an_edit_in_the_workspace_is_named_relative_to_it() -> None:
    from acp_adapter.frontends._updates import Diff

    diff = Diff("/work/space/src/a.py", "one\ntwo\n", "one\nTWO\nthree\n")
    assert diff.short("/work/space") == "+2 −1 src/a.py"
    assert diff.short("/elsewhere") == "+2 −1 /work/space/src/a.py"
    assert diff.unified().splitlines()[:2] == ["--- /work/space/src/a.py", "+++ /work/space/src/a.py"]
    assert Diff("a.py", "", "x\n").unified().splitlines()[:2] == ["--- a/a.py", "+++ b/a.py"]
