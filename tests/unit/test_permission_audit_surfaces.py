"""The permission audit says who answered and where, for every front-end: ``watch --yes``
is an automatic answer on the watch surface, a person at a console bridge is ``console:<login>``
on the console surface. Real processes, one state directory, for those surfaces; what the agent
decides and audits whoever asks (a withdrawn question, the whole command, the cap on questions)
runs with the agent in this process."""

from __future__ import annotations

import contextlib
import getpass
import io
import json
import os
import signal
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest

from acp_adapter.cli import main
from tests.helpers.acp_agent import ROOT, RecordingClient, agent_env, fast_settings, final_status, prompt_text
from tests.helpers.console_bridge_process import Bridge
from tests.helpers.shared_agent import progress_agent, served_inprocess
from tests.helpers.shared_servers import cli_in_process

pytestmark = pytest.mark.e2e  # the bridge and the commands the agent runs are processes


def _audit(state: Path) -> list[dict[str, object]]:
    """``acp-progress audit --json`` on ``state``, run by ``main`` in this process: what was
    recorded is the point here, not the command's process (its output is tested with the store)."""
    out = io.StringIO()
    env = {**agent_env(), "ACP_PROGRESS_STATE_DIR": str(state)}
    with mock.patch.dict(os.environ, env), cli_in_process() as run, contextlib.redirect_stdout(out):
        code = run(["audit", "--json", "--limit", "1000"])
    assert code == 0
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _watch_yes(tmp_path: Path, prompt: str) -> Path:
    """``watch --yes PROMPT`` in ``tmp_path`` with its own state directory (returned), run in this
    process with its agent inside (:func:`run_cli_inside`): what it audits is the point, not its
    process."""
    from tests.helpers.cli_inside import run_cli_inside

    state = tmp_path / "state"
    # its model thinks 0.02 s (what is audited is the point, not the thinking time)
    env = {**agent_env(ACP_PROGRESS_EMBEDDED_DELAY="0.02"), "ACP_PROGRESS_STATE_DIR": str(state)}
    done = run_cli_inside(["watch", "--yes", "--cwd", str(tmp_path), prompt], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return state


def test_watch_yes_is_audited_as_automatic_on_the_watch_surface(tmp_path: Path) -> None:
    state = _watch_yes(tmp_path, "run `echo audited`")
    (row,) = _audit(state)
    assert (row["allowed"], row["decidedBy"], row["surface"]) == (True, "auto", "watch")
    assert "echo audited" in str(row["title"])


def test_a_console_bridge_approval_names_the_person_and_the_surface(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACP_PROGRESS_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ACP_PROGRESS_STATE_DIR", str(tmp_path / "state"))
    assert main(["bridge", "create", "con", "--platform", "console", "--cwd", str(ROOT)]) == 0
    bridge = Bridge(tmp_path)
    bridge.say("run `echo approved-here`")
    bridge.wait_for("[permission] Allow")
    bridge.say("y")
    bridge.wait_for("approved-here")
    bridge.say("run `echo refused-here`")
    bridge.wait_for("[permission] Allow Running echo refused-here")
    bridge.say("n")
    bridge.wait_for("[permission] denied")
    bridge.stop(signal.SIGTERM)
    rows = _audit(tmp_path / "state")
    assert [(r["allowed"], r["decidedBy"], r["surface"]) for r in rows] == [
        (False, f"console:{getpass.getuser()}", "console"),
        (True, f"console:{getpass.getuser()}", "console"),
    ]


class _NeverAnswers(RecordingClient):
    """A client that leaves the question open (a person who walked away) until the turn is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        self.permission_requests.append(tool_call)
        self.asked.set()
        await anyio.sleep_forever()


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["client answers cancelled", "turn cancelled while asking"])
async def test_a_withdrawn_question_is_cancelled_on_the_card_and_in_the_audit(
    tmp_path: Path, how: str
) -> None:
    """A question ended by Ctrl-C does not read "Permission denied by the user" and leaves an
    audit row."""
    state = tmp_path / "state"
    client = RecordingClient(permission="cancel") if how.startswith("client") else _NeverAnswers()
    agent = progress_agent(fast_settings(state_dir=str(state), embedded_delay=0.05))
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        if how.startswith("client"):
            response = await prompt_text(conn, sid, "run `echo withdrawn`")
        else:
            async with anyio.create_task_group() as tg:
                result: list[Any] = []

                async def turn() -> None:
                    result.append(await prompt_text(conn, sid, "run `echo withdrawn`"))

                tg.start_soon(turn)
                assert isinstance(client, _NeverAnswers)
                with anyio.fail_after(30):
                    await client.asked.wait()
                await conn.cancel(session_id=sid)
            response = result[0]
            assert response.stop_reason == "cancelled"
        cards = [c for c in client.cards(sid).values() if c[0].kind != "think"]
        assert final_status(cards[-1]) == "failed", cards[-1]
        text = " ".join(
            getattr(getattr(block, "content", None), "text", "") for block in cards[-1][-1].content or []
        )
        assert "Cancelled" in text and "denied" not in text
    (row,) = _audit(state)
    assert (row["allowed"], row["outcome"], row["decidedBy"]) == (False, "cancelled", "cancelled")
    assert "echo withdrawn" in str(row["title"])


@pytest.mark.anyio
async def test_the_audit_keeps_the_whole_command_not_the_cut_title(tmp_path: Path) -> None:
    """The audit keeps the whole command, not the card title cut at ~160 characters: otherwise a
    hidden tail could be approved and nobody could tell afterwards."""
    command = "echo " + "x" * 250 + "; echo hidden-tail-marker"
    state = tmp_path / "state"
    client = RecordingClient(permission="allow")
    agent = progress_agent(fast_settings(state_dir=str(state), embedded_delay=0.02))
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        assert (await prompt_text(conn, sid, f"run `{command}`")).stop_reason == "end_turn"
    (title,) = [c[0].title for c in client.cards(sid).values() if c[0].kind != "think"]
    assert command not in title, "the card's title is cut: the audit must not keep only it"
    (row,) = _audit(state)
    assert command in str(row["title"]) and row["title"].startswith("Running echo")


@pytest.mark.anyio
async def test_one_turn_asks_at_most_100_questions_and_writes_at_most_100_audit_rows(tmp_path: Path) -> None:
    """One model answer with 3,000 run_command calls must not ask 3,000 times and write 3,000 audit
    rows (7.6 s): the 101st call on is refused without asking, its card says why."""
    from acp_adapter.agent.tool_cards import MAX_QUESTIONS_PER_TURN, TOO_MANY_QUESTIONS

    state = tmp_path / "state"
    client = RecordingClient(permission="allow")
    prompt = " then ".join(["run `true`"] * (MAX_QUESTIONS_PER_TURN + 5))
    agent = progress_agent(fast_settings(state_dir=str(state), embedded_delay=0.01))
    async with served_inprocess(client, agent) as conn:
        sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
        with anyio.fail_after(120):
            await prompt_text(conn, sid, prompt)
        cards = [c for c in client.cards(sid).values() if c[0].kind != "think"]
    assert len(client.permission_requests) == MAX_QUESTIONS_PER_TURN
    refused = [c for c in cards if final_status(c) == "failed"]
    assert len(refused) == 5 and all(TOO_MANY_QUESTIONS in str(c[-1].content) for c in refused)
    assert len(_audit(state)) == MAX_QUESTIONS_PER_TURN
